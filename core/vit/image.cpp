// Images: stb_image decoding, PyTorch's bilinear resize, normalization, PNG output.
// (libstb holds the stb implementations: never define STB_*_IMPLEMENTATION here.)
#include "image.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>

#include <stb_image.h>
#include <stb_image_write.h>

#include "config.hpp"
#include "io.hpp"

namespace attnscope {

namespace {

// The input coordinate output index i samples: PyTorch's area_pixel_compute_source_index with
// align_corners=False, then its two neighbours and the weight of the second.
struct Sample {
    std::size_t i0, i1;
    float w1;
};

std::vector<Sample> bilinear_samples(std::size_t in, std::size_t out) {
    const float scale = static_cast<float>(in) / static_cast<float>(out);
    std::vector<Sample> samples(out);
    for (std::size_t i = 0; i < out; ++i) {
        const float src = std::max(0.0f, scale * (static_cast<float>(i) + 0.5f) - 0.5f);
        const auto i0 = static_cast<std::size_t>(src);  // floor: src >= 0
        samples[i] = {i0, i0 + 1 < in ? i0 + 1 : i0, src - static_cast<float>(i0)};
    }
    return samples;
}

// Why stb_image refused the file: "cannot decode it as an image (bad png sig)"; the message without
// a reason when stb_image gives none. `format`: the file is no format stb_image knows (then the
// message names those it reads).
FileError decode_problem(const std::string& path, bool format) {
    const char* reason = stbi_failure_reason();
    if (reason && *reason)
        return FileError(Message(format ? Msg::image_unknown_format : Msg::image_undecodable, {{"file", path}, {"reason", reason}}));
    return FileError(Message(format ? Msg::image_unknown_format_no_reason : Msg::image_undecodable_no_reason, {{"file", path}}));
}

}  // namespace

RgbImage load_image(const std::string& path, std::uint64_t memory_budget) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) throw FileError(Message(Msg::image_missing, {{"file", path}}));
    int w = 0, h = 0, channels = 0;
    if (!stbi_info(path.c_str(), &w, &h, &channels))
        throw decode_problem(path, true);
    // stb_image accepts a PNM header of height 0 (found by tests/fuzz/fuzz_image.cpp): no pixels.
    auto require_pixels = [&] {
        if (w <= 0 || h <= 0)
            throw FileError(Message(Msg::image_empty, {{"file", path}, {"width", std::to_string(w)}, {"height", std::to_string(h)}}));
    };
    require_pixels();
    // 8-bit RGB, then [3, H, W] floats twice (before and after normalization)
    // Saturating: a PNM header may claim 2^31 x 2^31 pixels, whose bytes overflow 64 bits (fuzz_image).
    auto bytes_for = [](int width, int height) -> std::uint64_t {
        const std::uint64_t pixels = static_cast<std::uint64_t>(width) * static_cast<std::uint64_t>(height);
        const std::uint64_t per_pixel = 3 + 2 * 3 * sizeof(float);
        return pixels > UINT64_MAX / per_pixel ? UINT64_MAX : pixels * per_pixel;
    };
    const std::uint64_t need = bytes_for(w, h);
    if (need > memory_budget || need == UINT64_MAX)
        throw FileError(Message(Msg::image_over_budget, {{"file", path},
                                                         {"width", std::to_string(w)},
                                                         {"height", std::to_string(h)},
                                                         {"needs", format_bytes(need)},
                                                         {"budget", format_bytes(memory_budget)}}));
    // The file's own channels (req_comp 0), converted to RGB below: Debian's stb_image (2022-09)
    // converts a 16-bit PNM to 3 channels with its 8-bit routine and then reads twice the buffer
    // (a heap over-read, SEGV under fuzz_image on "P5 3 9053 902").
    std::unique_ptr<stbi_uc, void (*)(void*)> data(stbi_load(path.c_str(), &w, &h, &channels, 0), stbi_image_free);
    if (!data) throw decode_problem(path, false);
    require_pixels();  // the decoder's size, which the budget check above took from the header
    if (bytes_for(w, h) > need)
        throw FileError(Message(Msg::image_larger_than_header,
                                {{"file", path}, {"width", std::to_string(w)}, {"height", std::to_string(h)}}));
    RgbImage image;
    image.width = static_cast<std::size_t>(w);
    image.height = static_cast<std::size_t>(h);
    if (channels < 1 || channels > 4)
        throw FileError(Message(Msg::image_channels, {{"file", path}, {"channels", std::to_string(channels)}}));
    const std::size_t n = image.width * image.height, k = static_cast<std::size_t>(channels);
    image.pixels.resize(n * 3);
    for (std::size_t i = 0; i < n; ++i)  // grey (+ alpha) -> RGB; RGB(A) -> RGB; alpha dropped
        for (std::size_t c = 0; c < 3; ++c) image.pixels[i * 3 + c] = data.get()[i * k + (k < 3 ? 0 : c)];
    return image;
}

Array image_to_chw(const RgbImage& image) {
    const std::size_t H = image.height, W = image.width;
    Array x = make_array({3, H, W});
    for (std::size_t y = 0; y < H; ++y)
        for (std::size_t col = 0; col < W; ++col)
            for (std::size_t c = 0; c < 3; ++c)
                x.data()[(c * H + y) * W + col] = image.pixels[(y * W + col) * 3 + c] / 255.0f;
    return x;
}

Array resize_bilinear(const Array& x, std::size_t out_h, std::size_t out_w) {
    const Shape xs = shape_of(x);
    if (xs.size() != 3 || xs[1] == 0 || xs[2] == 0 || out_h == 0 || out_w == 0)
        throw ShapeError(Message(Msg::image_resize, {{"shape", format_shape(xs)}, {"height", std::to_string(out_h)},
                                                     {"width", std::to_string(out_w)}}));
    const std::size_t C = xs[0], H = xs[1], W = xs[2];
    const std::vector<Sample> rows = bilinear_samples(H, out_h), cols = bilinear_samples(W, out_w);
    Array y = make_array({C, out_h, out_w});
    float* out = y.data();
    for (std::size_t c = 0; c < C; ++c)
        for (const Sample& r : rows) {
            const float* row0 = x.data() + (c * H + r.i0) * W;
            const float* row1 = x.data() + (c * H + r.i1) * W;
            for (const Sample& s : cols)  // the order of PyTorch's upsample_bilinear2d kernel
                *out++ = (1.0f - r.w1) * ((1.0f - s.w1) * row0[s.i0] + s.w1 * row0[s.i1]) +
                         r.w1 * ((1.0f - s.w1) * row1[s.i0] + s.w1 * row1[s.i1]);
        }
    return y;
}

Array normalize_channels(const Array& x, const std::array<float, 3>& mean, const std::array<float, 3>& std) {
    const Shape xs = shape_of(x);
    if (xs.size() != 3 || xs[0] != 3)
        throw ShapeError(Message(Msg::image_normalize, {{"shape", format_shape(xs)}}));
    Array y = make_array(xs);
    const std::size_t plane = xs[1] * xs[2];
    for (std::size_t c = 0; c < 3; ++c)
        for (std::size_t i = 0; i < plane; ++i) y.data()[c * plane + i] = (x.data()[c * plane + i] - mean[c]) / std[c];
    return y;
}

Tensor image_to_pixels(const RgbImage& image, std::size_t size, const std::array<float, 3>& mean,
                       const std::array<float, 3>& std) {
    Array x = normalize_channels(resize_bilinear(image_to_chw(image), size, size), mean, std);  // [3, S, S]
    x.reshape({1, 3, size, size});
    return Tensor{std::move(x), {"B", "3", "H", "W"}};
}

RgbImage pixels_to_image(const Array& pixels, std::size_t batch, const std::array<float, 3>& mean,
                         const std::array<float, 3>& std) {
    const Shape ps = shape_of(pixels);
    if (ps.size() != 4 || ps[1] != 3 || batch >= ps[0])
        throw ShapeError(Message(Msg::image_from_pixels, {{"index", std::to_string(batch)}, {"shape", format_shape(ps)}}));
    RgbImage image;
    image.height = ps[2];
    image.width = ps[3];
    image.pixels.resize(image.width * image.height * 3);
    const std::size_t plane = image.width * image.height;
    for (std::size_t c = 0; c < 3; ++c)
        for (std::size_t i = 0; i < plane; ++i) {
            const float v = (pixels.data()[(batch * 3 + c) * plane + i] * std[c] + mean[c]) * 255.0f;
            image.pixels[i * 3 + c] = static_cast<std::uint8_t>(std::clamp(std::round(v), 0.0f, 255.0f));
        }
    return image;
}

RgbImage upscale_nearest(const RgbImage& image, std::size_t factor) {
    RgbImage big;
    big.width = image.width * factor;
    big.height = image.height * factor;
    big.pixels.resize(big.width * big.height * 3);
    for (std::size_t y = 0; y < big.height; ++y)
        for (std::size_t x = 0; x < big.width; ++x)
            std::copy_n(&image.pixels[((y / factor) * image.width + x / factor) * 3], 3,
                        &big.pixels[(y * big.width + x) * 3]);
    return big;
}

std::string encode_png(const RgbImage& image) {
    std::string bytes;
    auto append = [](void* context, void* data, int size) {
        static_cast<std::string*>(context)->append(static_cast<const char*>(data), static_cast<std::size_t>(size));
    };
    if (!stbi_write_png_to_func(append, &bytes, static_cast<int>(image.width), static_cast<int>(image.height), 3,
                                image.pixels.data(), static_cast<int>(image.width * 3)))
        throw FileError(Message(Msg::image_encode_png, {{"width", std::to_string(image.width)}, {"height", std::to_string(image.height)}}));
    return bytes;
}

void write_png(const std::string& path, const RgbImage& image) { write_file_atomic(path, encode_png(image)); }

}  // namespace attnscope
