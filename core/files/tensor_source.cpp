// TensorSource: list the tensors of a .npy, .npz, .safetensors or folder, load them lazily.
//
// [SECTION] Shared: the listing entry of one .npy byte stream
// [SECTION] .npy: one mapped file
// [SECTION] folder of .npy files
// [SECTION] .safetensors
// [SECTION] .npz: a zip archive read by libzip straight from the mapped bytes
// [SECTION] TensorSource: format detection, find, load
#include "tensor_source.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "config.hpp"
#include "memory_budget.hpp"
#include "io.hpp"
#include "torch_save.hpp"
#include "zip_archive.hpp"

namespace attnscope {

namespace {

namespace fs = std::filesystem;

constexpr const char* kNpySuffix = ".npy";

bool ends_with(const std::string& text, const std::string& suffix) {
    return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string without_npy_suffix(const std::string& name) {
    return ends_with(name, kNpySuffix) ? name.substr(0, name.size() - 4) : name;
}

// ============================================================================================
// [SECTION] Shared: the listing entry of one .npy byte stream
// ============================================================================================
// The .npy dtype as safetensors spells it ("<f4" -> "F32"); parse_npy_header refuses the others.
std::string dtype_name(const std::string& descr) {
    const char size = descr.empty() ? '?' : descr.back();
    return size == '2' ? "F16" : size == '4' ? "F32" : size == '8' ? "F64" : descr;
}

Message rank_problem(const std::string& label, const Shape& shape) {
    if (shape.size() <= kMaxAxes) return {};
    return Message(Msg::tensor_too_many_axes,
                   {{"file", label}, {"axes", std::to_string(shape.size())}, {"max", std::to_string(kMaxAxes)}});
}

// name: the tensor's name; label: how errors name it ("x.npz: member 'a.npy'").
// header_bytes: at least the header; total_size: the whole .npy stream, header and data.
TensorInfo npy_info(const std::string& name, const std::string& label, const std::uint8_t* header_bytes,
                    std::size_t header_size, std::size_t total_size) {
    TensorInfo info;
    info.name = name;
    try {
        const NpyHeader header = parse_npy_header(header_bytes, header_size, label);
        info.dtype = dtype_name(header.descr);
        info.shape = header.shape;
        info.problem = rank_problem(label, header.shape);
        if (info.problem.empty() && header.data_bytes != total_size - header.data_offset)
            info.problem = Message(Msg::npy_data_size_mismatch, {{"file", label},
                                                                {"has", std::to_string(total_size - header.data_offset)},
                                                                {"shape", format_shape(header.shape)},
                                                                {"descr", header.descr},
                                                                {"needs", std::to_string(header.data_bytes)}});
    } catch (const FileError& e) {
        info.problem = e.message;
    }
    return info;
}

// ============================================================================================
// [SECTION] .npy: one mapped file
// ============================================================================================
class NpyReader final : public TensorSource::Reader {
public:
    explicit NpyReader(MappedFile file) : file_(std::move(file)) {}
    Array load(const TensorInfo&) const override { return parse_npy(file_.data(), file_.size(), file_.path()); }

private:
    MappedFile file_;
};

// ============================================================================================
// [SECTION] folder of .npy files
// ============================================================================================
class FolderReader final : public TensorSource::Reader {
public:
    explicit FolderReader(std::string dir) : dir_(std::move(dir)) {}
    Array load(const TensorInfo& info) const override { return read_npy(file_of(info.name)); }

    // One entry per *.npy file, by name; other files (trace.json ...) are not tensors.
    std::vector<TensorInfo> list() const {
        std::vector<std::string> names;
        std::error_code error;
        for (const auto& entry : fs::directory_iterator(dir_, error))
            if (ends_with(entry.path().filename().string(), kNpySuffix))
                names.push_back(without_npy_suffix(entry.path().filename().string()));
        if (error) throw FileError(Message(Msg::folder_cannot_list, {{"file", dir_}, {"reason", error.message()}}));
        if (names.empty()) throw FileError(Message(Msg::folder_no_npy, {{"file", dir_}}));
        std::sort(names.begin(), names.end());
        std::vector<TensorInfo> tensors;
        for (const auto& name : names) {
            try {
                const MappedFile file = MappedFile::open(file_of(name));
                tensors.push_back(npy_info(name, file.path(), file.data(), file.size(), file.size()));
            } catch (const FileError& e) {  // the header itself is unreadable
                tensors.push_back({name, "", {}, e.message});
            }
        }
        return tensors;
    }

private:
    std::string file_of(const std::string& name) const { return dir_ + "/" + name + kNpySuffix; }
    std::string dir_;
};

// ============================================================================================
// [SECTION] .safetensors
// ============================================================================================
class SafetensorsReader final : public TensorSource::Reader {
public:
    explicit SafetensorsReader(SafetensorsFile file) : file_(std::move(file)) {}
    Array load(const TensorInfo& info) const override { return file_.load(info.name); }
    const std::map<std::string, std::string>& metadata() const { return file_.metadata(); }

    std::vector<TensorInfo> list() const {
        std::vector<TensorInfo> tensors;
        for (const SafetensorsEntry& e : file_.entries()) {
            const std::string label = file_.path() + ": tensor '" + e.name + "'";
            TensorInfo info{e.name, e.dtype, e.shape, rank_problem(label, e.shape)};
            if (!is_float_dtype(e.dtype)) {
                info.problem = Message(Msg::st_dtype_not_float, {{"file", label}, {"dtype", e.dtype}});
                info.listed_only = true;
            }
            tensors.push_back(std::move(info));
        }
        return tensors;
    }

private:
    SafetensorsFile file_;
};

// ============================================================================================
// [SECTION] .npz
// ============================================================================================
// numpy.savez writes one "<name>.npy" member per array, stored (savez) or deflated
// (savez_compressed). A member must declare at most the memory budget (ZipArchive checks that it
// inflates to exactly what it declares).
class NpzReader final : public TensorSource::Reader {
public:
    explicit NpzReader(std::shared_ptr<const ZipArchive> archive) : archive_(std::move(archive)) {}

    Array load(const TensorInfo& info) const override {
        const Member& m = members_.at(info.name);
        const std::vector<std::uint8_t> bytes = archive_->read_all(*m.member, memory_budget(), m.label);
        return parse_npy(bytes.data(), bytes.size(), m.label);
    }

    // Reads each member's .npy header only (a few bytes, inflated on the fly).
    std::vector<TensorInfo> list() {
        const std::string& path = archive_->path();
        const std::uint64_t budget = memory_budget();
        std::vector<TensorInfo> tensors;
        for (const ZipMember& zm : archive_->members()) {
            if (ends_with(zm.name, "/")) continue;  // a folder entry
            const std::string name = without_npy_suffix(zm.name);
            if (members_.count(name)) throw FileError(Message(Msg::npz_member_twice, {{"file", path}, {"name", zm.name}}));
            const Member& m = members_[name] = {&zm, path + ": member '" + zm.name + "'"};
            TensorInfo info{name, "", {}, {}};
            if (!ends_with(zm.name, kNpySuffix))
                info.problem = Message(Msg::npz_member_not_npy, {{"file", m.label}});
            else if (!zm.problem.empty())
                info.problem = zm.problem;
            else if (zm.size > budget)
                info.problem = Message(Msg::npz_member_over_budget,
                                       {{"file", m.label}, {"size", format_bytes(zm.size)}, {"budget", format_bytes(budget)}});
            else
                info = header_info(name, m);
            tensors.push_back(std::move(info));
        }
        return tensors;
    }

private:
    struct Member {
        const ZipMember* member = nullptr;
        std::string label;  // "x.npz: member 'a.npy'"
    };

    TensorInfo header_info(const std::string& name, const Member& m) const {
        try {
            const std::size_t size = static_cast<std::size_t>(m.member->size);
            std::vector<std::uint8_t> head = archive_->read_prefix(*m.member, std::min<std::size_t>(size, 16));
            const std::size_t header_size = npy_header_size(head.data(), head.size(), m.label);
            head = archive_->read_prefix(*m.member, std::min(size, header_size));
            return npy_info(name, m.label, head.data(), head.size(), size);
        } catch (const FileError& e) {
            return {name, "", {}, e.message};
        }
    }

    std::shared_ptr<const ZipArchive> archive_;
    std::map<std::string, Member> members_;
};

// ============================================================================================
// [SECTION] TensorSource
// ============================================================================================
std::string lowercase_extension(const std::string& path) {
    std::string ext = fs::path(path).extension().string();
    for (char& ch : ext) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return ext;
}

// .npy and .safetensors by extension; anything else by its first bytes. A zip archive is an .npz
// or a torch.save file: "zip" here, decided by its members.
std::string detect_format(const std::string& path, const MappedFile& file) {
    const std::string ext = lowercase_extension(path);
    if (ext == ".npy" || ext == ".safetensors") return ext.substr(1);
    const std::uint8_t* p = file.data();
    if (file.size() >= 6 && std::equal(p, p + 6, "\x93NUMPY")) return "npy";
    if (file.size() >= 2 && p[0] == 'P' && p[1] == 'K') return "zip";
    if (is_legacy_torch_save(p, file.size())) return "torch.save (legacy)";
    if (const Message problem = not_zip_torch_file_problem(path, p, file.size()); !problem.empty()) throw FileError(problem);
    if (ext == ".npz") return "zip";  // ZipArchive says what is wrong with it
    if (file.size() >= 9 && p[8] == '{') return "safetensors";
    throw FileError(Message(Msg::unknown_file_type, {{"file", path}}));
}

}  // namespace

TensorSource TensorSource::open(const std::string& path) {
    TensorSource source;
    source.path_ = path;
    std::error_code error;
    if (fs::is_directory(path, error)) {
        auto reader = std::make_shared<FolderReader>(path);
        source.format_ = "folder";
        source.tensors_ = reader->list();
        source.reader_ = std::move(reader);
        return source;
    }
    MappedFile file = MappedFile::open(path);
    source.format_ = detect_format(path, file);
    if (source.format_ == "npy") {
        const std::string name = without_npy_suffix(fs::path(path).filename().string());
        source.tensors_ = {npy_info(name, path, file.data(), file.size(), file.size())};
        if (!source.tensors_[0].problem.empty()) throw FileError(source.tensors_[0].problem);
        source.reader_ = std::make_shared<NpyReader>(std::move(file));
    } else if (source.format_ == "zip") {
        const std::string ext = lowercase_extension(path);
        const bool torch_ext = ext == ".pt" || ext == ".pth" || ext == ".bin" || ext == ".ckpt";
        std::shared_ptr<const ZipArchive> archive = ZipArchive::open(
            std::move(file), Message(ext == ".npz" ? Msg::kind_npz : torch_ext ? Msg::kind_torch_save : Msg::kind_torch_save_or_npz));
        if (is_torch_save(*archive)) {
            source.format_ = "torch.save";
            source.reader_ = open_torch_save(std::move(archive), &source.tensors_, &source.metadata_);
        } else {
            source.format_ = "npz";
            auto reader = std::make_shared<NpzReader>(std::move(archive));
            source.tensors_ = reader->list();
            source.reader_ = std::move(reader);
        }
    } else if (source.format_ == "torch.save (legacy)") {
        source.reader_ = open_legacy_torch_save(std::make_shared<const MappedFile>(std::move(file)), &source.tensors_,
                                                &source.metadata_);
    } else {
        auto reader = std::make_shared<SafetensorsReader>(SafetensorsFile::open(path));
        source.tensors_ = reader->list();
        source.metadata_ = reader->metadata();
        source.reader_ = std::move(reader);
    }
    return source;
}

const TensorInfo* TensorSource::find(const std::string& name) const {
    const auto it = std::find_if(tensors_.begin(), tensors_.end(), [&](const TensorInfo& t) { return t.name == name; });
    return it == tensors_.end() ? nullptr : &*it;
}

Array TensorSource::load(const std::string& name) const {
    const TensorInfo* info = find(name);
    if (!info) throw FileError(Message(Msg::no_tensor_named, {{"file", path_}, {"name", name}}));
    if (!info->problem.empty()) throw FileError(info->problem);
    // As float32 the tensor needs numel x 4 bytes (saturating): refused above the memory budget.
    std::uint64_t bytes = sizeof(float);
    for (const std::size_t n : info->shape) bytes = n != 0 && bytes > UINT64_MAX / n ? UINT64_MAX : bytes * n;
    if (bytes > memory_budget())
        throw FileError(Message(Msg::tensor_over_budget, {{"file", path_},
                                                          {"name", name},
                                                          {"shape", format_shape(info->shape)},
                                                          {"needs", format_bytes(bytes)},
                                                          {"budget", format_bytes(memory_budget())}}));
    return reader_->load(*info);
}

}  // namespace attnscope
