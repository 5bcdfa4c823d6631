#include "logic/vit_view.hpp"
#include "logic/i18n.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace attnscope::ui {

std::optional<PatchPick> patch_at(float x, float y, float width, float height, const PatchGrid& grid) {
    if (grid.rows == 0 || grid.cols == 0 || !(width > 0.0f) || !(height > 0.0f)) return std::nullopt;
    if (!(x >= 0.0f && x < width && y >= 0.0f && y < height)) return std::nullopt;  // also NaN
    const auto cell = [](float v, float size, std::size_t n) {
        const auto i = static_cast<std::size_t>(std::floor(v / size * static_cast<float>(n)));
        return std::min(i, n - 1);  // rounding at the far edge
    };
    return PatchPick{cell(y, height, grid.rows), cell(x, width, grid.cols)};
}

std::string query_name(std::size_t token, const PatchGrid& grid) {
    if (token == 0 || grid.cols == 0) return _("class token");
    if (token < grid.prefix) return _("distillation token");
    const std::size_t p = token - grid.prefix;
    return _("patch (") + std::to_string(p / grid.cols) + ", " + std::to_string(p % grid.cols) + ")";
}

OverlayKey OverlayKey::head(std::uint64_t snapshot, std::size_t block, std::size_t head, std::size_t query) {
    return {snapshot, "head " + std::to_string(head), block, query, HeadFusion::mean};
}

OverlayKey OverlayKey::head_mean(std::uint64_t snapshot, std::size_t block, std::size_t query) {
    return {snapshot, "mean", block, query, HeadFusion::mean};
}

OverlayKey OverlayKey::rollout(std::uint64_t snapshot, std::size_t query, HeadFusion fusion) {
    return {snapshot, "rollout", 0, query, fusion};  // over all blocks: the block shown does not matter
}

OverlayKey OverlayKey::picture(std::uint64_t snapshot) { return {snapshot, "picture", 0, 0, HeadFusion::mean}; }

std::string OverlayKey::str() const {
    return std::to_string(snapshot) + "/" + what + "/b" + std::to_string(block) + "/q" + std::to_string(query) + "/" +
           head_fusion_name(fusion);
}

RgbImage overlay_backdrop(const RgbImage& image) {
    RgbImage out = image;
    for (std::size_t i = 0; i + 2 < out.pixels.size(); i += 3) {
        const float y = 0.299f * out.pixels[i] + 0.587f * out.pixels[i + 1] + 0.114f * out.pixels[i + 2];
        const auto v = static_cast<std::uint8_t>(std::lround(std::clamp(0.8f * y, 0.0f, 255.0f)));
        out.pixels[i] = out.pixels[i + 1] = out.pixels[i + 2] = v;
    }
    return out;
}

AttentionTabSizes attention_tab_sizes(float width, float height, float line, float spacing, float right,
                                      float right_height, std::size_t maps, float min_side, float under_height) {
    if (under_height < 0.0f) under_height = right_height;
    // In a short region the small maps give way first, down to kTile of the large squares, so the
    // strip does not take the height the picture needs.
    constexpr float kTile = 0.4f;
    const std::size_t count = std::max<std::size_t>(maps, 1);
    const float n = static_cast<float>(count);
    const float tile_by_width = std::clamp((width - spacing * (n - 1.0f)) / n, 28.0f, 120.0f);
    auto per_row = [&](float tile) {
        return std::max<std::size_t>(1, static_cast<std::size_t>((width + spacing) / (tile + spacing) + 1e-3f));
    };
    const float rows = static_cast<float>((count + per_row(tile_by_width) - 1) / per_row(tile_by_width));
    // The squares and the strip in `tall` of height, the squares at most `wide`: down the region the
    // squares' titles, the squares, the caption, then per strip row a title, a tile and the spacing.
    // Beside the squares stands a column `column` high: the strip starts under the taller of the two,
    // so squares shorter than the column grow to its height for free.
    auto arrange = [&](float wide, float tall, float column) {
        AttentionTabSizes s;
        const float fixed = 2.0f * line + spacing + rows * (line + spacing);
        const float with_full_tiles = tall - fixed - rows * tile_by_width;
        const float with_small_tiles = (tall - fixed) / (1.0f + rows * kTile);
        const float by_height = std::max(with_full_tiles, std::min(with_small_tiles, tile_by_width / kTile));
        s.side = std::max({48.0f, std::min(wide, by_height), std::min(wide, column - line)});
        const float top = std::max(s.side, column - line);  // the squares' row, under their titles
        s.tile = std::clamp((tall - fixed - top) / rows, 28.0f, tile_by_width);
        s.per_row = per_row(s.tile);
        s.rows = (count + s.per_row - 1) / s.per_row;
        return s;
    };
    // The prediction beside the squares, or under the strip when that leaves the squares larger
    // (a tall, narrow panel).
    const AttentionTabSizes beside = arrange((width - right - 2.0f * spacing) / 2.0f, height, right_height);
    AttentionTabSizes under = arrange((width - spacing) / 2.0f, height - under_height - spacing, 0.0f);
    under.stacked = true;
    const AttentionTabSizes best = under.side > beside.side ? under : beside;
    if (best.side >= 0.5f * height) return best;
    // The strip as one row of buttons under the caption: the squares take the rest of the height,
    // the prediction beside them or under the buttons.
    // The squares' titles, the caption and the buttons' row (each a line with its spacing), and the
    // spacing under the squares.
    const float fixed = 3.0f * line + spacing;
    AttentionTabSizes buttons;
    buttons.per_row = count;
    buttons.buttons = true;
    buttons.side = std::min((width - right - 2.0f * spacing) / 2.0f, std::max(height - fixed, right_height - line));
    AttentionTabSizes stacked = buttons;
    stacked.stacked = true;
    stacked.side = std::min((width - spacing) / 2.0f, height - fixed - under_height);
    if (stacked.side > buttons.side) buttons = stacked;
    buttons.side = std::max(buttons.side, 48.0f);
    const bool reaches_floor = best.side < min_side && buttons.side >= min_side;
    return buttons.side > 1.2f * best.side || reaches_floor ? buttons : best;
}

VitSlideLayout vit_slide_layout(float width, float body_h, float display_h, float line) {
    VitSlideLayout l;
    // A third of the screen, or a quarter of the width where that is more, within the body under the
    // picture's caption and a third of the width (the heatmap keeps the rest).
    l.side = std::floor(std::max(std::min({std::max(display_h / 3.0f, 0.25f * width), body_h - line, width / 3.0f}), 24.0f));
    l.text_w = std::floor(0.36f * width);
    return l;
}

SlideTiles vit_slide_tiles(float width, float height, float line, float spacing, std::size_t maps, float caption_w) {
    SlideTiles s;
    const std::size_t count = std::max<std::size_t>(maps, 1);
    const float region_h = height - line;  // under the title
    for (std::size_t rows = 1; rows <= count; ++rows) {  // as many rows as make them largest
        const std::size_t per_row = (count + rows - 1) / rows;
        const float by_w = (width - spacing * static_cast<float>(per_row - 1)) / static_cast<float>(per_row);
        if (by_w < caption_w) continue;  // the captions would not fit over their tiles
        const float by_h = (region_h - spacing * static_cast<float>(rows - 1)) / static_cast<float>(rows) - line;
        const float tile = std::floor(std::min(by_w, by_h));
        if (tile > s.tile) {
            s.tile = tile;
            s.per_row = per_row;
            s.rows = rows;
        }
    }
    s.fits = s.tile >= 1.5f * line;
    return s;
}

std::vector<std::size_t> fresh_patch_sizes(std::size_t image_size) {
    std::vector<std::size_t> out;
    for (std::size_t p : {8, 16, 32})
        if (image_size % p == 0 && image_size / p >= 2) out.push_back(p);
    return out;
}

}  // namespace attnscope::ui
