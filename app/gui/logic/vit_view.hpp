// Window-free logic of the Image panel: which patch a click lands on, the keys of the overlay
// texture cache, the ranked prediction, and the patch sizes of the fresh-model slider.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "attention_maps.hpp"
#include "image.hpp"
#include "tensor.hpp"
#include "vit.hpp"

namespace attnscope::ui {

struct PatchPick {
    std::size_t row = 0, col = 0;
    bool operator==(const PatchPick& o) const { return row == o.row && col == o.col; }
};

// The patch under a point of the shown picture: (x, y) from its top-left corner, the picture shown
// width x height (any scale). nullopt outside [0, width) x [0, height) or for an empty grid.
std::optional<PatchPick> patch_at(float x, float y, float width, float height, const PatchGrid& grid);

// The token's name for people: "class token" (token 0) or "patch (row, col)".
std::string query_name(std::size_t token, const PatchGrid& grid);

// What an overlay texture shows; its cache key changes exactly when the picture it shows changes.
// A head map depends on the block and the query, the rollout on the query and the head fusion.
struct OverlayKey {
    std::uint64_t snapshot = 0;  // the ViT run (a new run invalidates everything)
    std::string what;            // "head 2", "mean", "rollout", "picture"
    std::size_t block = 0;
    std::size_t query = 0;
    HeadFusion fusion = HeadFusion::mean;

    static OverlayKey head(std::uint64_t snapshot, std::size_t block, std::size_t head, std::size_t query);
    static OverlayKey head_mean(std::uint64_t snapshot, std::size_t block, std::size_t query);
    static OverlayKey rollout(std::uint64_t snapshot, std::size_t query, HeadFusion fusion);
    static OverlayKey picture(std::uint64_t snapshot);
    std::string str() const;
};

// The picture in grey (Rec. 601 luma), slightly darkened: the backdrop of the overlays, so that
// every colour on an overlay is attention (a yellow shape in the picture is not mistaken for heat).
RgbImage overlay_backdrop(const RgbImage& image);

// The Attention tab's arrangement in a content region width x height: the picture and the selected
// map side by side (each `side` square), and under them a caption line and the strip of `maps`
// small maps (heads, their mean, the rollout), each `tile` square under its one-line title,
// `per_row` to a row. The prediction column (`right` x `right_height`) stands beside the squares,
// or under the strip (`stacked`, `under_height` high there, right_height when negative) when that
// leaves the squares larger. The small maps give way
// first (to 0.4 of the squares, at least 28 px); the squares are at least 48 px. In a region so
// short that the squares would stay under half its height, the strip becomes one row of buttons
// (`buttons`, tile 0) when that makes the squares a fifth larger, or reach `min_side` (the squares'
// floor the panel asks for) that the strip would miss: the picture is the point.
struct AttentionTabSizes {
    float side = 0.0f, tile = 0.0f;
    std::size_t per_row = 1, rows = 1;
    bool stacked = false;
    bool buttons = false;
};
AttentionTabSizes attention_tab_sizes(float width, float height, float line, float spacing, float right,
                                      float right_height, std::size_t maps, float min_side = 0.0f,
                                      float under_height = -1.0f);

// Presentation mode on a ViT: the slide's body (width x body_h, under the shapes) in three columns,
// the narrative with the class token's maps under it, the picture (`side` square under its caption
// line, at least a third of the screen's height where the body is that high), then the step's heatmap.
struct VitSlideLayout {
    float text_w = 0.0f;  // the narrative's column
    float side = 0.0f;    // the picture's, as wide as the picture
};
VitSlideLayout vit_slide_layout(float width, float body_h, float display_h, float line);

// The class token's maps (per head and their mean) under the narrative, in a region width x height:
// a title line, then `tile` squares under their caption lines (each caption_w wide at most; a row
// is never narrower than its captions), `per_row` to a row. `fits` is false
// when the largest tile would be under one and a half lines high: the slide then leaves them out.
struct SlideTiles {
    float tile = 0.0f;
    std::size_t per_row = 1, rows = 1;
    bool fits = false;
};
SlideTiles vit_slide_tiles(float width, float height, float line, float spacing, std::size_t maps,
                           float caption_w = 0.0f);

// The patch sizes the fresh-model slider offers for an image of this size: 8, 16, 32 where they
// divide it into at least a 2 x 2 grid.
std::vector<std::size_t> fresh_patch_sizes(std::size_t image_size);

}  // namespace attnscope::ui
