// Images: decoding, PyTorch's bilinear resize (fixtures from tools/make_vit_golden.py),
// normalization and PNG output.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>

#include "image.hpp"
#include "io.hpp"
#include "run_attnscope.hpp"

using namespace attnscope;
using attnscope::testing::scratch_dir;
namespace fs = std::filesystem;

namespace {

const fs::path kResize = fs::path(ATTNSCOPE_TEST_DATA) / "vit" / "resize";
constexpr std::uint64_t kNoLimit = UINT64_MAX;

double max_abs_diff(const Array& a, const Array& b) {
    REQUIRE(shape_of(a) == shape_of(b));
    double worst = 0;
    for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(double(a.data()[i]) - b.data()[i]));
    return worst;
}

RgbImage gradient(std::size_t w, std::size_t h) {
    RgbImage image{w, h, std::vector<std::uint8_t>(w * h * 3)};
    for (std::size_t i = 0; i < image.pixels.size(); ++i) image.pixels[i] = static_cast<std::uint8_t>(i * 7 % 256);
    return image;
}

fs::path scratch(const std::string& name) { return scratch_dir("image", name, false); }

}  // namespace

TEST_CASE("bilinear resize equals torch F.interpolate(align_corners=False, antialias=False)") {
    for (const char* name : {"down", "up", "same"}) {
        CAPTURE(name);
        const RgbImage image = load_image((kResize / (std::string(name) + ".png")).string(), kNoLimit);
        const Array torch = read_npy((kResize / (std::string(name) + "_resized.npy")).string());
        const Array ours = resize_bilinear(image_to_chw(image), torch.shape()[1], torch.shape()[2]);
        CHECK(max_abs_diff(ours, torch) <= 1e-6);
    }
}

TEST_CASE("a resize to the same size is the identity and a constant image stays constant") {
    const Array x = image_to_chw(gradient(5, 4));
    CHECK(resize_bilinear(x, 4, 5) == x);
    Array flat = xt::full_like(x, 0.25f);
    const Array big = resize_bilinear(flat, 9, 13);
    CHECK(xt::amax(xt::abs(big - 0.25f))() <= 1e-7f);
    CHECK_THROWS_AS(resize_bilinear(x, 0, 3), ShapeError);
}

TEST_CASE("grey images become RGB, and undecodable or missing files are refused with their path") {
    const RgbImage gray = load_image((kResize / "gray.png").string(), kNoLimit);
    CHECK(gray.width == 11);
    CHECK(gray.height == 9);
    CHECK(max_abs_diff(image_to_chw(gray), read_npy((kResize / "gray.npy").string())) <= 1e-7);
    const std::string bad = (kResize / "not_an_image.png").string();
    CHECK_THROWS_WITH_AS(load_image(bad, kNoLimit), doctest::Contains((bad + ": cannot decode it as an image").c_str()), FileError);
    CHECK_THROWS_WITH_AS(load_image("/nonexistent/x.png", kNoLimit), "/nonexistent/x.png: no such file", FileError);
    CHECK_THROWS_WITH_AS(load_image((kResize / "down.png").string(), 1000),
                         doctest::Contains("a 50 x 37 image needs"), FileError);
    // A PNM whose header says 3 x 0 pixels (found by the image fuzzer; stb_image accepts it).
    const std::string empty = std::string(ATTNSCOPE_TEST_DATA) + "/../fuzz/corpus/image/crash-pnm-height-0.pgm";
    CHECK_THROWS_WITH_AS(load_image(empty, kNoLimit), doctest::Contains("the image is empty (3 x 0 pixels)"), FileError);
    // A PNM header whose pixel count times the bytes per pixel overflows 64 bits: over any budget.
    const std::string huge = std::string(ATTNSCOPE_TEST_DATA) + "/../fuzz/corpus/image/crash-pnm-size-overflow.pgm";
    CHECK_THROWS_WITH_AS(load_image(huge, kNoLimit), doctest::Contains("needs more than 16 EiB to load"), FileError);
    // A 16-bit grey PGM: stb_image's own grey -> RGB conversion of 16-bit PNM over-reads its buffer
    // (heap-buffer-overflow under an ASan build of stb), so attnscope converts the channels itself.
    const RgbImage grey16 = load_image(std::string(ATTNSCOPE_TEST_DATA) + "/../fuzz/corpus/image/grey16_3x2.pgm", kNoLimit);
    REQUIRE(grey16.width == 3);
    REQUIRE(grey16.height == 2);
    for (std::size_t i = 0; i < 6; ++i) {
        CHECK(grey16.pixels[i * 3] == grey16.pixels[i * 3 + 1]);
        CHECK(grey16.pixels[i * 3] == grey16.pixels[i * 3 + 2]);
    }
    CHECK(grey16.pixels[0] < grey16.pixels[5 * 3]);  // 0 ... 902: dark to light
}

TEST_CASE("image_to_pixels resizes, normalizes per channel and adds the batch axis; pixels_to_image undoes it") {
    const RgbImage image = gradient(16, 16);
    const std::array<float, 3> mean{0.5f, 0.4f, 0.3f}, std{0.2f, 0.25f, 0.3f};
    const Tensor pixels = image_to_pixels(image, 16, mean, std);
    REQUIRE(shape_of(pixels.values) == Shape{1, 3, 16, 16});
    CHECK(pixels.axes == Axes{"B", "3", "H", "W"});
    for (std::size_t c = 0; c < 3; ++c)
        CHECK(pixels.values(0, c, 2, 3) == doctest::Approx((image.pixels[(2 * 16 + 3) * 3 + c] / 255.0 - mean[c]) / std[c]));
    const RgbImage back = pixels_to_image(pixels.values, 0, mean, std);
    CHECK(back.pixels == image.pixels);
    CHECK_THROWS_AS(pixels_to_image(pixels.values, 1, mean, std), ShapeError);
}

TEST_CASE("PNGs are written atomically and read back equal; upscale_nearest repeats pixels") {
    const RgbImage image = gradient(7, 5);
    const fs::path path = scratch("roundtrip.png");
    write_png(path.string(), image);
    const RgbImage back = load_image(path.string(), kNoLimit);
    CHECK(back.width == 7);
    CHECK(back.height == 5);
    CHECK(back.pixels == image.pixels);
    const RgbImage big = upscale_nearest(image, 3);
    CHECK(big.width == 21);
    CHECK(big.height == 15);
    for (std::size_t c = 0; c < 3; ++c) CHECK(big.pixels[(8 * 21 + 20) * 3 + c] == image.pixels[(2 * 7 + 6) * 3 + c]);
    CHECK_THROWS_AS(write_png("/nonexistent/dir/x.png", image), FileError);
    fs::remove(path);
}
