// Fuzz target: the .safetensors reader (JSON header, offsets, dtypes) through TensorSource.
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    attnscope::fuzz::open_and_load_all(data, size, ".safetensors");
    return 0;
}
