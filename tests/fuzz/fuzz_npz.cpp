// Fuzz target: the .npz reader (libzip over the mapped bytes; stored and deflated members).
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    attnscope::fuzz::open_and_load_all(data, size, ".npz");
    return 0;
}
