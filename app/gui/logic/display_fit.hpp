// Following the window when its size or its monitor's scale changes: a new UI scale (the user's zoom
// stays on top of it) and the panels placed again for the new size, unless the user arranged them
// and the change is small. Window-free (tests/gui/test_display_fit.cpp); app.cpp asks every live
// frame, panels/common.cpp's PlaceWindow carries the answer out.
//
//   nobody moved a panel          any change of size or scale: panels back in the default layout
//   the user arranged the panels  a side within 15% of the size the arrangement was made for, the
//                                 same scale: the arrangement stays, panels outside are moved back in
//                                 a larger change: panels back in the default layout, said in the
//                                 status line (never silently)
#pragma once

#include "logic/layout.hpp"

namespace attnscope::ui {

// A display as the arrangement sees it: its size in ImGui's pixels and the desktop's own scale
// (content_scale, as default_ui_scale takes it).
struct DisplayInfo {
    float w = 0.0f, h = 0.0f;
    float content_scale = 1.0f;
};

// How much a side may change (as a share of the size the arrangement was made for) before a user's
// own arrangement gives way to the default layout.
inline constexpr float kKeepArrangementShare = 0.15f;
// A new UI scale closer than this to the current one is not taken: resizing by a few pixels does not
// rebuild the fonts.
inline constexpr float kRescaleStep = 0.05f;

struct FitChange {
    float display_scale = 1.0f;  // the UI scale before zoom from now on (the current one when unchanged)
    bool rescale = false;        // display_scale differs from the current one: fonts are rebuilt
    bool replace = false;        // every panel back at its default rectangle for the new size
    bool keep_inside = false;    // the arrangement stays; a panel reaching outside the display moves in
    bool tell = false;           // replace undoes the user's own arrangement: say so in the status line
    // Whether `placed` (what the arrangement was made for) becomes `now`: after a replace or a
    // rescale; a kept arrangement keeps its reference, so small changes add up to a large one.
    bool new_reference = false;
};

// placed: the display the arrangement was made for; display_scale: the UI scale in use; now: the
// display this frame; arranged: the user moved or resized a panel since it was placed.
FitChange follow_display(const DisplayInfo& placed, float display_scale, const DisplayInfo& now, bool arranged);

// Whether a panel the app placed at `asked` now lies elsewhere (moved or resized by the user, or
// restored from a saved layout), beyond a pixel or two of rounding.
bool moved_from(const Rect& asked, const Rect& now);

// r moved (and shrunk, when larger) to lie inside `area`, nearest to where it was.
Rect keep_inside(const Rect& r, const Rect& area);

}  // namespace attnscope::ui
