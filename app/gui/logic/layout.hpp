// The default arrangement of the panels: for a display size, the height of the menu bar and the UI
// scale, the rectangle of each panel. Window-free (tests/gui/test_layout.cpp checks it at common
// screen sizes); panels/common.cpp's PlaceWindow hands these rectangles to ImGui.
//
//   ┌ menu bar ──────────────────────────────────────────────────────┐
//   │ Pipeline        │ Shape view            │ Heads / Follow /     │
//   │ (its 17 rows)   │ (narrative, boxes)    │ Beyond               │
//   ├─────────────────┤                       │ (Gradients: the      │
//   │ Config / Image  ├───────────────────────┤ whole column)        │
//   │ / Bug zoo       │ Tensor inspector      ├──────────────────────┤
//   │                 │                       │ Row sums / Attention │
//   │                 │                       │ map / Quiz           │
//   └─────────────────┴───────────────────────┴──────────────────────┘
//
// The left column holds text (one pipeline line per step, the config's fields): it grows with the
// font, not with the screen, and the pipeline is as high as its rows need, leaving the rest to the
// config or the ViT's picture. The middle and right columns hold the heatmaps: they take the rest,
// so a larger screen gives larger heatmaps. The quiz takes Row sums' place: the pipeline, the Shape
// view and the inspector, which an answer needs, stay in sight.
#pragma once

#include <string>
#include <vector>

namespace attnscope::ui {

struct Rect {
    float x = 0.0f, y = 0.0f, w = 0.0f, h = 0.0f;  // top-left corner and size, in pixels
    float right() const { return x + w; }
    float bottom() const { return y + h; }
};

// Every panel the arrangement places. Panels that share a place (Heads, Follow and Beyond; Config,
// Image and Bug zoo; Row sums and Attention map) are shown one at a time, like tabs.
enum class Panel {
    Pipeline,
    Config,
    Image,
    Zoo,
    Shape,
    Inspector,
    Heads,
    Follow,
    Beyond,
    Gradients,
    RowSums,
    AttentionMap,
    Cost,
    Quiz,
};
inline constexpr Panel kAllPanels[] = {Panel::Pipeline, Panel::Config,  Panel::Image,     Panel::Zoo,
                                       Panel::Shape,    Panel::Inspector, Panel::Heads,   Panel::Follow,
                                       Panel::Beyond,   Panel::Gradients, Panel::RowSums, Panel::AttentionMap,
                                       Panel::Cost,     Panel::Quiz};

// The panel's window ID, in English whatever the language ("Heads" in "注意力头###Heads"); also its
// title in the --layout-json report.
const char* panel_id(Panel p);

struct LayoutInput {
    float display_w = 1600.0f, display_h = 1000.0f;
    float menu_h = 22.0f;  // the main menu bar's height: no panel starts above it
    float scale = 1.0f;    // the UI scale: fonts are 16 px times this
    bool vit = false;      // a ViT on screen: its picture (the Image panel) under the pipeline
    bool divergence = false;  // a trace that differs from its reference: the inspector's difference map
};

// The default rectangle of a panel: inside the display, under the menu bar.
Rect default_rect(Panel p, const LayoutInput& in);

// The UI scale the app starts with on a display of this size (in pixels, as ImGui sees it):
// 1 up to 1600 x 1000 (text must stay readable on a 1024 x 768 projector), smaller under 1024 x 720
// so an 800 x 600 window holds what a 1024 x 768 one does (0.78, 12.5 px text; never under 0.75),
// growing with the screen beyond it (2560 x 1440: 1.44), and at least the desktop's own scale
// (content_scale: 2 for a desktop set to 200% whose windows are not already scaled).
float default_ui_scale(float display_w, float display_h, float content_scale);
inline constexpr float kMinUiScale = 0.75f;  // 12 px text: the smallest a display chooses
inline constexpr float kMaxUiScale = 3.0f;  // the display's scale times the zoom (Ctrl+=) at most

// Presentation mode's text size over the UI's: twice on a screen of 1600 x 1000 or more, down to 1.5
// times on a smaller one (a 1024 x 768 projector) and 1.25 under 1000 x 700 (800 x 600), so a step's
// narrative fits beside its heatmap (and a ViT's picture).
float presentation_scale(float display_w, float display_h);

// The share of r's area that no rectangle of `above` covers (1: fully visible, 0: hidden).
float visible_fraction(const Rect& r, const std::vector<Rect>& above);

// What --layout-json writes: the display, the menu bar's height and the panels, back to front:
// {"display": [w, h], "menu_bar_height": px, "panels": [{"title", "x", "y", "w", "h",
// "visible_fraction", "scrolls", "cuts": [{"where", "px"}]}]}.
struct PanelReport {
    std::string title;  // the window's ID (English)
    Rect rect;
    float visible_fraction = 1.0f;
    bool scrolls = false;  // the panel, or a region of it, has more than it shows (a vertical scrollbar)
    // Content the panel cuts off with no scrollbar to reach it: where (the window's right edge, a
    // child region's, a table column's) and by how many pixels, e.g. a label past the window's edge.
    struct Cut {
        std::string where;
        float px = 0.0f;
    };
    std::vector<Cut> cuts;
};
std::string layout_report_json(float display_w, float display_h, float menu_h, const std::vector<PanelReport>& panels);

}  // namespace attnscope::ui
