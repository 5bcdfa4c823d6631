// How large a heatmap of a rows x cols slice is drawn in the room a panel has: the inspector's one
// map, the heads grid's tiles, presentation mode's slide. Window-free (tests/gui/test_map_fit.cpp).
#pragma once

#include <cstddef>

namespace attnscope::ui {

struct MapSize {
    float w = 0.0f, h = 0.0f;  // pixels
    float stretch = 1.0f;      // fitted_map: how many times longer than wide its cells are drawn (1: square)
};

// The map as the inspector draws it at zoom 1 in w x h: square cells, as large as fits, so k
// [16 x 96] and k_t [96 x 16] look as different as they are. A slice so long that its short side
// would take less than a quarter of the area's gets cells stretched (stretch > 1) to that quarter,
// which the inspector then says.
inline constexpr float kMinMapShare = 0.25f;
MapSize fitted_map(std::size_t rows, std::size_t cols, float w, float h);

// The largest map of a rows x cols slice in w x h whose cells are at most `stretch` times wider than
// tall or taller than wide (stretch 1: square cells).
MapSize stretched_map(std::size_t rows, std::size_t cols, float w, float h, float stretch);

// Presentation mode: a square slice stays square (the attention map's diagonal reads as one);
// another may stretch its cells up to 2:1, and a long one (the merged [16, 768]) as far as
// long side / short side, so it can fill the slide instead of being drawn as a thin strip.
MapSize presentation_map(std::size_t rows, std::size_t cols, float w, float h);

// The heads grid: `count` tiles of a rows x cols slice in a region w x h. Each tile has a label line
// above it (label_h, spacing included) and `gap` pixels to its right and below; the shared colour
// scale's legend (legend_w wide, 0: none) goes in the grid's first empty slot, or to the right of
// the grid when the grid has none.
struct HeadsGridInput {
    std::size_t count = 1, rows = 1, cols = 1;
    float w = 0.0f, h = 0.0f;
    float label_h = 0.0f, gap = 0.0f;
    float legend_w = 0.0f;
};
struct HeadsGrid {
    int columns = 1, grid_rows = 1;
    MapSize tile{8.0f, 8.0f};
    bool legend_in_slot = false;  // the legend takes the slot after the last tile
};
// Square maps may stretch their cells up to this much to fill the panel, long thin ones (N x c) as
// before up to 4 times along their short side.
inline constexpr float kSquareTileStretch = 1.4f;
inline constexpr float kLongTileStretch = 4.0f;
// The column count that gives the largest tiles (fewer columns unless more give 5% more area).
HeadsGrid heads_grid(const HeadsGridInput& in);

}  // namespace attnscope::ui
