#include "logic/beyond_view.hpp"

#include <algorithm>

namespace attnscope::ui {

std::vector<TileState> tile_states(const FlashRecord& r, std::size_t done) {
    std::vector<TileState> states(r.row_blocks * r.col_blocks, TileState::Pending);
    for (std::size_t i = 0; i < r.tiles.size() && i <= done; ++i) {
        const FlashTile& t = r.tiles[i];
        states[t.row_block * r.col_blocks + t.col_block] =
            i == done ? TileState::Current : (t.skipped ? TileState::Skipped : TileState::Done);
    }
    return states;
}

RgbImage cell_picture(std::size_t rows, std::size_t cols, std::size_t max_side,
                      const std::function<std::array<std::uint8_t, 3>(std::size_t row, std::size_t col)>& colour) {
    RgbImage image;
    image.width = std::min(cols, max_side);
    image.height = std::min(rows, max_side);
    image.pixels.resize(image.width * image.height * 3);
    for (std::size_t y = 0; y < image.height; ++y) {
        const std::size_t row = (2 * y + 1) * rows / (2 * image.height);  // the cell under the pixel's centre
        for (std::size_t x = 0; x < image.width; ++x) {
            const auto c = colour(row, (2 * x + 1) * cols / (2 * image.width));
            std::copy(c.begin(), c.end(), image.pixels.begin() + static_cast<long>((y * image.width + x) * 3));
        }
    }
    return image;
}

std::array<std::uint8_t, 3> tile_colour(TileState state) {
    switch (state) {
        case TileState::Done: return {60, 150, 110};
        case TileState::Skipped: return {95, 95, 150};
        case TileState::Current: return {240, 160, 40};
        case TileState::Pending: break;
    }
    return {38, 38, 42};
}

std::size_t finished_rows(const FlashRecord& r, std::size_t done) {
    std::size_t rows = 0;
    for (std::size_t i = 0; i < r.tiles.size() && i <= done; ++i)
        if (r.tiles[i].col_block + 1 == r.col_blocks) rows = r.tiles[i].row0 + r.tiles[i].rows;
    return rows;
}

std::size_t window_of_token(const WindowRecord& r, std::size_t row, std::size_t col) {
    const std::size_t H = r.grid, M = r.window;
    const std::size_t pr = (row + H - r.shift % H) % H, pc = (col + H - r.shift % H) % H;  // after roll(-shift)
    return (pr / M) * (H / M) + pc / M;
}

void token_of_window(const WindowRecord& r, std::size_t w, std::size_t p, std::size_t* row, std::size_t* col) {
    const std::size_t H = r.grid, M = r.window, side = H / M;
    const std::size_t pr = (w / side) * M + p / M, pc = (w % side) * M + p % M;  // in the rolled grid
    *row = (pr + r.shift) % H;
    *col = (pc + r.shift) % H;
}

void kv_cumulative_flops(const KvRecord& r, std::size_t t, double* cached, double* recompute) {
    *cached = *recompute = 0.0;
    for (std::size_t i = 0; i < r.tokens.size() && i <= t; ++i) {
        *cached += static_cast<double>(r.tokens[i].flops_cached);
        *recompute += static_cast<double>(r.tokens[i].flops_recompute);
    }
}

std::size_t flash_tile_for(std::size_t tokens, std::size_t tile) {
    if (tile >= 1 && tokens >= 2 * tile) return tile;
    return std::max<std::size_t>(1, tokens / 4);
}

}  // namespace attnscope::ui
