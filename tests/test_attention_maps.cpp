// Attention on the picture: head selection and fusion, rollout against NumPy
// (tools/make_vit_golden.py), the patch grid, and the heat overlay.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>

#include <xtensor/xview.hpp>

#include "attention_maps.hpp"
#include "io.hpp"

using namespace attnscope;
namespace fs = std::filesystem;

namespace {

const fs::path kRollout = fs::path(ATTNSCOPE_TEST_DATA) / "vit" / "rollout";

std::vector<Array> rollout_blocks() {
    std::vector<Array> attns;
    for (int b = 0; b < 3; ++b) attns.push_back(read_npy((kRollout / ("block" + std::to_string(b) + "_attn.npy")).string()));
    return attns;
}

}  // namespace

TEST_CASE("head_attention picks one head and fuse_heads takes the mean, max or min per entry") {
    const Array attn = rollout_blocks()[0];  // [1, 3, 10, 10]
    const Array h1 = head_attention(attn, 0, 1);
    const Array mean = fuse_heads(attn, 0, HeadFusion::mean), max = fuse_heads(attn, 0, HeadFusion::max),
                min = fuse_heads(attn, 0, HeadFusion::min);
    for (std::size_t i = 0; i < 10; ++i)
        for (std::size_t j = 0; j < 10; ++j) {
            const float a = attn(0, 0, i, j), b = attn(0, 1, i, j), c = attn(0, 2, i, j);
            CHECK(h1(i, j) == b);
            CHECK(mean(i, j) == doctest::Approx((a + b + c) / 3.0).epsilon(1e-6));
            CHECK(max(i, j) == std::max({a, b, c}));
            CHECK(min(i, j) == std::min({a, b, c}));
        }
    CHECK_THROWS_WITH_AS(head_attention(attn, 0, 3), "head_attention: head 3 is out of range for 3 heads", ShapeError);
    CHECK_THROWS_AS(fuse_heads(attn, 1, HeadFusion::mean), ShapeError);
    CHECK(parse_head_fusion("max") == HeadFusion::max);
    CHECK(std::string(head_fusion_name(HeadFusion::min)) == "min");
    CHECK_THROWS_AS(parse_head_fusion("sum"), ConfigError);
}

TEST_CASE("rollout equals NumPy's (identity added, rows renormalized) for mean, max and min fusion") {
    const std::vector<Array> attns = rollout_blocks();
    const std::vector<const Array*> pointers{&attns[0], &attns[1], &attns[2]};
    for (HeadFusion fusion : {HeadFusion::mean, HeadFusion::max, HeadFusion::min}) {
        CAPTURE(head_fusion_name(fusion));
        const Array numpy = read_npy((kRollout / ("rollout_" + std::string(head_fusion_name(fusion)) + ".npy")).string());
        const Array ours = attention_rollout(pointers, 0, fusion);
        REQUIRE(shape_of(ours) == Shape{10, 10});
        CHECK(xt::amax(xt::abs(ours - numpy))() <= 1e-6f);
        // Every row is a distribution, also for max and min (vit-explain issue #16).
        for (std::size_t i = 0; i < 10; ++i) CHECK(double(xt::sum(xt::row(ours, i))()) == doctest::Approx(1.0).epsilon(1e-5));
    }
    CHECK_THROWS_AS(attention_rollout({}, 0, HeadFusion::mean), ShapeError);
    const Array other = xt::ones<float>({1, 3, 5, 5});
    CHECK_THROWS_WITH_AS(attention_rollout({&attns[0], &other}, 0, HeadFusion::mean),
                         doctest::Contains("every block needs the same square [N, N]"), ShapeError);
}

TEST_CASE("token_map lays a query's row over the patches on the grid, without the class token") {
    const PatchGrid grid{3, 3, 8};  // 9 patches + class token = 10 tokens
    CHECK(grid.tokens() == 10);
    CHECK(grid.token(2, 1) == 8);
    Array matrix = make_array({10, 10});
    for (std::size_t i = 0; i < matrix.size(); ++i) matrix.data()[i] = static_cast<float>(i);
    const Array map = token_map(matrix, 4, grid);
    REQUIRE(shape_of(map) == Shape{3, 3});
    for (std::size_t r = 0; r < 3; ++r)
        for (std::size_t c = 0; c < 3; ++c) CHECK(map(r, c) == matrix(4, grid.token(r, c)));
    CHECK_THROWS_AS(token_map(matrix, 10, grid), ShapeError);
    CHECK_THROWS_AS(token_map(make_array({10, 17}), 0, grid), ShapeError);
}

TEST_CASE("heat_overlay colours each patch by its share of the max and keeps the image at opacity 0") {
    RgbImage image{8, 4, std::vector<std::uint8_t>(8 * 4 * 3, 100)};
    Array map = xt::zeros<float>({std::size_t{2}, std::size_t{4}});
    map(1, 3) = 2.0f;  // the hottest cell: bottom right, pixels x 6..7, y 2..3
    map(0, 0) = 1.0f;
    CHECK(heat_overlay(image, map, 0.0f).pixels == image.pixels);
    const RgbImage hot = heat_overlay(image, map, 1.0f);
    auto pixel = [&](std::size_t x, std::size_t y, std::size_t c) { return hot.pixels[(y * 8 + x) * 3 + c]; };
    CHECK(pixel(7, 3, 0) >= 250);  // pale yellow at the max
    CHECK(pixel(7, 3, 1) >= 250);
    CHECK(pixel(6, 2, 0) == pixel(7, 3, 0));  // the same cell, the same colour
    CHECK(pixel(3, 0, 0) == 70);  // zero: black at a = 0.3 over the grey 100
    CHECK(pixel(0, 0, 0) > pixel(3, 0, 0));
    CHECK(pixel(0, 0, 0) < pixel(7, 3, 0));
    const RgbImage half = heat_overlay(image, map, 0.5f);  // a = 0.5 * (0.3 + 0.7 * 0.5) at the half-max cell
    CHECK(half.pixels[0 * 3 + 2] == doctest::Approx(0.325 * (hot.pixels[2] - 0.35 * 100) / 0.65 + 0.675 * 100).epsilon(0.02));
    CHECK_THROWS_AS(heat_overlay(image, xt::zeros<float>({std::size_t{0}, std::size_t{3}})), ShapeError);
}
