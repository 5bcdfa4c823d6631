// Who paints the windows' backgrounds on a software rasterizer. Under Mesa's llvmpipe every pixel
// ImGui fills runs the full fragment shader (texture fetch, blend) on the CPU, and the panels'
// opaque backgrounds cover the whole display: at 1600x1000 about a quarter of a frame's rasterizer
// CPU. A glClear of the whole framebuffer is nearly free by comparison. So when the windows that
// lie straight on the backdrop cover most of the display, the clear paints their background colour
// and only the rest is filled: the gaps between windows in the backdrop colour, the rounded corners
// of those windows, and the backgrounds of windows stacked over other windows, each right before
// its window, as ImGui would have drawn it. The picture is the same pixel for pixel (tested under
// xvfb-run against ImGui's own backgrounds). Under llvmpipe a drawn frame then takes about half the
// CPU (README, Benchmark: GUI).
#pragma once

#include <cstddef>
#include <vector>

namespace attnscope::ui {

// [x0, x1) x [y0, y1), in ImGui's display coordinates.
struct Box {
    float x0 = 0, y0 = 0, x1 = 0, y1 = 0;
    float area() const;
};

// a and b share an area, not only an edge.
bool overlap(const Box& a, const Box& b);

// One draw list of the frame, in drawing order (back to front).
struct Layer {
    Box box;                 // all it may draw lies in here (the whole display for a popup or an unknown list)
    bool window_bg = false;  // a plain window whose opaque WindowBg background is left to the plan
    float rounding = 0;      // its corner radius (ImGui's window->WindowRounding)
    float title_height = 0;  // its title bar, 0 without one
};

// Its WindowBg background: the box below the title bar.
Box background_of(const Layer& layer);

// A rounded corner of a window whose background the clear paints is cut back to the backdrop colour
// by two fills: `cut` (the rounding x rounding square in the corner) in the backdrop colour, then
// `rounded` (a larger square in the corner) in the background colour, rounded at that corner only.
// Its arc is then the one ImGui draws: ImGui clamps a corner's radius to a side's length minus 1,
// and the larger square's sides keep it whole.
enum class Corner { TopLeft, TopRight, BottomLeft, BottomRight };
struct CornerPatch {
    Corner corner;
    float rounding;
    Box cut, rounded;
};

struct BackdropPlan {
    bool clear_with_window_bg = false;        // else the clear is the backdrop colour
    std::vector<std::size_t> own_background;  // layers whose background is filled right before them
    std::vector<std::size_t> on_backdrop;     // layers whose background the clear paints
    std::vector<Box> gaps;                    // the display outside those backgrounds: the backdrop colour
    std::vector<CornerPatch> corners;         // their rounded corners, drawn after the gaps
};

// A window's background is painted by the clear when nothing is drawn before it where it lies (a
// title bar may lie over the window behind: the gaps fill the backdrop colour under it) and its
// corners can be patched; that happens when such backgrounds cover at least half the display.
// window_bg_opaque: the WindowBg colour has alpha 1 (else no clear can stand for it).
BackdropPlan plan_backdrop(const std::vector<Layer>& layers, const Box& display, bool window_bg_opaque = true);

}  // namespace attnscope::ui
