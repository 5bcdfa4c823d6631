// torch.save archives (see torch_save.hpp).
//
// [SECTION] Recognizing the archive: its prefix, TorchScript, byte order
// [SECTION] Naming: the pickled object flattened into dotted names, a module as its state_dict
// [SECTION] Geometry: a tensor's elements must lie inside its storage
// [SECTION] The reader: one storage range per tensor, gathered when strided
// [SECTION] The legacy format: pickles one after another, then the storages
#include "torch_save.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <unordered_set>

#include "config.hpp"
#include "memory_budget.hpp"
#include "pickle.hpp"

namespace attnscope {

namespace {

using Kind = PickleValue::Kind;

// ============================================================================================
// [SECTION] Recognizing the archive
// ============================================================================================
// torch.save names the folder inside the zip after the file ("acts/data.pkl" for acts.pt;
// "archive/" in newer versions). The prefix is what precedes the one data.pkl at depth 1.
const ZipMember* find_data_pkl(const ZipArchive& archive) {
    for (const ZipMember& m : archive.members()) {
        const std::size_t slash = m.name.find('/');
        if (m.name == "data.pkl" || (slash != std::string::npos && m.name.compare(slash, std::string::npos, "/data.pkl") == 0))
            return &m;
    }
    return nullptr;
}

std::string prefix_of(const ZipMember& data_pkl) { return data_pkl.name.substr(0, data_pkl.name.size() - 8); }

bool is_torchscript(const ZipArchive& archive, const std::string& prefix) {
    for (const ZipMember& m : archive.members())
        if (m.name == prefix + "constants.pkl" || m.name.compare(0, prefix.size() + 5, prefix + "code/") == 0)
            return true;
    return false;
}

// The pickle's values may be far larger than its bytes (a one-byte opcode makes a value of about
// 200 bytes); the pickle is refused beyond what the memory budget allows for that.
std::uint64_t max_pickle_bytes() { return std::min<std::uint64_t>(256ull << 20, memory_budget() / 256); }

// ============================================================================================
// [SECTION] Naming
// ============================================================================================
struct Listed {
    std::string name;
    const PickleValue* value = nullptr;
    bool attribute = false;  // a module's int, float, bool or str attribute: metadata, not listed
};

std::string number_text(double x) {
    std::ostringstream out;
    out << x;
    return out.str();
}

// A dict key as a name part: strings as they are, numbers and bools in Python's spelling.
std::string key_text(const PickleValue* key, std::size_t position) {
    switch (key->kind) {
        case Kind::String: return key->text;
        case Kind::Int: return std::to_string(key->integer);
        case Kind::Bool: return key->flag ? "True" : "False";
        case Kind::Float: return number_text(key->number);
        case Kind::None: return "None";
        default: return "<key " + std::to_string(position) + ">";
    }
}

// "an int (3)", "a str ('adamw')", "a list" ...
Message value_message(const PickleValue* v) {
    const Message kind = kind_message(v->kind);
    auto of_kind = [&](std::string value) { return Message(Msg::pickle_value_of_kind, {{"value", std::move(value)}}).with("kind", kind); };
    switch (v->kind) {
        case Kind::Bool: return of_kind(v->flag ? "True" : "False");
        case Kind::Int: return of_kind(std::to_string(v->integer));
        case Kind::Float: return of_kind(number_text(v->number));
        case Kind::String: {
            std::string shown;
            for (char c : v->text.substr(0, 40)) shown += (c >= 0x20 && c < 0x7f) ? c : '?';
            return of_kind("'" + shown + (v->text.size() > 40 ? "...'" : "'"));
        }
        case Kind::Bytes: return Message(Msg::pickle_value_bytes, {{"count", std::to_string(v->text.size())}}).with("kind", kind);
        case Kind::Global: return Message(Msg::pickle_value_name, {{"name", v->text}});
        case Kind::Object: return Message(Msg::pickle_value_object, {{"name", v->text}});
        case Kind::Other: return v->described;
        default: return kind;
    }
}

// The Python type a non-tensor value is listed under, in the dtype column.
std::string python_type(const PickleValue* v) {
    switch (v->kind) {
        case Kind::None: return "None";
        case Kind::Bool: return "bool";
        case Kind::Int: return "int";
        case Kind::Float: return "float";
        case Kind::String: return "str";
        case Kind::Bytes: return "bytes";
        case Kind::Global: return "dtype";
        case Kind::Storage: return "storage";
        case Kind::Object: return v->text;
        default: return "object";
    }
}

// An int, float, bool or str as metadata holds it (4, 0.1, true, vit_b_16); nullopt for the rest.
std::optional<std::string> scalar_text(const PickleValue* v) {
    switch (v->kind) {
        case Kind::Bool: return std::string(v->flag ? "true" : "false");
        case Kind::Int: return std::to_string(v->integer);
        case Kind::Float: return number_text(v->number);
        case Kind::String: return v->text;
        default: return std::nullopt;
    }
}

const PickleValue* entry(const PickleValue* v, const char* key) {
    for (const auto& [k, value] : v->entries)
        if (k->kind == Kind::String && k->text == key) return value;
    return nullptr;
}

// An nn.Module pickled whole (torch.save(model)): an object with _parameters and _modules dicts.
bool is_module(const PickleValue* v) {
    const PickleValue* parameters = v->kind == Kind::Object ? entry(v, "_parameters") : nullptr;
    const PickleValue* modules = v->kind == Kind::Object ? entry(v, "_modules") : nullptr;
    return parameters && modules && parameters->kind == Kind::Dict && modules->kind == Kind::Dict;
}

// Walks the object: tensors and other leaves get names; empty containers are left out. A module
// gets its state_dict's names (its parameters, its persistent buffers, then its submodules'), its
// scalar attributes (num_heads = 4) become metadata. Sharing (the memo) can make the walk
// exponential and cycles infinite, so it is bounded.
class Flattener {
public:
    explicit Flattener(const std::string& path) : path_(path) {}

    std::vector<Listed> run(const PickleValue* root, const std::string& root_name) {
        const bool container = root->kind == Kind::Dict || root->kind == Kind::List || root->kind == Kind::Tuple ||
                               root->kind == Kind::Set || root->kind == Kind::Object;
        visit(root, container ? "" : root_name);
        return std::move(out_);
    }

private:
    static constexpr std::size_t kMaxDepth = 100;
    static constexpr std::size_t kMaxVisits = 10'000'000;

    void visit(const PickleValue* v, const std::string& name) {
        if (++visits_ > kMaxVisits)
            throw FileError(Message(Msg::torch_cyclic_visits, {{"file", path_}, {"count", std::to_string(kMaxVisits)}}));
        if (std::find(stack_.begin(), stack_.end(), v) != stack_.end()) return;  // a container inside itself
        if (stack_.size() >= kMaxDepth)
            throw FileError(Message(Msg::torch_nested_too_deep, {{"file", path_}, {"name", name}, {"depth", std::to_string(kMaxDepth)}}));
        stack_.push_back(v);
        if (is_module(v)) {
            visit_module(v, name);
        } else if (v->kind == Kind::Dict || v->kind == Kind::List || v->kind == Kind::Tuple || v->kind == Kind::Set ||
                   (v->kind == Kind::Object && (!v->entries.empty() || !v->items.empty()))) {
            for (std::size_t i = 0; i < v->entries.size(); ++i) visit(v->entries[i].second, join(name, key_text(v->entries[i].first, i)));
            for (std::size_t i = 0; i < v->items.size(); ++i) visit(v->items[i], join(name, std::to_string(i)));
        } else {
            out_.push_back({unique(name.empty() ? "value" : name), v});
        }
        stack_.pop_back();
    }

    static std::string join(const std::string& name, const std::string& part) { return name.empty() ? part : name + "." + part; }

    // As module.state_dict() names it: parameters and persistent buffers (None ones left out), then
    // each submodule under its attribute name.
    void visit_module(const PickleValue* module, const std::string& name) {
        std::vector<std::string> non_persistent;
        if (const PickleValue* set = entry(module, "_non_persistent_buffers_set"))
            for (const PickleValue* item : set->items)
                if (item->kind == Kind::String) non_persistent.push_back(item->text);
        auto members = [&](const char* dict, bool buffers) {
            const PickleValue* d = entry(module, dict);
            if (!d || d->kind != Kind::Dict) return;
            for (std::size_t i = 0; i < d->entries.size(); ++i) {
                const auto& [key, value] = d->entries[i];
                const std::string part = key_text(key, i);
                const bool skipped = value->kind == Kind::None ||
                                     (buffers && std::find(non_persistent.begin(), non_persistent.end(), part) != non_persistent.end());
                if (!skipped) visit(value, join(name, part));
            }
        };
        members("_parameters", false);
        members("_buffers", true);
        for (const auto& [key, value] : module->entries) {
            const bool scalar = value->kind == Kind::Int || value->kind == Kind::Float || value->kind == Kind::Bool ||
                                value->kind == Kind::String;
            if (key->kind == Kind::String && scalar && key->text != "training" && key->text.rfind('_', 0) != 0)
                out_.push_back({join(name, key->text), value, true});
        }
        members("_modules", false);
    }

    // A second "a.b" (a dict key "a.b" beside a dict "a" holding "b") becomes "a.b#2".
    std::string unique(const std::string& name) {
        if (names_.insert(name).second) return name;
        for (std::size_t n = 2;; ++n)
            if (names_.insert(name + "#" + std::to_string(n)).second) return name + "#" + std::to_string(n);
    }

    const std::string& path_;
    std::vector<Listed> out_;
    std::vector<const PickleValue*> stack_;
    std::unordered_set<std::string> names_;
    std::size_t visits_ = 0;
};

// ============================================================================================
// [SECTION] Geometry
// ============================================================================================
// Where a storage's bytes are: a record of the zip archive, or a range of a legacy file.
struct StorageBytes {
    const ZipMember* record = nullptr;  // the zip format
    std::uint64_t at = 0;               // the legacy format: the first byte's offset in the file
    std::uint64_t size = 0;             // bytes
};

// One tensor as the reader needs it: where its elements are in which storage.
struct TorchTensor {
    StorageBytes storage;
    std::string dtype;
    std::size_t item_size = 0;
    std::uint64_t offset = 0;  // in elements
    Shape shape;
    std::vector<std::uint64_t> stride;
    std::uint64_t numel = 0;
    std::uint64_t span = 0;    // elements from offset to the last one read, inclusive (0 when empty)
    bool contiguous = true;
    std::string label;         // "x.pt: tensor 'q'"
};

bool mul_overflows(std::uint64_t a, std::uint64_t b, std::uint64_t* out) {
    if (a != 0 && b > std::numeric_limits<std::uint64_t>::max() / a) return true;
    *out = a * b;
    return false;
}
bool add_overflows(std::uint64_t a, std::uint64_t b, std::uint64_t* out) {
    if (a > std::numeric_limits<std::uint64_t>::max() - b) return true;
    *out = a + b;
    return false;
}

// Fills shape, numel, span and contiguity from the pickle's size and stride, and checks that every
// element lies inside the storage (or the legacy storage view), which must have the bytes its
// pickle says.
TorchTensor geometry(const StorageBytes& bytes, const TensorRef& ref, const std::string& label) {
    const StorageRef& s = *ref.storage;
    TorchTensor t;
    t.label = label;
    t.dtype = s.dtype;
    t.item_size = s.item_size;
    t.stride = ref.stride;
    t.storage = bytes;
    std::uint64_t storage_bytes = 0;
    if (mul_overflows(s.numel, s.item_size, &storage_bytes) || bytes.size != storage_bytes)
        throw FileError(Message(Msg::torch_storage_size, {{"file", label}, {"key", s.key}, {"numel", std::to_string(s.numel)},
                                                          {"dtype", s.dtype}, {"bytes", std::to_string(bytes.size)}}));
    std::uint64_t view_end = 0;
    if (s.view && (add_overflows(s.view_offset, s.view_numel, &view_end) || view_end > s.numel))
        throw FileError(Message(Msg::torch_storage_view_past_end,
                                {{"file", label}, {"view_numel", std::to_string(s.view_numel)},
                                 {"view_offset", std::to_string(s.view_offset)}, {"key", s.key}, {"numel", std::to_string(s.numel)}}));
    const std::uint64_t holds = s.view ? s.view_numel : s.numel;  // the elements the tensor may address
    if (add_overflows(ref.offset, s.view ? s.view_offset : 0, &t.offset))
        throw FileError(Message(Msg::torch_offset_too_large, {{"file", label}}));
    if (ref.size.size() > kMaxAxes)
        throw FileError(Message(Msg::torch_too_many_axes,
                                {{"file", label}, {"axes", std::to_string(ref.size.size())}, {"max", std::to_string(kMaxAxes)}}));
    t.numel = 1;
    std::uint64_t last = ref.offset;  // offset + sum((size_i - 1) * stride_i)
    std::uint64_t expected_stride = 1;
    bool overflow = false;
    for (std::size_t i = ref.size.size(); i-- > 0;) {
        const std::uint64_t n = ref.size[i];
        if (n > std::numeric_limits<std::size_t>::max()) overflow = true;
        overflow = overflow || mul_overflows(t.numel, n, &t.numel);
        std::uint64_t reach = 0;
        if (n > 0) overflow = overflow || mul_overflows(n - 1, ref.stride[i], &reach) || add_overflows(last, reach, &last);
        if (n != 1 && ref.stride[i] != expected_stride) t.contiguous = false;
        if (!overflow) overflow = mul_overflows(expected_stride, n, &expected_stride);
    }
    t.shape.assign(ref.size.begin(), ref.size.end());
    if (overflow)
        throw FileError(Message(Msg::torch_strides_overflow, {{"file", label}, {"shape", format_shape(t.shape)}}));
    if (t.numel > 0) {
        if (last >= holds)
            throw FileError(Message(Msg::torch_reaches_past_storage,
                                    {{"file", label}, {"shape", format_shape(t.shape)}, {"offset", std::to_string(ref.offset)},
                                     {"last", std::to_string(last)}, {"key", s.key}, {"numel", std::to_string(holds)}}));
        t.span = last - ref.offset + 1;
    }
    return t;
}

// ============================================================================================
// [SECTION] The reader
// ============================================================================================
bool little_endian_host() {
    const std::uint32_t one = 1;
    std::uint8_t first;
    std::memcpy(&first, &one, 1);
    return first == 1;
}

// The storages' bytes: the zip archive's records, or (legacy) the mapped file.
class TorchSaveReader final : public TensorSource::Reader {
public:
    TorchSaveReader(std::shared_ptr<const ZipArchive> archive, std::map<std::string, TorchTensor> tensors)
        : archive_(std::move(archive)), tensors_(std::move(tensors)) {}
    TorchSaveReader(std::shared_ptr<const MappedFile> file, std::map<std::string, TorchTensor> tensors)
        : file_(std::move(file)), tensors_(std::move(tensors)) {}

    Array load(const TensorInfo& info) const override {
        const TorchTensor& t = tensors_.at(info.name);
        Array out = make_array(t.shape);
        if (t.numel == 0) return out;
        prefault_for_writing(out.data(), out.size() * sizeof(float));
        const std::size_t bytes = static_cast<std::size_t>(t.numel) * t.item_size;
        if (t.contiguous && t.dtype == "F32" && little_endian_host()) {  // the file's bytes are the floats
            read(t, t.offset * t.item_size, bytes, out.data());
            return out;
        }
        std::vector<std::uint8_t> raw(bytes);
        if (t.contiguous)
            read(t, t.offset * t.item_size, bytes, raw.data());
        else
            gather(t, raw.data());
        decode_floats(t.dtype, raw.data(), static_cast<std::size_t>(t.numel), out.data());
        return out;
    }

private:
    // Bytes [at, at + length) of the tensor's storage, inside it (geometry checked that).
    void read(const TorchTensor& t, std::uint64_t at, std::size_t length, void* out) const {
        if (t.storage.record)
            archive_->read_range(*t.storage.record, at, length, out, t.label);
        else
            std::memcpy(out, file_->data() + t.storage.at + at, length);
    }

    // A strided view: read the storage range it spans, then copy its elements out in row-major
    // order, a whole innermost run at a time where that axis has stride 1.
    void gather(const TorchTensor& t, std::uint8_t* out) const {
        std::uint64_t span_bytes = 0;
        if (mul_overflows(t.span, t.item_size, &span_bytes) || span_bytes > memory_budget())
            throw FileError(Message(Msg::torch_strided_over_budget, {{"file", t.label}, {"shape", format_shape(t.shape)},
                                                                     {"size", format_bytes(span_bytes)},
                                                                     {"budget", format_bytes(memory_budget())}}));
        std::vector<std::uint8_t> span(static_cast<std::size_t>(span_bytes));
        read(t, t.offset * t.item_size, span.size(), span.data());
        const std::size_t rank = t.shape.size();
        const std::size_t inner = rank ? t.shape[rank - 1] : 1;
        const std::uint64_t inner_stride = rank ? t.stride[rank - 1] : 1;
        const std::size_t isz = t.item_size;
        std::vector<std::size_t> index(rank ? rank - 1 : 0, 0);
        std::uint64_t base = 0;  // element offset of index[...] with the innermost index 0
        for (std::uint64_t done = 0; done < t.numel; done += inner) {
            if (inner_stride == 1) {
                std::memcpy(out, span.data() + base * isz, inner * isz);
            } else {
                for (std::size_t j = 0; j < inner; ++j) std::memcpy(out + j * isz, span.data() + (base + j * inner_stride) * isz, isz);
            }
            out += inner * isz;
            for (std::size_t axis = index.size(); axis-- > 0;) {  // odometer over the outer axes
                base += t.stride[axis];
                if (++index[axis] < t.shape[axis]) break;
                base -= t.stride[axis] * t.shape[axis];
                index[axis] = 0;
            }
        }
    }

    std::shared_ptr<const ZipArchive> archive_;
    std::shared_ptr<const MappedFile> file_;
    std::map<std::string, TorchTensor> tensors_;
};

// The object's names, listed into *tensors (non-tensors with a problem) and *values (scalars,
// module attributes); the tensors' geometry, with their storages' bytes found by `bytes_of`.
template <typename BytesOf>
std::map<std::string, TorchTensor> list_object(const std::string& path, const Unpickled& object, BytesOf bytes_of,
                                               std::vector<TensorInfo>* tensors, std::map<std::string, std::string>* values) {
    const std::string stem = std::filesystem::path(path).stem().string();
    std::map<std::string, TorchTensor> loadable;
    for (const Listed& item : Flattener(path).run(object.root, stem)) {
        if (item.attribute) {
            if (const std::optional<std::string> text = scalar_text(item.value)) (*values)[item.name] = *text;
            continue;
        }
        TensorInfo info;
        info.name = item.name;
        const std::string label = path + ": tensor '" + item.name + "'";
        if (item.value->kind != Kind::Tensor) {
            info.dtype = python_type(item.value);
            info.problem = Message(Msg::torch_not_a_tensor, {{"file", path}, {"name", item.name}}).with("value", value_message(item.value));
            info.listed_only = true;
            tensors->push_back(std::move(info));
            if (const std::optional<std::string> text = scalar_text(item.value)) (*values)[item.name] = *text;
            continue;
        }
        const TensorRef& ref = item.value->tensor;
        TorchTensor t = geometry(bytes_of(*ref.storage, label), ref, label);
        info.dtype = t.dtype;
        info.shape = t.shape;
        if (!is_float_dtype(t.dtype)) {
            info.problem = Message(Msg::st_dtype_not_float, {{"file", label}, {"dtype", t.dtype}});
            info.listed_only = true;
        }
        loadable.emplace(item.name, std::move(t));
        tensors->push_back(std::move(info));
    }
    return loadable;
}

// ============================================================================================
// [SECTION] The legacy format
// ============================================================================================
// torch.save before PyTorch 1.6 (and with _use_new_zipfile_serialization=False) writes
//   the magic number     a pickled int, 0x1950a86a20f9469cfc6c
//   the version          a pickled int, 1001
//   sys_info             a pickled dict: protocol_version, little_endian, type_sizes
//   the object           storages as persistent ids ('storage', type, key, location, numel, view)
//   the storage keys     a pickled list: the order of the storages that follow
//   each storage         its element count as a little-endian int64, then its elements
constexpr std::int64_t kLegacyVersion = 1001;

// The magic number's pickle: PROTO n, a FRAME from protocol 4 on, LONG1 of 10 bytes, STOP. Its
// length, or 0 when the bytes do not start with it.
std::size_t legacy_magic_length(const std::uint8_t* data, std::size_t size) {
    static const std::uint8_t kMagic[] = {0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19, '.'};
    if (size < 2 || data[0] != 0x80 || data[1] < 2 || data[1] > 4) return 0;
    const std::size_t at = data[1] >= 4 ? 2 + 9 : 2;  // FRAME: 0x95 and 8 bytes of length
    if (data[1] >= 4 && (size < at || data[2] != 0x95)) return 0;
    if (size < at + sizeof kMagic || !std::equal(kMagic, kMagic + sizeof kMagic, data + at)) return 0;
    return at + sizeof kMagic;
}

// The storages the object refers to, by key: their dtype and element count.
std::map<std::string, const StorageRef*> storages_by_key(const std::string& path, const Unpickled& object) {
    std::map<std::string, const StorageRef*> out;
    for (const PickleValue& v : object.values) {
        if (v.kind != Kind::Storage) continue;
        const auto [it, added] = out.emplace(v.storage.key, &v.storage);
        if (!added && (it->second->dtype != v.storage.dtype || it->second->numel != v.storage.numel))
            throw FileError(Message(Msg::torch_storage_given_twice,
                                    {{"file", path}, {"key", v.storage.key}, {"numel", std::to_string(it->second->numel)},
                                     {"dtype", it->second->dtype}, {"numel2", std::to_string(v.storage.numel)},
                                     {"dtype2", v.storage.dtype}}));
    }
    return out;
}

}  // namespace

bool is_torch_save(const ZipArchive& archive) { return find_data_pkl(archive) != nullptr; }

std::shared_ptr<const TensorSource::Reader> open_torch_save(std::shared_ptr<const ZipArchive> archive,
                                                            std::vector<TensorInfo>* tensors,
                                                            std::map<std::string, std::string>* values) {
    const std::string& path = archive->path();
    const ZipMember* data_pkl = find_data_pkl(*archive);
    if (!data_pkl) throw FileError(Message(Msg::torch_no_data_pkl, {{"file", path}}));
    const std::string prefix = prefix_of(*data_pkl);
    if (is_torchscript(*archive, prefix))
        throw FileError(Message(Msg::torch_torchscript, {{"file", path}}));
    if (const ZipMember* order = archive->find(prefix + "byteorder")) {
        const std::vector<std::uint8_t> text = archive->read_all(*order, 16, path + ": member '" + order->name + "'");
        if (std::string(text.begin(), text.end()) != "little")
            throw FileError(
                Message(Msg::torch_big_endian, {{"file", path}, {"order", std::string(text.begin(), text.end()).substr(0, 16)}}));
    }
    const std::vector<std::uint8_t> pickle =
        archive->read_all(*data_pkl, max_pickle_bytes(), path + ": member '" + data_pkl->name + "'");
    const Unpickled object = read_pickle(pickle.data(), pickle.size(), path);
    auto bytes_of = [&](const StorageRef& s, const std::string& label) {
        const ZipMember* record = archive->find(prefix + "data/" + s.key);
        if (!record) throw FileError(Message(Msg::torch_record_missing, {{"file", label}, {"record", prefix + "data/" + s.key}}));
        return StorageBytes{record, 0, record->size};
    };
    std::map<std::string, TorchTensor> loadable = list_object(path, object, bytes_of, tensors, values);
    return std::make_shared<TorchSaveReader>(std::move(archive), std::move(loadable));
}

bool is_legacy_torch_save(const std::uint8_t* data, std::size_t size) { return legacy_magic_length(data, size) != 0; }

std::shared_ptr<const TensorSource::Reader> open_legacy_torch_save(std::shared_ptr<const MappedFile> file,
                                                                   std::vector<TensorInfo>* tensors,
                                                                   std::map<std::string, std::string>* values) {
    const std::string& path = file->path();
    const std::uint8_t* data = file->data();
    const std::size_t size = file->size();
    std::size_t at = legacy_magic_length(data, size);
    if (at == 0) throw FileError(Message(Msg::torch_legacy_magic, {{"file", path}}));
    auto next_pickle = [&]() {
        std::size_t used = 0;
        Unpickled u = read_pickle(data + at, size - at, path, &used);
        at += used;
        return u;
    };
    const Unpickled version = next_pickle();
    if (version.root->kind != Kind::Int || version.root->integer != kLegacyVersion)
        throw FileError(Message(Msg::torch_legacy_version, {{"file", path}, {"version", std::to_string(kLegacyVersion)}})
                            .with("value", value_message(version.root)));
    const Unpickled sys_info = next_pickle();
    const PickleValue* little = sys_info.root->kind == Kind::Dict ? entry(sys_info.root, "little_endian") : nullptr;
    if (!little || little->kind != Kind::Bool)
        throw FileError(Message(Msg::torch_legacy_no_byte_order, {{"file", path}}));
    if (!little->flag)
        throw FileError(Message(Msg::torch_legacy_big_endian, {{"file", path}}));
    const Unpickled object = next_pickle();
    const Unpickled keys = next_pickle();
    if (keys.root->kind != Kind::List)
        throw FileError(Message(Msg::torch_legacy_keys_not_list, {{"file", path}}).with("value", value_message(keys.root)));

    // The storages, in the list's order: an int64 element count, then the elements.
    const std::map<std::string, const StorageRef*> refs = storages_by_key(path, object);
    std::map<std::string, StorageBytes> bytes;
    for (const PickleValue* key : keys.root->items) {
        if (key->kind != Kind::String)
            throw FileError(Message(Msg::torch_legacy_key_not_string, {{"file", path}}).with("value", value_message(key)));
        const auto ref = refs.find(key->text);
        if (ref == refs.end())
            throw FileError(Message(Msg::torch_legacy_unreferenced, {{"file", path}, {"key", key->text}}));
        if (size - at < 8)
            throw FileError(Message(Msg::torch_legacy_truncated, {{"file", path}, {"key", key->text}}));
        std::uint64_t count = 0;
        for (int i = 7; i >= 0; --i) count = (count << 8) | data[at + static_cast<std::size_t>(i)];
        at += 8;
        std::uint64_t length = 0;
        if (count != ref->second->numel || mul_overflows(count, ref->second->item_size, &length) || length > size - at)
            throw FileError(Message(Msg::torch_legacy_storage_size,
                                    {{"file", path}, {"key", key->text}, {"numel", std::to_string(ref->second->numel)},
                                     {"dtype", ref->second->dtype}, {"count", std::to_string(count)},
                                     {"left", std::to_string(size - at)}}));
        bytes[key->text] = StorageBytes{nullptr, at, length};
        at += static_cast<std::size_t>(length);
    }
    auto bytes_of = [&](const StorageRef& s, const std::string& label) {
        const auto found = bytes.find(s.key);
        if (found == bytes.end()) throw FileError(Message(Msg::torch_legacy_not_listed, {{"file", label}, {"key", s.key}}));
        return found->second;
    };
    std::map<std::string, TorchTensor> loadable = list_object(path, object, bytes_of, tensors, values);
    return std::make_shared<TorchSaveReader>(std::move(file), std::move(loadable));
}

Message not_zip_torch_file_problem(const std::string& path, const std::uint8_t* data, std::size_t size) {
    if (size >= 2 && data[0] == 0x80 && data[1] >= 2 && data[1] <= 5) return Message(Msg::torch_plain_pickle, {{"file", path}});
    return {};
}

}  // namespace attnscope
