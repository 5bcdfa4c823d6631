// A zip archive read by libzip straight from a memory-mapped file: the container of numpy's .npz
// and of torch.save's files.
//
// The sizes in the zip headers are never trusted: a member is read into a buffer of at most the
// size asked for, and reading it whole checks that it inflates to exactly its declared size (a
// zip bomb inflates past it). A zip_t is not thread-safe: each read borrows one of a pool of
// handles over the same mapped bytes, so threads read members at the same time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "io.hpp"

struct zip;

namespace attnscope {

struct ZipMember {
    std::uint64_t index = 0;
    std::string name;          // as in the archive: "acts/data/0", "x.npy"
    std::uint64_t size = 0;    // declared uncompressed size
    bool stored = false;       // not compressed: parts of it can be read without the bytes before
    Message problem;           // why it cannot be read (encrypted, unknown compression); empty when readable
};

class ZipArchive {
public:
    // FileError "path: not a readable .npz (zip archive): ..." when libzip refuses it. `kind` names
    // the expected file type in that message (Msg::kind_npz, kind_torch_save ...).
    static std::shared_ptr<ZipArchive> open(MappedFile file, const Message& kind);

    const std::string& path() const { return file_.path(); }
    const std::vector<ZipMember>& members() const { return members_; }
    const ZipMember* find(const std::string& name) const;  // nullptr when absent

    // The first `limit` bytes of a member (fewer when it ends first), inflated if deflated.
    std::vector<std::uint8_t> read_prefix(const ZipMember& member, std::size_t limit) const;
    // The whole member; FileError when it inflates to more or fewer bytes than it declares, or
    // declares more than max_bytes. label names the member in errors ("x.npz: member 'a.npy'").
    std::vector<std::uint8_t> read_all(const ZipMember& member, std::uint64_t max_bytes, const std::string& label) const;
    // Bytes [offset, offset + length) of a member into out (which holds length bytes). Stored
    // members are read from `offset` on; deflated ones are inflated from their start.
    void read_range(const ZipMember& member, std::uint64_t offset, std::size_t length, void* out,
                    const std::string& label) const;

    ~ZipArchive();
    ZipArchive(const ZipArchive&) = delete;
    ZipArchive& operator=(const ZipArchive&) = delete;

private:
    ZipArchive() = default;
    zip* open_handle() const;  // a new zip_t over file_; FileError when libzip refuses the bytes

    // A handle of the pool for the duration of one read.
    class Handle {
    public:
        explicit Handle(const ZipArchive& archive);
        ~Handle();
        Handle(const Handle&) = delete;
        Handle& operator=(const Handle&) = delete;
        zip* get() const { return handle_; }

    private:
        const ZipArchive& archive_;
        zip* handle_;
    };

    MappedFile file_;  // outlives every handle, which read from it
    std::vector<ZipMember> members_;
    mutable std::mutex mutex_;        // guards idle_
    mutable std::vector<zip*> idle_;  // handles not in use
};

}  // namespace attnscope
