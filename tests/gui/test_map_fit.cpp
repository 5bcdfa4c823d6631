// How large heatmaps are drawn (app/gui/logic/map_fit): the inspector's map and its colour bar, the
// heads grid filling its panel, presentation mode's slide.
#include <doctest/doctest.h>

#include <initializer_list>

#include "logic/map_fit.hpp"

using namespace attnscope::ui;

TEST_CASE("map fit: stretched_map keeps the cells' aspect within the stretch and touches two sides") {
    const MapSize square = stretched_map(16, 16, 400, 300, 1.0f);
    CHECK(square.w == 300);
    CHECK(square.h == 300);
    const MapSize some = stretched_map(16, 16, 400, 300, 1.2f);  // cells 1.2 times wider than tall
    CHECK(some.w == doctest::Approx(360));
    CHECK(some.h == 300);
    const MapSize enough = stretched_map(16, 16, 400, 300, 1.5f);  // the whole area
    CHECK(enough.w == 400);
    CHECK(enough.h == 300);
    const MapSize tall = stretched_map(16, 16, 300, 600, 1.5f);
    CHECK(tall.w == 300);
    CHECK(tall.h == doctest::Approx(450));
    const MapSize thin = stretched_map(16, 768, 800, 600, 2.0f);  // 48 times wider than tall: a strip
    CHECK(thin.w == 800);
    CHECK(thin.h == doctest::Approx(800.0f * 2.0f / 48.0f));
}

TEST_CASE("map fit: the inspector keeps cells square, so a slice and its transpose look different") {
    const MapSize attn = fitted_map(16, 16, 700, 420);
    CHECK(attn.w == 420);
    CHECK(attn.h == 420);
    const MapSize k = fitted_map(16, 96, 700, 420);  // 6 times wider than tall
    CHECK(k.w == 700);
    CHECK(k.h == doctest::Approx(700.0f / 6.0f));
    CHECK(k.stretch == 1.0f);
    // 6 times taller than wide: 70 px with square cells, under a quarter of the width, so its cells
    // are drawn 2.5 times wider than tall (and the inspector says so); still a tall map.
    const MapSize k_t = fitted_map(96, 16, 700, 420);
    CHECK(k_t.w == doctest::Approx(175.0f));
    CHECK(k_t.h == 420);
    CHECK(k_t.stretch == doctest::Approx(2.5f));
    // [16, 768] with square cells would be 14.6 px tall: stretched to a quarter of the height, and said.
    const MapSize merged = fitted_map(16, 768, 700, 420);
    CHECK(merged.w == 700);
    CHECK(merged.h == doctest::Approx(105.0f));
    CHECK(merged.stretch == doctest::Approx(105.0f / (700.0f / 48.0f)));
    const MapSize column = fitted_map(768, 16, 700, 420);  // a quarter of the width
    CHECK(column.w == doctest::Approx(175.0f));
    CHECK(column.h == 420);
    CHECK(column.stretch > 1.0f);
}

TEST_CASE("map fit: presentation mode fills the slide with a long slice, keeps an attention map square") {
    // The merged [16, 768] beside the narrative at 1600 x 1000: the whole picture area, not a strip.
    const MapSize merged = presentation_map(16, 768, 760, 560);
    CHECK(merged.w == 760);
    CHECK(merged.h == 560);
    const MapSize qkv = presentation_map(16, 2304, 760, 560);
    CHECK(qkv.w == 760);
    CHECK(qkv.h == 560);
    // Tall slices too (more rows than columns).
    const MapSize tall = presentation_map(197, 8, 760, 560);
    CHECK(tall.h == 560);
    CHECK(tall.w == doctest::Approx(560.0f));  // as square as the area allows: cells up to 197/8 stretched
    const MapSize attn = presentation_map(16, 16, 760, 560);
    CHECK(attn.w == 560);
    CHECK(attn.h == 560);
    // A nearly square slice: cells at most 2:1.
    const MapSize heads = presentation_map(16, 8, 760, 560);
    CHECK(heads.h == 560);
    CHECK(heads.w == doctest::Approx(560.0f));  // 8 columns of 70 px, rows of 35 px: cells 2:1
}

namespace {
// The Heads panel's room at 1920 x 1080 and 2560 x 1440 (default layout, measured on screenshots) with
// its font's label line, gap and legend.
HeadsGridInput room(std::size_t count, std::size_t n, float w, float h, float fs) {
    HeadsGridInput in;
    in.count = count;
    in.rows = n;
    in.cols = n;
    in.w = w;
    in.h = h;
    in.label_h = fs * 0.8f + 10.0f;
    in.gap = fs * 0.5f;
    in.legend_w = fs * 6.0f;
    return in;
}

// The share of the room the grid's tiles and legend take, across and down.
float used_w(const HeadsGridInput& in, const HeadsGrid& g) {
    return (static_cast<float>(g.columns) * (g.tile.w + in.gap) + (g.legend_in_slot ? 0.0f : in.legend_w + in.gap)) / in.w;
}
float used_h(const HeadsGridInput& in, const HeadsGrid& g) {
    return static_cast<float>(g.grid_rows) * (g.tile.h + in.label_h + in.gap) / in.h;
}
}  // namespace

TEST_CASE("map fit: the heads grid fills its panel on large screens (8 heads of the demo, 3 of the ViT)") {
    for (const HeadsGridInput& in : {room(8, 16, 580, 490, 17.3f), room(8, 16, 790, 660, 23.0f),
                                     room(3, 65, 580, 490, 17.3f), room(3, 65, 790, 660, 23.0f)}) {
        const HeadsGrid g = heads_grid(in);
        CAPTURE(in.count);
        CAPTURE(in.w);
        CAPTURE(g.columns);
        CAPTURE(g.tile.w);
        CAPTURE(g.tile.h);
        CHECK(used_w(in, g) <= 1.0f);
        CHECK(used_h(in, g) <= 1.0f);
        CHECK(used_w(in, g) >= 0.9f);  // both ways: no band of empty panel
        CHECK(used_h(in, g) >= 0.9f);
        // Cells at most kSquareTileStretch from square.
        CHECK(g.tile.w / g.tile.h <= kSquareTileStretch + 1e-4f);
        CHECK(g.tile.h / g.tile.w <= kSquareTileStretch + 1e-4f);
    }
}

TEST_CASE("map fit: the heads grid puts the shared legend in an empty slot, else beside the grid") {
    const HeadsGrid eight = heads_grid(room(8, 16, 580, 490, 17.3f));
    CHECK(eight.columns * eight.grid_rows == 9);
    CHECK(eight.legend_in_slot);
    HeadsGridInput twelve = room(12, 16, 580, 490, 17.3f);
    const HeadsGrid full = heads_grid(twelve);
    CHECK(full.columns * full.grid_rows == 12);
    CHECK_FALSE(full.legend_in_slot);
    CHECK(used_w(twelve, full) <= 1.0f);
    twelve.legend_w = 0.0f;  // per-head scales: no legend
    CHECK_FALSE(heads_grid(twelve).legend_in_slot);
}

TEST_CASE("map fit: the legend's slot narrows the tiles rather than moving the legend out of the grid") {
    // The Heads panel at 1024 x 768 with its controls on two lines: 3 x 3 with the legend in the
    // ninth slot, tiles a little narrower so that two tiles and the legend fit the last row.
    const HeadsGridInput in = room(8, 16, 280, 300, 16.0f);
    const HeadsGrid g = heads_grid(in);
    CHECK(g.columns == 3);
    CHECK(g.legend_in_slot);
    CHECK(2.0f * (g.tile.w + in.gap) + in.legend_w <= in.w + 1e-3f);
    CHECK(g.tile.w >= g.tile.h);  // not squeezed into tall cells beside an outside legend
}

TEST_CASE("map fit: long thin head slices (N x c) stretch up to 4 times along their short side") {
    HeadsGridInput in = room(8, 16, 580, 490, 17.3f);
    in.cols = 2;  // q of 8 heads: [16, 2] per head
    const HeadsGrid g = heads_grid(in);
    CHECK(g.tile.w / g.tile.h <= 2.0f / 16.0f * kLongTileStretch + 1e-4f);
    CHECK(used_h(in, g) <= 1.0f);
}

TEST_CASE("map fit: a tiny room still gives a grid") {
    const HeadsGrid g = heads_grid(room(8, 16, 30, 30, 16.0f));
    CHECK(g.columns >= 1);
    CHECK(g.tile.w > 0.0f);
}
