#include "logic/display_fit.hpp"

#include <algorithm>
#include <cmath>

namespace attnscope::ui {

FitChange follow_display(const DisplayInfo& placed, float display_scale, const DisplayInfo& now, bool arranged) {
    FitChange c;
    c.display_scale = display_scale;
    // The scale the display asks for, taken when it differs by a step, when the desktop's own scale
    // changed (another monitor), or when it is back at 1 (a window back at an ordinary size has the
    // scale it would start with). A user's own arrangement keeps its scale through a small resize
    // (a window under 1024 wide would otherwise rescale, and so undo it, every few dozen pixels).
    const bool resized = now.w != placed.w || now.h != placed.h;
    const bool large = std::fabs(now.w - placed.w) > kKeepArrangementShare * placed.w ||
                       std::fabs(now.h - placed.h) > kKeepArrangementShare * placed.h;
    const bool desktop_changed = now.content_scale != placed.content_scale;
    const float want = default_ui_scale(now.w, now.h, now.content_scale);
    if (want != display_scale && (!arranged || large || desktop_changed) &&
        (std::fabs(want - display_scale) >= kRescaleStep || want == 1.0f || desktop_changed)) {
        c.display_scale = want;
        c.rescale = true;
    }
    // A new scale changes every panel's text: an arrangement made for the old one no longer fits.
    if (!arranged) {
        c.replace = resized || c.rescale;
    } else {
        c.replace = large || c.rescale;
        c.tell = c.replace;
    }
    c.keep_inside = !c.replace;
    c.new_reference = c.replace;
    return c;
}

bool moved_from(const Rect& asked, const Rect& now) {
    constexpr float kTolerance = 2.0f;  // pixels: rounding of sizes by ImGui
    return std::fabs(asked.x - now.x) > kTolerance || std::fabs(asked.y - now.y) > kTolerance ||
           std::fabs(asked.w - now.w) > kTolerance || std::fabs(asked.h - now.h) > kTolerance;
}

Rect keep_inside(const Rect& r, const Rect& area) {
    Rect out;
    out.w = std::min(r.w, area.w);
    out.h = std::min(r.h, area.h);
    out.x = std::clamp(r.x, area.x, area.right() - out.w);
    out.y = std::clamp(r.y, area.y, area.bottom() - out.h);
    return out;
}

}  // namespace attnscope::ui
