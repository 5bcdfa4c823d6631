// Images: decoding (stb_image), the model's resize and normalization, and PNG output.
//
// The resize is PyTorch's F.interpolate(x, size=(S, S), mode='bilinear', align_corners=False,
// antialias=False) on the image as floats in [0, 1]: each output pixel samples the input at
// (i + 0.5) * in / out - 0.5 (clamped at 0) between its two nearest neighbours per axis. There is
// no antialiasing, so a large photo shrunk to a small model size aliases, exactly as in PyTorch.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tensor.hpp"

namespace attnscope {

// 8-bit RGB, row-major [height, width, 3].
struct RgbImage {
    std::size_t width = 0, height = 0;
    std::vector<std::uint8_t> pixels;
};

// Decodes PNG, JPEG, BMP, GIF, TGA, PSD, HDR, PIC or PNM (stb_image); grey, grey + alpha and RGBA
// images are converted to RGB (alpha dropped), 16-bit ones to 8-bit. The decoded size is checked
// against the memory budget before decoding. FileError("path: ...") when the file cannot be read.
RgbImage load_image(const std::string& path, std::uint64_t memory_budget_bytes);

// [3, H, W] floats in [0, 1] (value / 255), like torchvision's ToTensor.
Array image_to_chw(const RgbImage& image);

// PyTorch's bilinear resize (align_corners=False, antialias=False).   x [C, H, W] -> [C, out_h, out_w]
Array resize_bilinear(const Array& x, std::size_t out_h, std::size_t out_w);

// (x - mean[c]) / std[c] per channel.   x [3, H, W] -> [3, H, W]
Array normalize_channels(const Array& x, const std::array<float, 3>& mean, const std::array<float, 3>& std);

// The model's input: resized to size x size, normalized, as a batch of one.   -> [1, 3, size, size]
Tensor image_to_pixels(const RgbImage& image, std::size_t size, const std::array<float, 3>& mean,
                       const std::array<float, 3>& std);

// Undoes the normalization of image `batch` of pixels [B, 3, H, W] (rounded, clamped to 0..255).
RgbImage pixels_to_image(const Array& pixels, std::size_t batch, const std::array<float, 3>& mean,
                         const std::array<float, 3>& std);

// Each pixel repeated factor x factor times (for showing a 64 x 64 image at 256 x 256).
RgbImage upscale_nearest(const RgbImage& image, std::size_t factor);

std::string encode_png(const RgbImage& image);                   // stb_image_write
void write_png(const std::string& path, const RgbImage& image);  // atomically (temporary file, rename)

}  // namespace attnscope
