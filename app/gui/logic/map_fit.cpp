#include "logic/map_fit.hpp"

#include <algorithm>

namespace attnscope::ui {

MapSize stretched_map(std::size_t rows, std::size_t cols, float w, float h, float stretch) {
    w = std::max(w, 0.0f);
    h = std::max(h, 0.0f);
    if (rows == 0 || cols == 0 || w <= 0.0f || h <= 0.0f) return {w, h};
    const float natural = static_cast<float>(cols) / static_cast<float>(rows);  // width over height, square cells
    const float k = std::max(stretch, 1.0f);
    // The map's width over height lies in [natural / k, natural * k]; the area's, w / h, is taken
    // when it lies there, else the map touches the area's two sides along the limiting direction.
    if (w > h * natural * k) return {h * natural * k, h};
    if (w < h * natural / k) return {w, w * k / natural};
    return {w, h};
}

MapSize fitted_map(std::size_t rows, std::size_t cols, float w, float h) {
    MapSize m = stretched_map(rows, cols, w, h, 1.0f);
    if (rows == cols || m.w <= 0.0f || m.h <= 0.0f) return m;
    const float k = std::max(kMinMapShare * h / m.h, kMinMapShare * w / m.w);  // > 1: a side too short
    if (k <= 1.0f) return m;
    m = stretched_map(rows, cols, w, h, k);
    m.stretch = k;
    return m;
}

MapSize presentation_map(std::size_t rows, std::size_t cols, float w, float h) {
    if (rows == cols) return stretched_map(rows, cols, w, h, 1.0f);
    const float r = static_cast<float>(std::max<std::size_t>(rows, 1)), c = static_cast<float>(std::max<std::size_t>(cols, 1));
    return stretched_map(rows, cols, w, h, std::max({2.0f, c / r, r / c}));
}

HeadsGrid heads_grid(const HeadsGridInput& in) {
    const float stretch = in.rows == in.cols ? kSquareTileStretch : kLongTileStretch;
    const int count = static_cast<int>(std::max<std::size_t>(in.count, 1));
    HeadsGrid best;
    float best_area = 0.0f;
    for (int c = 1; c <= count; ++c) {
        const int r = (count + c - 1) / c;
        const bool free_slot = in.legend_w > 0.0f && r * c > count;
        for (const bool in_slot : {true, false}) {
            if (in_slot && !free_slot) continue;
            const float legend = in.legend_w > 0.0f && !in_slot ? in.legend_w + in.gap : 0.0f;
            float tw = (in.w - legend) / static_cast<float>(c) - in.gap;
            // The legend's row holds its tiles and the legend: tiles narrow enough for both.
            if (in_slot) tw = std::min(tw, (in.w - in.legend_w) / static_cast<float>(count - (r - 1) * c) - in.gap);
            const float th = in.h / static_cast<float>(r) - in.label_h - in.gap;
            if (tw <= 4.0f || th <= 4.0f) continue;
            const MapSize t = stretched_map(in.rows, in.cols, tw, th, stretch);
            const float area = t.w * t.h;
            if (area > best_area * 1.05f) {
                best_area = area;
                best.columns = c;
                best.grid_rows = r;
                best.tile = t;
                best.legend_in_slot = in_slot;
            }
        }
    }
    return best;
}

}  // namespace attnscope::ui
