#include "softgl/backdrop_plan.hpp"

#include <algorithm>

namespace attnscope::ui {

float Box::area() const { return std::max(0.0f, x1 - x0) * std::max(0.0f, y1 - y0); }

bool overlap(const Box& a, const Box& b) { return a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1; }

Box background_of(const Layer& layer) {
    return {layer.box.x0, layer.box.y0 + layer.title_height, layer.box.x1, layer.box.y1};
}

namespace {

Box clamp_to(const Box& b, const Box& display) {
    return {std::max(b.x0, display.x0), std::max(b.y0, display.y0), std::min(b.x1, display.x1),
            std::min(b.y1, display.y1)};
}

// The side of a patch's rounded square: ImGui rounds a corner of a box with the full radius when
// the box's sides are at least radius + 1 long (twice that when both corners of a side are rounded).
float rounded_side(float rounding) { return 2.0f * rounding + 2.0f; }

// The corners ImGui rounds in the background: the bottom two under a title bar, else all four.
std::vector<CornerPatch> corner_patches(const Layer& l) {
    const float r = l.rounding, side = rounded_side(r);
    if (r <= 0.0f) return {};
    const Box b = background_of(l);
    const auto square = [](float x, float y, float dx, float dy, float s) {  // s x s, corner (x, y), inwards (dx, dy)
        return Box{std::min(x, x + dx * s), std::min(y, y + dy * s), std::max(x, x + dx * s), std::max(y, y + dy * s)};
    };
    std::vector<CornerPatch> out;
    const struct {
        Corner corner;
        float x, y, dx, dy;
    } all[] = {{Corner::TopLeft, b.x0, b.y0, 1, 1},
               {Corner::TopRight, b.x1, b.y0, -1, 1},
               {Corner::BottomLeft, b.x0, b.y1, 1, -1},
               {Corner::BottomRight, b.x1, b.y1, -1, -1}};
    for (const auto& c : all) {
        const bool top = c.corner == Corner::TopLeft || c.corner == Corner::TopRight;
        if (top && l.title_height > 0.0f) continue;
        out.push_back({c.corner, r, square(c.x, c.y, c.dx, c.dy, r), square(c.x, c.y, c.dx, c.dy, side)});
    }
    return out;
}

// The patches stand for ImGui's rounded background when the background has room for two rounded
// squares along each side: ImGui then draws the full radius, and neighbouring patches do not overlap.
bool corners_patchable(const Layer& l) {
    const Box b = background_of(l);
    const float side = rounded_side(l.rounding);
    return l.rounding <= 0.0f || (b.x1 - b.x0 >= 2.0f * side && b.y1 - b.y0 >= 2.0f * side);
}

// The display minus the union of `boxes` (which do not overlap each other), as rectangles: a grid
// on every box edge, its uncovered cells merged into runs along x, runs of equal extent along y.
std::vector<Box> complement(const std::vector<Box>& boxes, const Box& display) {
    std::vector<float> xs{display.x0, display.x1}, ys{display.y0, display.y1};
    for (const Box& b : boxes) {
        xs.insert(xs.end(), {b.x0, b.x1});
        ys.insert(ys.end(), {b.y0, b.y1});
    }
    for (auto* v : {&xs, &ys}) {
        std::sort(v->begin(), v->end());
        v->erase(std::unique(v->begin(), v->end()), v->end());
    }
    const auto covered = [&](float x, float y) {
        for (const Box& b : boxes)
            if (x >= b.x0 && x < b.x1 && y >= b.y0 && y < b.y1) return true;
        return false;
    };
    std::vector<Box> out;
    std::vector<std::size_t> open;  // runs of the band above, which may grow down
    for (std::size_t j = 0; j + 1 < ys.size(); ++j) {
        const float y0 = ys[j], y1 = ys[j + 1], yc = 0.5f * (y0 + y1);
        std::vector<std::size_t> now;
        for (std::size_t i = 0; i + 1 < xs.size(); ++i) {
            if (covered(0.5f * (xs[i] + xs[i + 1]), yc)) continue;
            std::size_t k = i;
            while (k + 2 < xs.size() && !covered(0.5f * (xs[k + 1] + xs[k + 2]), yc)) ++k;
            const Box run{xs[i], y0, xs[k + 1], y1};
            const auto above = std::find_if(open.begin(), open.end(),
                                            [&](std::size_t o) { return out[o].x0 == run.x0 && out[o].x1 == run.x1; });
            if (above != open.end()) {
                out[*above].y1 = y1;
                now.push_back(*above);
            } else {
                out.push_back(run);
                now.push_back(out.size() - 1);
            }
            i = k;
        }
        open = now;
    }
    return out;
}

}  // namespace

BackdropPlan plan_backdrop(const std::vector<Layer>& layers, const Box& display, bool window_bg_opaque) {
    BackdropPlan plan;
    std::vector<std::size_t> alone;  // window backgrounds with nothing drawn before them
    float alone_area = 0.0f;
    for (std::size_t i = 0; i < layers.size(); ++i) {
        const Layer& l = layers[i];
        if (!l.window_bg) continue;
        bool behind = false;
        for (std::size_t j = 0; j < i && !behind; ++j) behind = overlap(layers[j].box, background_of(l));
        if (!behind && corners_patchable(l)) {
            alone.push_back(i);
            alone_area += clamp_to(background_of(l), display).area();
        } else {
            plan.own_background.push_back(i);
        }
    }
    // The clear takes the colour that covers more of the display; the other one is filled.
    plan.clear_with_window_bg = window_bg_opaque && 2.0f * alone_area >= display.area() && alone_area > 0.0f;
    if (!plan.clear_with_window_bg) {
        plan.own_background.insert(plan.own_background.end(), alone.begin(), alone.end());
        std::sort(plan.own_background.begin(), plan.own_background.end());
        return plan;
    }
    plan.on_backdrop = alone;
    std::vector<Box> boxes;
    for (std::size_t i : alone) {
        boxes.push_back(clamp_to(background_of(layers[i]), display));
        for (const CornerPatch& c : corner_patches(layers[i])) plan.corners.push_back(c);
    }
    plan.gaps = complement(boxes, display);
    return plan;
}

}  // namespace attnscope::ui
