// What the ViT tests share: the tolerances of their PyTorch comparisons, seeded random inputs,
// reading a JSON fixture, edited copies of a checkpoint and the refusal they get, and cutting the
// held-out mosaic into its pictures.
#pragma once

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <unistd.h>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "image.hpp"
#include "io.hpp"
#include "random.hpp"
#include "tensor.hpp"
#include "vit.hpp"

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

using Tensors = std::vector<std::pair<std::string, Array>>;
using Metadata = std::map<std::string, std::string>;

// A safetensors copy of `path` with `edit` applied to its tensors (name -> array) and metadata.
template <typename Edit>
std::filesystem::path edited_copy(const std::filesystem::path& path, const std::string& name, Edit edit) {
    const SafetensorsFile f = SafetensorsFile::open(path.string());
    Tensors tensors;
    for (const auto& e : f.entries())
        if (is_float_dtype(e.dtype)) tensors.emplace_back(e.name, f.load(e.name));
    Metadata metadata = f.metadata();
    edit(tensors, metadata);
    const std::filesystem::path out =
        std::filesystem::temp_directory_path() / ("attnscope_vit_" + std::to_string(::getpid()) + "_" + name);
    write_safetensors(out.string(), tensors, metadata);
    return out;
}

// Loads path (no memory limit unless given) and expects a FileError whose message contains `phrase`.
inline void refused(const std::filesystem::path& path, const std::string& phrase,
                    std::optional<std::size_t> heads = std::nullopt, std::uint64_t budget = UINT64_MAX) {
    CHECK_THROWS_WITH_AS(load_vit_model(path.string(), heads, budget), doctest::Contains(phrase.c_str()), FileError);
}

// The tolerance of whole-tensor comparisons of activations, where sums of large terms cancel:
// max |ours - torch| <= 2e-5 * max(1, max |torch|). Returns the worst ratio to that bound.
inline double worst_vs_torch_scale(const Array& ours, const Array& torch) {
    REQUIRE(shape_of(ours) == shape_of(torch));
    double diff = 0, scale = 1;
    for (std::size_t i = 0; i < ours.size(); ++i) {
        diff = std::max(diff, std::fabs(double(ours.data()[i]) - torch.data()[i]));
        scale = std::max(scale, std::fabs(double(torch.data()[i])));
    }
    return diff / (2e-5 * scale);
}

// N(0, 1) values of this shape from the seed (stream 0), with these axis labels.
inline Tensor random_tensor(const Shape& shape, Axes axes, std::uint64_t seed) {
    Tensor t{make_array(shape), std::move(axes)};
    Rng rng(seed, 0);
    for (float& v : t.values) v = rng.normal();
    return t;
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
