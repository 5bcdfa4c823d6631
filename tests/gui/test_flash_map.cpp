// The Attention map panel's window-free logic (logic/flash_map): which picture a viewport needs,
// and that the pictures (exact tiles and overview, each cell a block max) equal the standard
// path's attn.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "logic/flash_map.hpp"
#include "pipeline.hpp"
#include "run.hpp"

using namespace attnscope;
using namespace attnscope::ui;

namespace {

// max of ref[r0 + i f .., c0 + j f ..] over f x f cells (clipped at r1, c1): the picture a plan expects
std::vector<float> expected_picture(const float* ref, std::size_t N, const MapPlan& p) {
    std::vector<float> out(p.rows() * p.cols(), 0.0f);
    for (std::size_t i = p.r0; i < p.r1; ++i)
        for (std::size_t j = p.c0; j < p.c1; ++j) {
            float& cell = out[((i - p.r0) / p.factor) * p.cols() + (j - p.c0) / p.factor];
            cell = std::max(cell, ref[i * N + j]);
        }
    return out;
}

double worst(const std::vector<float>& a, const std::vector<float>& b) {
    REQUIRE(a.size() == b.size());
    double w = 0.0;
    for (std::size_t i = 0; i < a.size(); ++i) w = std::max(w, std::abs(double(a[i]) - double(b[i])));
    return w;
}

}  // namespace

TEST_CASE("flash map: the overview when zoomed out and exact tiles of the visible cells when zoomed in") {
    // N = 4097 in 300 pixels: the overview (blocks of 9), two blocks per pixel
    const std::size_t N = 4097, block = overview_block(N, kOverviewMaxCells);
    MapPlan p = plan_viewport(N, block, 0, 0, float(N), float(N), 300, 300);
    CHECK_FALSE(p.exact);
    CHECK(p.factor == 18);
    CHECK(p.rows() * p.factor >= N);
    CHECK(p.rows() <= 300);
    // 1000 cells visible: exact, 4 weights per pixel side, the region aligned to 4
    p = plan_viewport(N, block, 2049.5f, 10.2f, 1000, 1000, 300, 300);
    CHECK(p.exact);
    CHECK(p.factor == 4);
    CHECK(p.r0 == 8);
    CHECK(p.c0 == 2048);
    CHECK(p.r1 >= 1011);
    CHECK(p.c1 == 3052);
    // 128 cells: one weight per cell
    p = plan_viewport(N, block, 4000, 4000, 97, 97, 300, 300);
    CHECK(p.exact);
    CHECK(p.factor == 1);
    CHECK(p.r1 == N);
    // while tiles are computed: the overview's plan of the same place
    p = plan_viewport(N, block, 4000, 4000, 97, 97, 300, 300, false);
    CHECK_FALSE(p.exact);
    CHECK(p.factor % block == 0);
    // small maps are always exact
    CHECK(plan_viewport(197, 1, 0, 0, 197, 197, 150, 150).exact);
}

TEST_CASE("flash map: exact pictures and the overview equal the block max of the standard attn") {
    AttentionConfig c;
    c.batch = 1, c.tokens = 600, c.dim = 32, c.heads = 2, c.causal = true, c.seed = 3;
    const Trace standard = run_attention(c);
    c.path = AttentionPath::flash;
    const Trace flash = run_attention(c);
    const FlashAttentionSource src = flash_attention_source(flash);
    REQUIRE(src.ok());
    const std::size_t N = c.tokens;
    const float* ref = standard.at("attn").tensor().values.data() + N * N;  // head 1
    FlashMap map;
    // the overview, a few bands per call (budget 0: one band per call)
    std::size_t calls = 0;
    while (!map.advance_overview(src, 0, 1, 0.0)) ++calls;
    CHECK(calls > 1);
    CHECK(map.overview_block() == 2);
    const MapPlan whole = plan_viewport(N, map.overview_block(), 0, 0, float(N), float(N), 100, 100, false);
    REQUIRE_FALSE(whole.exact);
    CHECK(worst(map.overview_picture(whole).values, expected_picture(ref, N, whole)) <= 1e-5);
    // exact views spanning several 256 x 256 tiles, with and without downsampling
    for (float side : {600.0f, 300.0f, 37.0f}) {
        CAPTURE(side);
        map.reset();  // an empty cache: every tile of the view computed here
        const MapPlan p =
            plan_viewport(N, map.overview_block(), 250.3f * (600 - side) / 600, 100, side, side, 200, 200);
        REQUIRE(p.exact);
        CHECK(map.missing_tiles(0, 1, p) > 0);
        CHECK(map.exact_picture(N, 0, 1, p).empty());  // nothing before the tiles are there
        while (map.compute_tiles(src, 0, 1, p, 0.0) > 0) {}
        CHECK(map.missing_tiles(0, 1, p) == 0);
        const Slice2D picture = map.exact_picture(N, 0, 1, p);
        REQUIRE(picture.rows == p.rows());
        REQUIRE(picture.cols == p.cols());
        CHECK(worst(picture.values, expected_picture(ref, N, p)) <= 1e-5);
    }
    CHECK(map.cache().bytes() <= map.cache().byte_cap());
    CHECK(map.cache().size() > 0);
    map.reset();
    CHECK(map.cache().size() == 0);
    CHECK_FALSE(map.overview_done());
}
