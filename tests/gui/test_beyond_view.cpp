// The Beyond panel's window-free logic: tile progress, windows on the grid, cumulative FLOPs.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <set>

#include "logic/beyond_view.hpp"
#include "pipeline.hpp"
#include "run.hpp"

using namespace attnscope;
using namespace attnscope::ui;

TEST_CASE("beyond view: flash tiles fill row block by row block and causal tiles are skipped") {
    AttentionConfig c;
    c.batch = 1, c.tokens = 20, c.dim = 16, c.heads = 2, c.causal = true;
    c.path = AttentionPath::flash;
    c.tile_rows = 8, c.tile_cols = 8;
    const Trace t = run_attention(c);
    const FlashRecord& r = *t.beyond->flash;
    REQUIRE(r.tiles.size() == 9);
    auto s = tile_states(r, 0);
    CHECK(s[0] == TileState::Current);
    CHECK(s[1] == TileState::Pending);
    CHECK(finished_rows(r, 0) == 0);
    s = tile_states(r, 2);  // the first row of tiles: (0,0) done, (0,1) and (0,2) above the diagonal
    CHECK(s[0] == TileState::Done);
    CHECK(s[1] == TileState::Skipped);
    CHECK(s[2] == TileState::Current);
    CHECK(finished_rows(r, 2) == 8);
    CHECK(finished_rows(r, 8) == 20);
    s = tile_states(r, 8);
    CHECK(std::count(s.begin(), s.end(), TileState::Skipped) == 3);

    // The panel shows the grid as one picture, a pixel per tile.
    s = tile_states(r, 4);
    const RgbImage grid = cell_picture(r.row_blocks, r.col_blocks, 512, [&](std::size_t rb, std::size_t cb) {
        return tile_colour(s[rb * r.col_blocks + cb]);
    });
    REQUIRE((grid.width == 3 && grid.height == 3));
    const auto pixel = [&](std::size_t y, std::size_t x) {
        return std::array<std::uint8_t, 3>{grid.pixels[(y * 3 + x) * 3], grid.pixels[(y * 3 + x) * 3 + 1],
                                           grid.pixels[(y * 3 + x) * 3 + 2]};
    };
    CHECK(pixel(0, 0) == tile_colour(TileState::Done));
    CHECK(pixel(0, 2) == tile_colour(TileState::Skipped));
    CHECK(pixel(1, 1) == tile_colour(TileState::Current));
    CHECK(pixel(2, 0) == tile_colour(TileState::Pending));
    CHECK(tile_colour(TileState::Done) != tile_colour(TileState::Pending));
}

TEST_CASE("beyond view: the flash path chosen in the GUI gets tiles that N holds several of") {
    CHECK(flash_tile_for(16, 16) == 4);    // the default demo: 4 x 4 tiles instead of one
    CHECK(flash_tile_for(197, 16) == 16);  // ViT-B sizes keep the default
    CHECK(flash_tile_for(32, 16) == 16);
    CHECK(flash_tile_for(31, 16) == 7);
    CHECK(flash_tile_for(3, 16) == 1);
    CHECK(flash_tile_for(16, 0) == 4);
    for (std::size_t n = 1; n <= 64; ++n)
        for (std::size_t tile : {1, 4, 16, 64}) {
            const std::size_t t = flash_tile_for(n, tile);
            CHECK(t >= 1);
            if (n >= 4) CHECK(n / t >= 2);  // at least two tiles per side when N allows
        }
}

TEST_CASE("beyond view: a grid with more cells than pixels is sampled at each pixel's centre") {
    const auto colour = [](std::size_t row, std::size_t col) {
        return std::array<std::uint8_t, 3>{static_cast<std::uint8_t>(row % 256), static_cast<std::uint8_t>(row / 256),
                                           static_cast<std::uint8_t>(col)};
    };
    const RgbImage small = cell_picture(4, 7, 256, colour);  // one pixel per cell
    REQUIRE((small.width == 7 && small.height == 4));
    CHECK(small.pixels[(3 * 7 + 6) * 3 + 0] == 3);
    CHECK(small.pixels[(3 * 7 + 6) * 3 + 2] == 6);
    const RgbImage big = cell_picture(4097, 10, 256, colour);  // the causal mask of N = 4097, one axis
    REQUIRE((big.width == 10 && big.height == 256));
    const auto row_at = [&](std::size_t y) { return big.pixels[y * 10 * 3] + 256 * big.pixels[y * 10 * 3 + 1]; };
    CHECK(row_at(0) == 8);       // (2 * 0 + 1) * 4097 / 512
    CHECK(row_at(128) == 2056);  // 257 * 4097 / 512
    CHECK(row_at(255) == 4088);  // the last pixel's centre lies in the last 16 rows
    CHECK(big.pixels.size() == 256 * 10 * 3);
}

TEST_CASE("beyond view: every token is in exactly one window and the maps are inverse") {
    for (std::size_t shift : {0u, 2u}) {
        WindowRecord w;
        w.grid = 8, w.window = 4, w.shift = shift, w.windows = 4;
        std::multiset<std::size_t> counts;
        for (std::size_t win = 0; win < 4; ++win)
            for (std::size_t p = 0; p < 16; ++p) {
                std::size_t row = 0, col = 0;
                token_of_window(w, win, p, &row, &col);
                CHECK(window_of_token(w, row, col) == win);
                counts.insert(row * 8 + col);
            }
        CHECK(counts.size() == 64);
        CHECK(std::set<std::size_t>(counts.begin(), counts.end()).size() == 64);
    }
    WindowRecord w;
    w.grid = 8, w.window = 4, w.shift = 2, w.windows = 4;
    CHECK(window_of_token(w, 2, 2) == 0);  // the roll by -2 brings (2, 2) to the top-left corner
    CHECK(window_of_token(w, 0, 0) == 3);  // and the corner wraps around to the last window
}

TEST_CASE("beyond view: cumulative FLOPs with the cache stay below recomputing") {
    AttentionConfig c;
    c.batch = 1, c.tokens = 8, c.dim = 16, c.heads = 2;
    c.path = AttentionPath::kv_cache;
    const Trace t = run_attention(c);
    double cached = 0, recompute = 0;
    kv_cumulative_flops(*t.beyond->kv, 0, &cached, &recompute);
    CHECK(cached == recompute);  // the first token: nothing to reuse yet
    kv_cumulative_flops(*t.beyond->kv, 7, &cached, &recompute);
    CHECK(cached == double(t.beyond->kv->flops_cached));
    CHECK(cached < recompute);
}
