// Shared by the fuzz targets: a small memory budget (a hostile header must be refused, not
// allocated) and a per-process temporary file for the readers that take a path.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "io.hpp"
#include "memory_budget.hpp"
#include "tensor_source.hpp"

namespace attnscope::fuzz {

// Every target reads under this budget: 64 MiB is far above the seed files and far below
// libFuzzer's 2 GB RSS limit, so "over the memory budget" is the expected answer to a lying header.
inline void init_budget() {
    static const bool once = (set_memory_budget(64ull << 20), true);
    (void)once;
}

// Writes the input to $TMPDIR/attnscope_fuzz_<pid><suffix> (overwritten by each input).
inline std::string write_temp(const std::uint8_t* data, std::size_t size, const char* suffix) {
    const char* dir = std::getenv("TMPDIR");
    const std::string path = std::string(dir && *dir ? dir : "/tmp") + "/attnscope_fuzz_" +
                             std::to_string(static_cast<long>(getpid())) + suffix;
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) std::abort();
    if (size && std::fwrite(data, 1, size, f) != size) std::abort();
    std::fclose(f);
    return path;
}

// The input as a tensor file with this suffix: open it, list it and load every tensor it lists.
// Readers may refuse it (FileError); anything else (a crash, a sanitizer report) is a bug.
inline void open_and_load_all(const std::uint8_t* data, std::size_t size, const char* suffix) {
    init_budget();
    try {
        const TensorSource source = TensorSource::open(write_temp(data, size, suffix));
        for (const TensorInfo& t : source.tensors()) {
            try {
                (void)source.load(t.name);
            } catch (const FileError&) {
            }
        }
    } catch (const FileError&) {
    }
}

}  // namespace attnscope::fuzz
