#include "logic/flash_map.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

namespace attnscope::ui {

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

void update_range(Slice2D& s) {
    s.min = std::numeric_limits<float>::max(), s.max = std::numeric_limits<float>::lowest();
    s.nan_count = 0;
    for (float v : s.values) {
        if (std::isnan(v)) {
            ++s.nan_count;
            continue;
        }
        s.min = std::min(s.min, v), s.max = std::max(s.max, v);
    }
    if (s.min > s.max) s.min = s.max = 0.0f;
}

}  // namespace

MapPlan plan_viewport(std::size_t N, std::size_t block, float pan_x, float pan_y, float vis_c, float vis_r, float px_w,
                      float px_h, bool allow_exact) {
    MapPlan p;
    if (N == 0) return p;
    p.exact = allow_exact && (std::max(vis_c, vis_r) <= static_cast<float>(kExactMaxSide) || N <= kExactMaxSide);
    const std::size_t unit = p.exact ? 1 : std::max<std::size_t>(1, block);
    // map cells per screen pixel, rounded up to whole units: at most one picture cell per pixel
    const float per_px = std::max(vis_c / std::max(px_w, 1.0f), vis_r / std::max(px_h, 1.0f));
    const std::size_t g = std::max<std::size_t>(1, static_cast<std::size_t>(std::ceil(per_px / unit - 1e-4f)));
    p.factor = unit * g;
    const std::size_t f = p.factor;
    auto lo = [&](float x) { return std::min(N - 1, static_cast<std::size_t>(std::max(0.0f, std::floor(x)))) / f * f; };
    auto hi = [&](float x) {
        const std::size_t e = static_cast<std::size_t>(std::max(0.0f, std::ceil(x)));
        return std::min(N, (e + f - 1) / f * f);
    };
    p.r0 = lo(pan_y), p.r1 = std::max(hi(pan_y + vis_r), std::min(N, p.r0 + 1));
    p.c0 = lo(pan_x), p.c1 = std::max(hi(pan_x + vis_c), std::min(N, p.c0 + 1));
    return p;
}

Slice2D FlashMap::overview_picture(const MapPlan& p) const {
    Slice2D img;
    if (!block_ || p.exact || p.factor % block_ != 0 || p.r1 <= p.r0 || p.c1 <= p.c0) return img;
    const std::size_t g = p.factor / block_, cells = overview_.cols;
    img.rows = p.rows(), img.cols = p.cols();
    img.values.assign(img.rows * img.cols, std::numeric_limits<float>::lowest());
    const std::size_t or0 = p.r0 / block_, or1 = std::min(cells, (p.r1 + block_ - 1) / block_);
    const std::size_t oc0 = p.c0 / block_, oc1 = std::min(cells, (p.c1 + block_ - 1) / block_);
    for (std::size_t i = or0; i < or1; ++i) {
        float* o = img.values.data() + ((i - or0) / g) * img.cols;
        for (std::size_t j = oc0; j < oc1; ++j) {
            const float v = overview_.values[i * cells + j];  // NaN: band not computed yet, drawn as 0
            float& cell = o[(j - oc0) / g];
            cell = std::max(cell, std::isnan(v) ? 0.0f : v);
        }
    }
    update_range(img);
    return img;
}

FlashMap::FlashMap() : cache_(kMapCacheBytes, kMapTile) {}

void FlashMap::reset() {
    cache_.clear();
    overview_ = Slice2D{};
    block_ = bands_done_ = 0;
    overview_seconds_ = overview_running_ = last_tile_seconds_ = 0.0;
}

bool FlashMap::advance_overview(const FlashAttentionSource& s, std::size_t b, std::size_t head, double budget) {
    if (!s.ok()) return false;
    if (!block_ || b != ov_b_ || head != ov_head_) {  // start (another head's) overview
        ov_b_ = b, ov_head_ = head;
        block_ = attnscope::overview_block(s.tokens, kOverviewMaxCells);
        const std::size_t cells = overview_cells(s.tokens, block_);
        overview_ = Slice2D{};
        overview_.rows = overview_.cols = cells;
        overview_.values.assign(cells * cells, std::numeric_limits<float>::quiet_NaN());
        bands_done_ = 0;
        overview_seconds_ = overview_running_ = 0.0;
    }
    if (overview_done()) return true;
    const auto start = Clock::now();
    const std::size_t cells = overview_.rows;
    // whole bands of blocks, about 64 rows of the map each: small enough to stop within a frame's budget
    const std::size_t band = std::max<std::size_t>(1, 64 / block_);
    bool first = true;  // at least one band per call, so any budget makes progress
    while (bands_done_ < cells && (first || budget < 0 || since(start) < budget)) {
        first = false;
        const std::size_t end = std::min(cells, bands_done_ + band);
        attention_overview_rows(s, b, head, block_, bands_done_, end, overview_.values.data() + bands_done_ * cells);
        bands_done_ = end;
    }
    overview_running_ += since(start);
    update_range(overview_);
    if (overview_done()) overview_seconds_ = overview_running_;
    return overview_done();
}

std::size_t FlashMap::missing_tiles(std::size_t b, std::size_t head, const MapPlan& p) {
    const std::size_t T = cache_.tile_side();
    std::size_t missing = 0;
    if (!p.exact || p.r1 <= p.r0 || p.c1 <= p.c0) return 0;
    for (std::size_t tr = p.r0 / T; tr <= (p.r1 - 1) / T; ++tr)
        for (std::size_t tc = p.c0 / T; tc <= (p.c1 - 1) / T; ++tc)
            if (!cache_.find(b, head, tr, tc)) ++missing;
    return missing;
}

std::size_t FlashMap::compute_tiles(const FlashAttentionSource& s, std::size_t b, std::size_t head, const MapPlan& p,
                                    double budget) {
    if (!s.ok() || !p.exact || p.r1 <= p.r0 || p.c1 <= p.c0) return 0;
    const std::size_t T = cache_.tile_side();
    const auto start = Clock::now();
    std::size_t missing = 0, computed_now = 0;
    for (std::size_t tr = p.r0 / T; tr <= (p.r1 - 1) / T; ++tr)
        for (std::size_t tc = p.c0 / T; tc <= (p.c1 - 1) / T; ++tc) {
            if (cache_.find(b, head, tr, tc)) continue;
            if (budget >= 0 && computed_now > 0 && since(start) >= budget) {  // at least one tile per call
                ++missing;
                continue;
            }
            ++computed_now;
            const auto t0 = Clock::now();
            cache_.get(s, b, head, tr, tc);
            last_tile_seconds_ = since(t0);
        }
    return missing;
}

Slice2D FlashMap::exact_picture(std::size_t N, std::size_t b, std::size_t head, const MapPlan& p) {
    if (!p.exact || p.r1 <= p.r0 || p.c1 <= p.c0 || missing_tiles(b, head, p) > 0) return Slice2D{};
    const std::size_t T = cache_.tile_side(), f = p.factor;
    const std::size_t tr0 = p.r0 / T, tr1 = (p.r1 - 1) / T, tc0 = p.c0 / T, tc1 = (p.c1 - 1) / T;
    // Pixel (i, j) = max over rows r0 + i f .. and cols c0 + j f .. (clipped at r1, c1).
    Slice2D img;
    img.rows = (p.r1 - p.r0 + f - 1) / f, img.cols = (p.c1 - p.c0 + f - 1) / f;
    img.values.assign(img.rows * img.cols, 0.0f);
    for (std::size_t tr = tr0; tr <= tr1; ++tr)
        for (std::size_t tc = tc0; tc <= tc1; ++tc) {
            const std::vector<float>* tile = cache_.find(b, head, tr, tc);
            if (!tile) return Slice2D{};  // dropped while filling (cannot happen: the view fits the cap)
            const std::size_t tile_r0 = tr * T, tile_c0 = tc * T;
            const std::size_t tile_cols = std::min(N, tile_c0 + T) - tile_c0;
            const std::size_t i0 = std::max(p.r0, tile_r0), i1 = std::min(p.r1, std::min(N, tile_r0 + T));
            const std::size_t j0 = std::max(p.c0, tile_c0), j1 = std::min(p.c1, tile_c0 + tile_cols);
            for (std::size_t i = i0; i < i1; ++i) {
                const float* row = tile->data() + (i - tile_r0) * tile_cols;
                float* o = img.values.data() + ((i - p.r0) / f) * img.cols;
                for (std::size_t j = j0; j < j1; ++j) {
                    float& cell = o[(j - p.c0) / f];
                    cell = std::max(cell, row[j - tile_c0]);
                }
            }
        }
    update_range(img);
    return img;
}

}  // namespace attnscope::ui
