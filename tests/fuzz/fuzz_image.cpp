// Fuzz target: load_image (stb_image behind the memory budget) and the model's resize of what
// it decoded.
#include "fuzz_util.hpp"
#include "image.hpp"
#include "io.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace attnscope;
    fuzz::init_budget();
    try {
        const RgbImage image = load_image(fuzz::write_temp(data, size, ".img"), 16ull << 20);
        (void)image_to_pixels(image, 8, {0.5f, 0.5f, 0.5f}, {0.25f, 0.25f, 0.25f});  // [1, 3, 8, 8]
    } catch (const FileError&) {}
    return 0;
}
