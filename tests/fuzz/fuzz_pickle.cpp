// Fuzz target: the restricted unpickler alone (core/files/pickle), on raw pickle bytes.
#include "fuzz_util.hpp"
#include "pickle.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    try {
        (void)attnscope::read_pickle(data, size, "fuzz.pkl");
    } catch (const attnscope::FileError&) {}
    return 0;
}
