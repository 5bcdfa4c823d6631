// What the ViT tests share: the tolerance of their PyTorch comparisons, reading a JSON fixture, and
// cutting the held-out mosaic into its pictures.
#pragma once

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "image.hpp"
#include "tensor.hpp"

namespace attnscope::testing {

inline nlohmann::json read_json(const std::filesystem::path& p) {
    std::ifstream in(p);
    REQUIRE(in.good());
    return nlohmann::json::parse(in);
}

// The tolerance of the PyTorch comparison: |ours - torch| <= 1e-4 * max(|torch|, 0.01), i.e. 1e-4
// relative for values from 0.01 up, 1e-6 absolute below. Returns the worst ratio to that bound.
inline double worst_vs_torch(const Array& ours, const Array& torch) {
    REQUIRE(shape_of(ours) == shape_of(torch));
    double worst = 0;
    for (std::size_t i = 0; i < ours.size(); ++i) {
        const double t = torch.data()[i], d = std::fabs(double(ours.data()[i]) - t);
        worst = std::max(worst, d / (1e-4 * std::max(std::fabs(t), 0.01)));
    }
    return worst;
}

// Picture i of a mosaic of tile x tile pictures, `columns` to a row.
inline RgbImage mosaic_tile(const RgbImage& mosaic, std::size_t tile, std::size_t columns, std::size_t i) {
    RgbImage image;
    image.width = image.height = tile;
    for (std::size_t y = 0; y < tile; ++y) {
        const std::size_t row = (i / columns) * tile + y, col = (i % columns) * tile;
        const auto* src = &mosaic.pixels[(row * mosaic.width + col) * 3];
        image.pixels.insert(image.pixels.end(), src, src + tile * 3);
    }
    return image;
}

}  // namespace attnscope::testing
