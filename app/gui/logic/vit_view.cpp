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
    if (token == 0 || grid.cols == 0) return tr("class token");
    if (token < grid.prefix) return tr("distillation token");
    const std::size_t p = token - grid.prefix;
    return tr("patch (") + std::to_string(p / grid.cols) + ", " + std::to_string(p % grid.cols) + ")";
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
                                      std::size_t maps) {
    AttentionTabSizes s;
    const float n = static_cast<float>(std::max<std::size_t>(maps, 1));
    s.tile = std::clamp((width - spacing * (n - 1.0f)) / n, 28.0f, 120.0f);
    s.per_row = std::max<std::size_t>(1, static_cast<std::size_t>((width + spacing) / (s.tile + spacing) + 1e-3f));
    s.rows = (std::max<std::size_t>(maps, 1) + s.per_row - 1) / s.per_row;
    const float strip = line + static_cast<float>(s.rows) * (line + s.tile + spacing);
    const float by_width = (width - right - 2.0f * spacing) / 2.0f;
    const float by_height = height - strip - line - spacing;  // the large map's title above it
    s.side = std::max(48.0f, std::min(by_width, by_height));
    return s;
}

std::vector<std::size_t> fresh_patch_sizes(std::size_t image_size) {
    std::vector<std::size_t> out;
    for (std::size_t p : {8, 16, 32})
        if (image_size % p == 0 && image_size / p >= 2) out.push_back(p);
    return out;
}

}  // namespace attnscope::ui
