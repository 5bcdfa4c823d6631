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
#include <mutex>

#include <zip.h>

#include "config.hpp"
#include "memory_budget.hpp"
#include "io.hpp"

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

std::string rank_problem(const std::string& label, const Shape& shape) {
    if (shape.size() <= kMaxAxes) return "";
    return label + " has " + std::to_string(shape.size()) + " axes; attnscope reads at most " +
           std::to_string(kMaxAxes);
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
            info.problem = label + ": holds " + std::to_string(total_size - header.data_offset) +
                           " bytes of data but its header (shape " + format_shape(header.shape) + " of " +
                           header.descr + ") needs " + std::to_string(header.data_bytes);
    } catch (const FileError& e) {
        info.problem = e.what();
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
        if (error) throw FileError(dir_ + ": cannot list the folder: " + error.message());
        if (names.empty()) throw FileError(dir_ + ": the folder holds no .npy files");
        std::sort(names.begin(), names.end());
        std::vector<TensorInfo> tensors;
        for (const auto& name : names) {
            try {
                const MappedFile file = MappedFile::open(file_of(name));
                tensors.push_back(npy_info(name, file.path(), file.data(), file.size(), file.size()));
            } catch (const FileError& e) {  // the header itself is unreadable
                tensors.push_back({name, "", {}, e.what()});
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
            const bool convertible = e.dtype == "F16" || e.dtype == "BF16" || e.dtype == "F32" || e.dtype == "F64";
            if (!convertible) info.problem = label + " has dtype " + e.dtype + "; attnscope reads F16, BF16, F32, F64";
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
// (savez_compressed). libzip reads the archive from the mapped bytes. The sizes in the zip
// headers are never trusted: a member must declare at most the memory budget, and inflating it
// must give exactly the declared number of bytes (a zip bomb inflates past it).
struct ZipDiscard {
    void operator()(zip_t* archive) const { zip_discard(archive); }
};

class NpzReader final : public TensorSource::Reader {
public:
    explicit NpzReader(MappedFile file) : file_(std::move(file)) {
        const std::string& path = file_.path();
        if (file_.size() < 4 || file_.data()[0] != 'P' || file_.data()[1] != 'K')
            throw FileError(path + ": not an .npz (a zip archive starts with the bytes PK)");
        zip_error_t error;
        zip_error_init(&error);
        zip_source_t* source = zip_source_buffer_create(file_.data(), file_.size(), 0, &error);
        zip_t* archive = source ? zip_open_from_source(source, ZIP_RDONLY | ZIP_CHECKCONS, &error) : nullptr;
        if (!archive) {
            const std::string why = zip_error_strerror(&error);
            zip_error_fini(&error);
            if (source) zip_source_free(source);
            throw FileError(path + ": not a readable .npz (zip archive): " + why);
        }
        zip_error_fini(&error);
        archive_.reset(archive);
    }

    Array load(const TensorInfo& info) const override {
        const Member& m = members_.at(info.name);
        const std::vector<std::uint8_t> bytes = read(m, m.size + 1);  // one byte more reveals a bomb
        if (bytes.size() > m.size)
            throw FileError(m.label + ": inflates past its declared size of " + std::to_string(m.size) +
                            " bytes (a zip bomb?); refusing it");
        if (bytes.size() < m.size)
            throw FileError(m.label + ": truncated: " + std::to_string(bytes.size()) + " of the declared " +
                            std::to_string(m.size) + " bytes");
        return parse_npy(bytes.data(), bytes.size(), m.label);
    }

    // Reads each member's .npy header only (a few bytes, inflated on the fly).
    std::vector<TensorInfo> list() {
        const std::string& path = file_.path();
        const std::uint64_t budget = memory_budget();
        std::vector<TensorInfo> tensors;
        const zip_int64_t count = zip_get_num_entries(archive_.get(), 0);
        for (zip_int64_t i = 0; i < count; ++i) {
            zip_stat_t st;
            zip_stat_init(&st);
            if (zip_stat_index(archive_.get(), static_cast<zip_uint64_t>(i), 0, &st) != 0 || !st.name)
                throw FileError(path + ": zip entry " + std::to_string(i) + " is unreadable: " +
                                zip_strerror(archive_.get()));
            const std::string member = st.name;
            if (ends_with(member, "/")) continue;  // a folder entry
            const std::string name = without_npy_suffix(member);
            if (members_.count(name)) throw FileError(path + ": holds the member '" + member + "' twice");
            const Member& m = members_[name] = {static_cast<zip_uint64_t>(i), st.size,
                                                path + ": member '" + member + "'"};
            TensorInfo info{name, "", {}, ""};
            if (!ends_with(member, kNpySuffix))
                info.problem = m.label + " is not a .npy file";
            else if (st.encryption_method != ZIP_EM_NONE)
                info.problem = m.label + " is encrypted";
            else if (st.comp_method != ZIP_CM_STORE && st.comp_method != ZIP_CM_DEFLATE)
                info.problem = m.label + " uses compression method " + std::to_string(st.comp_method) +
                               "; attnscope reads stored or deflated members (numpy.savez, savez_compressed)";
            else if (st.size > budget)
                info.problem = m.label + " declares " + format_bytes(st.size) +
                               " uncompressed, over the memory budget of " + format_bytes(budget) + "; refusing it";
            else
                info = header_info(name, m);
            tensors.push_back(std::move(info));
        }
        return tensors;
    }

private:
    struct Member {
        zip_uint64_t index = 0;
        std::uint64_t size = 0;  // declared uncompressed size
        std::string label;       // "x.npz: member 'a.npy'"
    };

    TensorInfo header_info(const std::string& name, const Member& m) const {
        try {
            const std::size_t size = static_cast<std::size_t>(m.size);
            std::vector<std::uint8_t> head = read(m, std::min<std::size_t>(size, 16));
            const std::size_t header_size = npy_header_size(head.data(), head.size(), m.label);
            head = read(m, std::min(size, header_size));
            return npy_info(name, m.label, head.data(), head.size(), size);
        } catch (const FileError& e) {
            return {name, "", {}, e.what()};
        }
    }

    // The first `limit` bytes of a member (fewer when it ends first), inflated if deflated.
    std::vector<std::uint8_t> read(const Member& m, std::size_t limit) const {
        std::lock_guard<std::mutex> lock(mutex_);  // a zip_t is not thread-safe
        zip_file_t* file = zip_fopen_index(archive_.get(), m.index, 0);
        if (!file) throw FileError(m.label + ": cannot open: " + zip_strerror(archive_.get()));
        std::vector<std::uint8_t> bytes(limit);
        std::size_t done = 0;
        while (done < limit) {
            const zip_int64_t n = zip_fread(file, bytes.data() + done, limit - done);
            if (n < 0) {
                const std::string why = zip_file_strerror(file);
                zip_fclose(file);
                throw FileError(m.label + ": cannot read: " + why);
            }
            if (n == 0) break;
            done += static_cast<std::size_t>(n);
        }
        zip_fclose(file);
        bytes.resize(done);
        return bytes;
    }

    MappedFile file_;  // outlives archive_, which reads from it
    std::unique_ptr<zip_t, ZipDiscard> archive_;
    std::map<std::string, Member> members_;
    mutable std::mutex mutex_;
};

// ============================================================================================
// [SECTION] TensorSource
// ============================================================================================
std::string lowercase_extension(const std::string& path) {
    std::string ext = fs::path(path).extension().string();
    for (char& ch : ext) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return ext;
}

// By extension; a file with another extension by its first bytes.
std::string detect_format(const std::string& path, const MappedFile& file) {
    const std::string ext = lowercase_extension(path);
    if (ext == ".npy" || ext == ".npz" || ext == ".safetensors") return ext.substr(1);
    const std::uint8_t* p = file.data();
    if (file.size() >= 6 && std::equal(p, p + 6, "\x93NUMPY")) return "npy";
    if (file.size() >= 2 && p[0] == 'P' && p[1] == 'K') return "npz";
    if (file.size() >= 9 && p[8] == '{') return "safetensors";
    throw FileError(path + ": unknown file type; attnscope reads .npy, .npz, .safetensors or a folder of .npy files");
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
    } else if (source.format_ == "npz") {
        auto reader = std::make_shared<NpzReader>(std::move(file));
        source.tensors_ = reader->list();
        source.reader_ = std::move(reader);
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
    if (!info) throw FileError(path_ + ": no tensor named '" + name + "'");
    if (!info->problem.empty()) throw FileError(info->problem);
    // As float32 the tensor needs numel x 4 bytes (saturating): refused above the memory budget.
    std::uint64_t bytes = sizeof(float);
    for (const std::size_t n : info->shape) bytes = n != 0 && bytes > UINT64_MAX / n ? UINT64_MAX : bytes * n;
    if (bytes > memory_budget())
        throw FileError(path_ + ": tensor '" + name + "' " + format_shape(info->shape) + " needs " + format_bytes(bytes) +
                        " as float32, over the memory budget of " + format_bytes(memory_budget()) +
                        "; pass a larger --memory-budget");
    return reader_->load(*info);
}

}  // namespace attnscope
