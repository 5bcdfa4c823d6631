// torch.save archives (see torch_save.hpp).
//
// [SECTION] Recognizing the archive: its prefix, TorchScript, byte order
// [SECTION] Naming: the pickled object flattened into dotted names
// [SECTION] Geometry: a tensor's elements must lie inside its storage
// [SECTION] The reader: one storage range per tensor, gathered when strided
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

// "an int (3)", "a str ('adamw')", "a list of 0 items" ...
std::string value_text(const PickleValue* v) {
    const std::string kind = kind_text(v->kind);
    switch (v->kind) {
        case Kind::Bool: return kind + " (" + (v->flag ? "True" : "False") + ")";
        case Kind::Int: return kind + " (" + std::to_string(v->integer) + ")";
        case Kind::Float: return kind + " (" + number_text(v->number) + ")";
        case Kind::String: {
            std::string shown;
            for (char c : v->text.substr(0, 40)) shown += (c >= 0x20 && c < 0x7f) ? c : '?';
            return kind + " ('" + shown + (v->text.size() > 40 ? "...'" : "'") + ")";
        }
        case Kind::Bytes: return kind + " (" + std::to_string(v->text.size()) + " bytes)";
        case Kind::Global: return v->text;
        case Kind::Other: return v->text;
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

// Walks the object: tensors and other leaves get names; empty containers are left out. Sharing
// (the memo) can make the walk exponential and cycles infinite, so it is bounded.
class Flattener {
public:
    explicit Flattener(const std::string& path) : path_(path) {}

    std::vector<Listed> run(const PickleValue* root, const std::string& root_name) {
        const bool container = root->kind == Kind::Dict || root->kind == Kind::List || root->kind == Kind::Tuple ||
                               root->kind == Kind::Set;
        visit(root, container ? "" : root_name);
        return std::move(out_);
    }

private:
    static constexpr std::size_t kMaxDepth = 100;
    static constexpr std::size_t kMaxVisits = 10'000'000;

    void visit(const PickleValue* v, const std::string& name) {
        if (++visits_ > kMaxVisits)
            throw FileError(path_ + ": the pickle's containers refer to each other more than " +
                            std::to_string(kMaxVisits) + " times; refusing to list them");
        if (std::find(stack_.begin(), stack_.end(), v) != stack_.end()) return;  // a container inside itself
        if (stack_.size() >= kMaxDepth)
            throw FileError(path_ + ": '" + name + "' nests containers more than " + std::to_string(kMaxDepth) + " deep");
        auto join = [&](const std::string& part) { return name.empty() ? part : name + "." + part; };
        stack_.push_back(v);
        if (v->kind == Kind::Dict) {
            for (std::size_t i = 0; i < v->entries.size(); ++i) visit(v->entries[i].second, join(key_text(v->entries[i].first, i)));
        } else if (v->kind == Kind::List || v->kind == Kind::Tuple || v->kind == Kind::Set) {
            for (std::size_t i = 0; i < v->items.size(); ++i) visit(v->items[i], join(std::to_string(i)));
        } else {
            out_.push_back({unique(name.empty() ? "value" : name), v});
        }
        stack_.pop_back();
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
// One tensor as the reader needs it: where its elements are in which storage record.
struct TorchTensor {
    const ZipMember* record = nullptr;
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
// element lies inside the storage, which must be in the archive with the bytes its pickle says.
TorchTensor geometry(const ZipArchive& archive, const std::string& prefix, const TensorRef& ref, const std::string& label) {
    const StorageRef& s = *ref.storage;
    TorchTensor t;
    t.label = label;
    t.dtype = s.dtype;
    t.item_size = s.item_size;
    t.offset = ref.offset;
    t.stride = ref.stride;
    t.record = archive.find(prefix + "data/" + s.key);
    if (!t.record)
        throw FileError(label + ": its storage record '" + prefix + "data/" + s.key + "' is not in the archive");
    std::uint64_t storage_bytes = 0;
    if (mul_overflows(s.numel, s.item_size, &storage_bytes) || t.record->size != storage_bytes)
        throw FileError(label + ": its storage '" + s.key + "' should hold " + std::to_string(s.numel) + " elements of " +
                        s.dtype + " but its record has " + std::to_string(t.record->size) + " bytes");
    if (ref.size.size() > kMaxAxes)
        throw FileError(label + " has " + std::to_string(ref.size.size()) + " axes; attnscope reads at most " +
                        std::to_string(kMaxAxes));
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
        throw FileError(label + " has shape " + format_shape(t.shape) + " and strides too large to address (the size overflows)");
    if (t.numel > 0) {
        if (last >= s.numel)
            throw FileError(label + " " + format_shape(t.shape) + " at storage offset " + std::to_string(ref.offset) +
                            " reaches element " + std::to_string(last) + " of its storage '" + s.key + "', which holds " +
                            std::to_string(s.numel));
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

class TorchSaveReader final : public TensorSource::Reader {
public:
    TorchSaveReader(std::shared_ptr<const ZipArchive> archive, std::map<std::string, TorchTensor> tensors)
        : archive_(std::move(archive)), tensors_(std::move(tensors)) {}

    Array load(const TensorInfo& info) const override {
        const TorchTensor& t = tensors_.at(info.name);
        Array out = make_array(t.shape);
        if (t.numel == 0) return out;
        prefault_for_writing(out.data(), out.size() * sizeof(float));
        const std::size_t bytes = static_cast<std::size_t>(t.numel) * t.item_size;
        if (t.contiguous && t.dtype == "F32" && little_endian_host()) {  // the file's bytes are the floats
            archive_->read_range(*t.record, t.offset * t.item_size, bytes, out.data(), t.label);
            return out;
        }
        std::vector<std::uint8_t> raw(bytes);
        if (t.contiguous)
            archive_->read_range(*t.record, t.offset * t.item_size, bytes, raw.data(), t.label);
        else
            gather(t, raw.data());
        decode_floats(t.dtype, raw.data(), static_cast<std::size_t>(t.numel), out.data());
        return out;
    }

private:
    // A strided view: read the storage range it spans, then copy its elements out in row-major
    // order, a whole innermost run at a time where that axis has stride 1.
    void gather(const TorchTensor& t, std::uint8_t* out) const {
        std::uint64_t span_bytes = 0;
        if (mul_overflows(t.span, t.item_size, &span_bytes) || span_bytes > memory_budget())
            throw FileError(t.label + " " + format_shape(t.shape) + " is a strided view spread over " +
                            format_bytes(span_bytes) + " of its storage, over the memory budget of " +
                            format_bytes(memory_budget()) + "; save it with .contiguous()");
        std::vector<std::uint8_t> span(static_cast<std::size_t>(span_bytes));
        archive_->read_range(*t.record, t.offset * t.item_size, span.size(), span.data(), t.label);
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
    std::map<std::string, TorchTensor> tensors_;
};

}  // namespace

bool is_torch_save(const ZipArchive& archive) { return find_data_pkl(archive) != nullptr; }

std::shared_ptr<const TensorSource::Reader> open_torch_save(std::shared_ptr<const ZipArchive> archive,
                                                            std::vector<TensorInfo>* tensors,
                                                            std::map<std::string, std::string>* values) {
    const std::string& path = archive->path();
    const ZipMember* data_pkl = find_data_pkl(*archive);
    if (!data_pkl) throw FileError(path + ": a zip archive without data.pkl, so not a torch.save file");
    const std::string prefix = prefix_of(*data_pkl);
    if (is_torchscript(*archive, prefix))
        throw FileError(path + ": a TorchScript archive (torch.jit.save), which holds code; attnscope reads torch.save "
                               "files: save the weights with torch.save(model.state_dict(), 'weights.pt')");
    if (const ZipMember* order = archive->find(prefix + "byteorder")) {
        const std::vector<std::uint8_t> text = archive->read_all(*order, 16, path + ": member '" + order->name + "'");
        if (std::string(text.begin(), text.end()) != "little")
            throw FileError(path + ": written on a big-endian machine (byteorder '" +
                            std::string(text.begin(), text.end()).substr(0, 16) +
                            "'); attnscope reads little-endian torch.save files");
    }
    const std::vector<std::uint8_t> pickle =
        archive->read_all(*data_pkl, max_pickle_bytes(), path + ": member '" + data_pkl->name + "'");
    const Unpickled object = read_pickle(pickle.data(), pickle.size(), path);
    const std::string stem = std::filesystem::path(path).stem().string();

    std::map<std::string, TorchTensor> loadable;
    for (const Listed& item : Flattener(path).run(object.root, stem)) {
        TensorInfo info;
        info.name = item.name;
        const std::string label = path + ": tensor '" + item.name + "'";
        if (item.value->kind != Kind::Tensor) {
            info.dtype = python_type(item.value);
            info.problem = path + ": '" + item.name + "' is " + value_text(item.value) + ", not a tensor";
            info.listed_only = true;
            tensors->push_back(std::move(info));
            if (const std::optional<std::string> text = scalar_text(item.value)) (*values)[item.name] = *text;
            continue;
        }
        TorchTensor t = geometry(*archive, prefix, item.value->tensor, label);
        info.dtype = t.dtype;
        info.shape = t.shape;
        if (!is_float_dtype(t.dtype)) {
            info.problem = label + " has dtype " + t.dtype + "; attnscope reads F16, BF16, F32, F64 tensors";
            info.listed_only = true;
        }
        loadable.emplace(item.name, std::move(t));
        tensors->push_back(std::move(info));
    }
    return std::make_shared<TorchSaveReader>(std::move(archive), std::move(loadable));
}

std::string not_zip_torch_file_problem(const std::string& path, const std::uint8_t* data, std::size_t size) {
    // Before PyTorch 1.6, torch.save wrote pickles one after another, the first a magic number:
    // PROTO 2, LONG1 of 10 bytes 0x1950a86a20f9469cfc6c.
    static const std::uint8_t kLegacy[] = {0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19};
    const std::string stem = std::filesystem::path(path).stem().string();
    if (size >= sizeof kLegacy && std::equal(kLegacy, kLegacy + sizeof kLegacy, data))
        return path + ": a torch.save file in the legacy format of PyTorch before 1.6; re-save it in the zip format "
                      "with a newer PyTorch: torch.save(torch.load('" + path + "'), '" + stem + "_zip.pt')";
    if (size >= 2 && data[0] == 0x80 && data[1] >= 2 && data[1] <= 5)
        return path + ": a plain Python pickle, not a torch.save archive; attnscope never unpickles such files: save the "
                      "tensors with torch.save (or as .safetensors, .npz)";
    return "";
}

}  // namespace attnscope
