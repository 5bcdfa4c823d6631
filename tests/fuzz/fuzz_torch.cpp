// Fuzz target: torch.save archives (zip layout, the restricted pickle, storage geometry) through
// TensorSource, with every listed tensor loaded.
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    attnscope::fuzz::open_and_load_all(data, size, ".pt");
    return 0;
}
