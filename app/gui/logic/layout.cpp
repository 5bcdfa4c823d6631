#include "logic/layout.hpp"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

namespace attnscope::ui {

const char* panel_id(Panel p) {
    switch (p) {
        case Panel::Pipeline: return "Pipeline";
        case Panel::Config: return "Config";
        case Panel::Image: return "Image";
        case Panel::Zoo: return "zoo";
        case Panel::Shape: return "Shape view";
        case Panel::Inspector: return "Tensor inspector";
        case Panel::Heads: return "Heads";
        case Panel::Follow: return "Follow";
        case Panel::Beyond: return "Beyond";
        case Panel::Gradients: return "gradients";
        case Panel::RowSums: return "Row sums";
        case Panel::AttentionMap: return "Attention map";
        case Panel::Cost: return "Cost";
        case Panel::Quiz: return "Quiz";
    }
    return "?";
}

namespace {

// The grid's edges, in whole pixels: neighbouring panels share an edge, no gap, no overlap.
struct Grid {
    float x0, x1, x2, x3;         // left column [x0, x1), middle [x1, x2), right [x2, x3)
    float y0, y_left, y_mid, y_right, y1;  // each column's split between its top and bottom panel
};

Grid grid(const LayoutInput& in) {
    const float em = 16.0f * in.scale;  // one line of text
    const float w = std::max(in.display_w, 1.0f);
    const float top = std::clamp(std::ceil(in.menu_h), 0.0f, in.display_h - 1.0f);
    const float h = std::max(in.display_h - top, 1.0f);
    // A top panel between 30% of the height and what leaves 12 lines to the one below.
    auto split = [&](float want) { return std::round(top + std::clamp(want, h * 0.3f, std::max(h - 12.0f * em, h * 0.3f))); };
    Grid g{};
    g.x0 = 0.0f;
    g.x3 = std::round(w);
    // Text: a third of the width, at most 31 font sizes, what the longest pipeline line needs
    // ("[2, 8, 16, 16] @ [2, 8, 16, 96] → [2, 8, 16, 96]" and the check column).
    g.x1 = std::round(std::min(w * 0.33f, 31.0f * em));
    // Heatmaps: the rest, the middle column (the inspector's one large map) a little wider.
    g.x2 = std::round(g.x1 + (w - g.x1) * 0.56f);
    g.y0 = top;
    g.y1 = std::round(in.display_h);
    // The pipeline as high as its 17 rows, its controls and title bar need (25 lines, a file's
    // divergence line included; 23 for a ViT, which has none); Config or the ViT's picture below
    // take the rest.
    g.y_left = split((in.vit ? 23.0f : 25.0f) * em);
    // The Shape view's boxes above, the inspector's heatmap below: more of it for a divergence, whose
    // difference map is the evidence under the facts, the difference and its diagnosis.
    g.y_mid = split(h * (in.divergence ? 0.38f : 0.49f));
    g.y_right = split(h * 0.55f);  // the heads grid above, the row sums below
    return g;
}

Rect span(float x0, float y0, float x1, float y1) { return {x0, y0, x1 - x0, y1 - y0}; }

}  // namespace

Rect default_rect(Panel p, const LayoutInput& in) {
    const Grid g = grid(in);
    switch (p) {
        case Panel::Pipeline: return span(g.x0, g.y0, g.x1, g.y_left);
        case Panel::Config:
        case Panel::Image:
        case Panel::Zoo: return span(g.x0, g.y_left, g.x1, g.y1);
        case Panel::Shape: return span(g.x1, g.y0, g.x2, g.y_mid);
        case Panel::Inspector: return span(g.x1, g.y_mid, g.x2, g.y1);
        case Panel::Heads:
        case Panel::Follow:
        case Panel::Beyond: return span(g.x2, g.y0, g.x3, g.y_right);
        case Panel::Gradients: return span(g.x2, g.y0, g.x3, g.y1);
        case Panel::RowSums:
        case Panel::AttentionMap:
        case Panel::Quiz: return span(g.x2, g.y_right, g.x3, g.y1);
        case Panel::Cost: {  // over the others, centred, leaving their edges in sight
            const float w = g.x3 - g.x0, h = g.y1 - g.y0;
            return span(std::round(w * 0.11f), std::round(g.y0 + h * 0.02f), std::round(w * 0.89f),
                        std::round(g.y0 + h * 0.84f));
        }
    }
    return span(g.x0, g.y0, g.x3, g.y1);
}

float default_ui_scale(float display_w, float display_h, float content_scale) {
    const float by_size = std::min(display_w / 1600.0f, display_h / 1000.0f);
    // Narrower than 1024 or lower than 720 (an 800 x 600 projector), the whole window shrinks as the
    // 1024 x 768 layout would, down to 12 px text: at 16 px the pipeline's shapes and the panels'
    // controls are cut.
    const float floor = std::clamp(std::min(display_w / 1024.0f, display_h / 720.0f), kMinUiScale, 1.0f);
    const float desktop = content_scale > 1.0f ? content_scale : 0.0f;  // a desktop at 125% or more
    return std::clamp(std::max(by_size, desktop), floor, kMaxUiScale);
}

float presentation_scale(float display_w, float display_h) {
    const float floor = display_w < 1000.0f || display_h < 700.0f ? 1.25f : 1.5f;
    return std::clamp(2.0f * std::min(display_w / 1600.0f, display_h / 1000.0f), floor, 2.0f);
}

float visible_fraction(const Rect& r, const std::vector<Rect>& above) {
    const double area = static_cast<double>(r.w) * r.h;
    if (area <= 0.0) return 0.0f;
    // The covered area is a union of rectangles: cut r along every edge inside it into cells and add
    // up the cells that some rectangle covers (a handful of windows: a few hundred cells).
    std::vector<float> xs{r.x, r.right()}, ys{r.y, r.bottom()};
    for (const Rect& a : above) {
        for (float x : {a.x, a.right()})
            if (x > r.x && x < r.right()) xs.push_back(x);
        for (float y : {a.y, a.bottom()})
            if (y > r.y && y < r.bottom()) ys.push_back(y);
    }
    std::sort(xs.begin(), xs.end());
    std::sort(ys.begin(), ys.end());
    double covered = 0.0;
    for (std::size_t i = 0; i + 1 < xs.size(); ++i)
        for (std::size_t j = 0; j + 1 < ys.size(); ++j) {
            const float cx = (xs[i] + xs[i + 1]) * 0.5f, cy = (ys[j] + ys[j + 1]) * 0.5f;
            const bool hit = std::any_of(above.begin(), above.end(), [&](const Rect& a) {
                return cx > a.x && cx < a.right() && cy > a.y && cy < a.bottom();
            });
            if (hit) covered += static_cast<double>(xs[i + 1] - xs[i]) * (ys[j + 1] - ys[j]);
        }
    return static_cast<float>(std::clamp(1.0 - covered / area, 0.0, 1.0));
}

std::string layout_report_json(float display_w, float display_h, float menu_h, const std::vector<PanelReport>& panels) {
    nlohmann::json j;
    j["display"] = {display_w, display_h};
    j["menu_bar_height"] = menu_h;
    j["panels"] = nlohmann::json::array();
    for (const PanelReport& p : panels) {
        nlohmann::json cuts = nlohmann::json::array();
        for (const PanelReport::Cut& c : p.cuts) cuts.push_back({{"where", c.where}, {"px", c.px}});
        j["panels"].push_back({{"title", p.title},
                               {"x", p.rect.x},
                               {"y", p.rect.y},
                               {"w", p.rect.w},
                               {"h", p.rect.h},
                               {"visible_fraction", p.visible_fraction},
                               {"scrolls", p.scrolls},
                               {"cuts", cuts}});
    }
    return j.dump(2) + "\n";
}

}  // namespace attnscope::ui
