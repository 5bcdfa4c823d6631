#include "zip_archive.hpp"

#include <algorithm>

#include <zip.h>

#include "config.hpp"

namespace attnscope {

namespace {

// An open member, closed on every path out.
class OpenMember {
public:
    // A stored member is opened raw (ZIP_FL_COMPRESSED: its bytes as they are in the archive), which
    // skips libzip's CRC pass over every byte read (torch.save stores its storages; a corrupted byte
    // then shows as a wrong value, not as an error). A deflated member is inflated and its CRC checked.
    OpenMember(zip_t* archive, const ZipMember& m, const std::string& label)
        : file_(zip_fopen_index(archive, m.index, m.stored ? ZIP_FL_COMPRESSED : 0)) {
        if (!file_) throw FileError(Message(Msg::zip_member_cannot_open, {{"file", label}, {"reason", zip_strerror(archive)}}));
    }
    ~OpenMember() { zip_fclose(file_); }
    OpenMember(const OpenMember&) = delete;
    OpenMember& operator=(const OpenMember&) = delete;

    // Reads up to `length` bytes; fewer only at the member's end.
    std::size_t read(void* out, std::size_t length, const std::string& label) {
        auto* bytes = static_cast<std::uint8_t*>(out);
        std::size_t done = 0;
        while (done < length) {
            const zip_int64_t n = zip_fread(file_, bytes + done, length - done);
            if (n < 0) throw FileError(Message(Msg::zip_member_cannot_read, {{"file", label}, {"reason", zip_file_strerror(file_)}}));
            if (n == 0) break;
            done += static_cast<std::size_t>(n);
        }
        return done;
    }

    // Moves to `offset` (stored members), or reads and drops the bytes before it.
    void skip_to(std::uint64_t offset, bool stored, const std::string& label) {
        if (offset == 0) return;
        if (stored && zip_fseek(file_, static_cast<zip_int64_t>(offset), SEEK_SET) == 0) return;
        std::vector<std::uint8_t> sink(std::min<std::uint64_t>(offset, 1 << 20));
        for (std::uint64_t left = offset; left > 0;) {
            const std::size_t chunk = static_cast<std::size_t>(std::min<std::uint64_t>(left, sink.size()));
            if (read(sink.data(), chunk, label) != chunk)
                throw FileError(Message(Msg::zip_member_truncated_before, {{"file", label}, {"offset", std::to_string(offset)}}));
            left -= chunk;
        }
    }

private:
    zip_file_t* file_;
};

}  // namespace

zip* ZipArchive::open_handle() const {
    zip_error_t error;
    zip_error_init(&error);
    zip_source_t* source = zip_source_buffer_create(file_.data(), file_.size(), 0, &error);
    zip_t* archive = source ? zip_open_from_source(source, ZIP_RDONLY | ZIP_CHECKCONS, &error) : nullptr;
    if (!archive) {
        const std::string why = zip_error_strerror(&error);
        zip_error_fini(&error);
        if (source) zip_source_free(source);
        throw FileError(why);  // libzip's words, which the callers quote as the reason
    }
    zip_error_fini(&error);
    return archive;
}

ZipArchive::Handle::Handle(const ZipArchive& archive) : archive_(archive), handle_(nullptr) {
    {
        std::lock_guard<std::mutex> lock(archive_.mutex_);
        if (!archive_.idle_.empty()) {
            handle_ = archive_.idle_.back();
            archive_.idle_.pop_back();
        }
    }
    if (handle_) return;
    try {
        handle_ = archive_.open_handle();  // the bytes were accepted before: this fails only without memory
    } catch (const FileError& e) {
        throw FileError(Message(Msg::zip_reopen, {{"file", archive_.path()}, {"reason", e.what()}}));
    }
}

ZipArchive::Handle::~Handle() {
    std::lock_guard<std::mutex> lock(archive_.mutex_);
    archive_.idle_.push_back(handle_);
}

std::shared_ptr<ZipArchive> ZipArchive::open(MappedFile file, const Message& kind) {
    std::shared_ptr<ZipArchive> z(new ZipArchive());
    z->file_ = std::move(file);
    const std::string& path = z->file_.path();
    if (z->file_.size() < 4 || z->file_.data()[0] != 'P' || z->file_.data()[1] != 'K')
        throw FileError(Message(Msg::zip_not_zip, {{"file", path}}).with("kind", kind));
    zip_t* archive = nullptr;
    try {
        archive = z->open_handle();
    } catch (const FileError& e) {
        throw FileError(Message(Msg::zip_unreadable, {{"file", path}, {"reason", e.what()}}).with("kind", kind));
    }
    z->idle_.push_back(archive);

    const zip_int64_t count = zip_get_num_entries(archive, 0);
    for (zip_int64_t i = 0; i < count; ++i) {
        zip_stat_t st;
        zip_stat_init(&st);
        if (zip_stat_index(archive, static_cast<zip_uint64_t>(i), 0, &st) != 0 || !st.name)
            throw FileError(Message(Msg::zip_entry_unreadable,
                                    {{"file", path}, {"index", std::to_string(i)}, {"reason", zip_strerror(archive)}}));
        ZipMember m;
        m.index = static_cast<std::uint64_t>(i);
        m.name = st.name;
        m.size = st.size;
        m.stored = st.comp_method == ZIP_CM_STORE;
        const std::string label = path + ": member '" + m.name + "'";
        if (st.encryption_method != ZIP_EM_NONE)
            m.problem = Message(Msg::zip_member_encrypted, {{"file", label}});
        else if (st.comp_method != ZIP_CM_STORE && st.comp_method != ZIP_CM_DEFLATE)
            m.problem = Message(Msg::zip_member_compression, {{"file", label}, {"method", std::to_string(st.comp_method)}});
        z->members_.push_back(std::move(m));
    }
    return z;
}

ZipArchive::~ZipArchive() {
    for (zip* handle : idle_) zip_discard(handle);
}

const ZipMember* ZipArchive::find(const std::string& name) const {
    const auto it = std::find_if(members_.begin(), members_.end(), [&](const ZipMember& m) { return m.name == name; });
    return it == members_.end() ? nullptr : &*it;
}

std::vector<std::uint8_t> ZipArchive::read_prefix(const ZipMember& m, std::size_t limit) const {
    const std::string label = path() + ": member '" + m.name + "'";
    if (!m.problem.empty()) throw FileError(m.problem);
    const Handle handle(*this);
    OpenMember file(handle.get(), m, label);
    std::vector<std::uint8_t> bytes(limit);
    bytes.resize(file.read(bytes.data(), limit, label));
    return bytes;
}

std::vector<std::uint8_t> ZipArchive::read_all(const ZipMember& m, std::uint64_t max_bytes,
                                               const std::string& label) const {
    if (m.size > max_bytes)
        throw FileError(Message(Msg::zip_member_over_limit,
                                {{"file", label}, {"size", format_bytes(m.size)}, {"limit", format_bytes(max_bytes)}}));
    const std::size_t size = static_cast<std::size_t>(m.size);
    const std::vector<std::uint8_t> bytes = read_prefix(m, size + 1);  // one byte more reveals a bomb
    if (bytes.size() > size)
        throw FileError(Message(Msg::zip_member_bomb, {{"file", label}, {"size", std::to_string(size)}}));
    if (bytes.size() < size)
        throw FileError(Message(Msg::zip_member_truncated,
                                {{"file", label}, {"has", std::to_string(bytes.size())}, {"size", std::to_string(size)}}));
    return bytes;
}

void ZipArchive::read_range(const ZipMember& m, std::uint64_t offset, std::size_t length, void* out,
                            const std::string& label) const {
    if (!m.problem.empty()) throw FileError(m.problem);
    if (offset > m.size || length > m.size - offset)
        throw FileError(Message(Msg::zip_member_range_past_end, {{"file", label},
                                                                 {"begin", std::to_string(offset)},
                                                                 {"end", std::to_string(offset + length)},
                                                                 {"size", std::to_string(m.size)}}));
    const Handle handle(*this);
    OpenMember file(handle.get(), m, label);
    file.skip_to(offset, m.stored, label);
    if (file.read(out, length, label) != length)
        throw FileError(Message(Msg::zip_member_ends_before, {{"file", label}, {"offset", std::to_string(offset + length)}}));
}

}  // namespace attnscope
