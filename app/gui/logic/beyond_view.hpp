// Window-free logic of the Beyond panel (flash tiles, KV cache, windows): what the panel draws,
// computed from the recorded FlashRecord / KvRecord / WindowRecord (core/paths/beyond.hpp).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "beyond.hpp"
#include "image.hpp"

namespace attnscope::ui {

// The panel's own state (kept in UiState::beyond).
struct BeyondView {
    std::size_t tile = 0;       // flash: tiles 0..tile are done (the animation's position)
    bool playing = true;        // flash / kv: the animation runs
    double last_advance = 0.0;  // time of the last step of the animation
    std::size_t token = 0;      // kv: the token shown
    std::size_t window = 0;     // windowed: the window shown (over B * nW)
    std::size_t head = 0;       // kv / windowed: the head shown
    bool visible = true;        // View > Beyond the textbook (flash, kv-cache, windowed)
    bool mask_visible = false;  // the same for a mask on the textbook path (it would cover the Heads panel)
    std::uint64_t generation = ~std::uint64_t(0);  // the trace the positions belong to (reset on a new one)
};

enum class TileState { Pending, Done, Skipped, Current };

// The state of every tile of the row_blocks x col_blocks grid after tiles 0..done were computed.
std::vector<TileState> tile_states(const FlashRecord& record, std::size_t done);

// A grid of rows x cols cells as a picture of at most max_side pixels a side, shown as one texture:
// one pixel per cell, or, when there are more cells than that, the cell under each pixel's centre.
// A grid drawn cell by cell costs 4 vertices a cell on every frame: (1, 4097) on the flash path has
// 257 x 257 tiles, the textbook path's causal mask 4097 x 4097 token pairs.
RgbImage cell_picture(std::size_t rows, std::size_t cols, std::size_t max_side,
                      const std::function<std::array<std::uint8_t, 3>(std::size_t row, std::size_t col)>& colour);

// The colour of a tile in each state (the panel's legend uses the same).
std::array<std::uint8_t, 3> tile_colour(TileState state);

// Query rows whose output is final after tiles 0..done (their row of tiles is complete).
std::size_t finished_rows(const FlashRecord& record, std::size_t done);

// The window (0..nW-1 of a batch item) that holds the token at (row, col) of the original grid,
// after Swin's roll by -shift.
std::size_t window_of_token(const WindowRecord& record, std::size_t row, std::size_t col);
// The token (row, col) of the original grid at position p (0..M*M-1) of window w.
void token_of_window(const WindowRecord& record, std::size_t w, std::size_t p, std::size_t* row, std::size_t* col);

// Cumulative FLOPs after tokens 0..t: with the cache and recomputing.
void kv_cumulative_flops(const KvRecord& record, std::size_t t, double* cached, double* recompute);

// The flash tile side to show when the flash path is chosen: `tile` when N holds at least 2 x 2
// tiles of it, else about N / 4 (at least 1), so the tile animation has tiles to step through.
std::size_t flash_tile_for(std::size_t tokens, std::size_t tile);

}  // namespace attnscope::ui
