// Window-free logic of the flash path's Attention map panel: which picture of attn[b, head] a
// viewport needs (the block-max overview, or exact tiles of the visible cells) and the state that
// builds it frame by frame within a time budget, reading only through core/paths/attention_tiles.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "attention_tiles.hpp"
#include "logic/slice.hpp"

namespace attnscope::ui {

// The panel's own view state (kept in UiState::flash_map).
struct FlashMapView {
    std::size_t batch = 0, head = 0;  // the map shown: attn[batch, head]
    float zoom = 1.0f;                // 1: the whole N x N map fits the area
    float pan_x = 0.0f, pan_y = 0.0f;  // in cells of the map: the top-left cell shown
    bool log = false;                 // colour scale: log instead of linear
    bool visible = true;              // View > Attention map (flash path only)
    double frame_ms = 0.0;            // the panel's time in the last frame (map computation included)
    double frame_ms_max = 0.0;        // the panel's slowest frame so far (shown outside screenshots)
    std::uint64_t generation = ~std::uint64_t(0);  // the trace the view belongs to
};

constexpr std::size_t kOverviewMaxCells = 512;  // the overview has at most this many cells per side
constexpr std::size_t kExactMaxSide = 1024;     // exact tiles when at most this many cells are visible per side
constexpr std::size_t kMapTile = 256;           // the tile cache's tile side (256 x 256 floats = 256 KiB)
constexpr std::size_t kMapCacheBytes = std::size_t(64) << 20;  // the tile cache's byte cap (256 tiles)

// What a viewport shows: a picture of rows r0..r1-1 and columns c0..c1-1 of the N x N map (r0, c0
// multiples of factor, r1, c1 clipped at N), each picture cell the MAX of factor x factor weights.
// exact: read from exact tiles (factor 1: every weight its own cell); otherwise from the overview
// (factor a multiple of its block). At most about one picture cell per screen pixel, so no peak
// falls between pixels.
struct MapPlan {
    bool exact = false;
    std::size_t r0 = 0, r1 = 0, c0 = 0, c1 = 0;
    std::size_t factor = 1;
    std::size_t rows() const { return (r1 - r0 + factor - 1) / factor; }
    std::size_t cols() const { return (c1 - c0 + factor - 1) / factor; }
};

// overview_block: the overview's block side; visible_rows/cols: cells visible in the area
// (fractional), pixels_*: the area in pixels.
// allow_exact false: the overview's plan even when zoomed in (while exact tiles are computed).
MapPlan plan_viewport(std::size_t tokens, std::size_t overview_block, float pan_x, float pan_y, float visible_cols,
                      float visible_rows, float pixels_w, float pixels_h, bool allow_exact = true);

// The pictures of one trace's map: the overview of the shown (b, head), filled band by band, and
// the exact tiles (an LRU cache with a byte cap). Times are wall seconds of this thread.
class FlashMap {
public:
    FlashMap();
    // Forget everything (a new trace).
    void reset();

    // Computes overview bands of (b, head) for up to budget seconds (< 0: until done; at least one
    // band per call); true when the
    // overview is complete. A different (b, head) starts over.
    bool advance_overview(const FlashAttentionSource& source, std::size_t b, std::size_t head, double budget);
    // The overview so far: [cells, cells], bands not computed yet are NaN.
    const Slice2D& overview() const { return overview_; }
    // The picture of a non-exact plan from the overview (0 where bands are not computed yet).
    Slice2D overview_picture(const MapPlan& plan) const;
    std::size_t overview_block() const { return block_; }
    std::size_t overview_bands_done() const { return bands_done_; }
    bool overview_done() const { return block_ && bands_done_ == overview_.rows; }
    double overview_seconds() const { return overview_seconds_; }  // time the complete overview took

    // Computes the exact tiles plan needs for up to budget seconds (< 0: all; at least one tile per
    // call); returns how many are still missing.
    std::size_t compute_tiles(const FlashAttentionSource& source, std::size_t b, std::size_t head, const MapPlan& plan,
                              double budget);
    // Tiles the plan needs that are not cached yet.
    std::size_t missing_tiles(std::size_t b, std::size_t head, const MapPlan& plan);
    // The picture of an exact plan from the cached tiles (empty while tiles are missing).
    Slice2D exact_picture(std::size_t tokens, std::size_t b, std::size_t head, const MapPlan& plan);

    const AttentionTileCache& cache() const { return cache_; }
    double last_tile_seconds() const { return last_tile_seconds_; }

private:
    AttentionTileCache cache_;
    Slice2D overview_;
    std::size_t ov_b_ = 0, ov_head_ = 0, block_ = 0, bands_done_ = 0;
    double overview_seconds_ = 0.0, overview_running_ = 0.0;
    double last_tile_seconds_ = 0.0;
};

}  // namespace attnscope::ui
