// Windows hidden behind other windows. The Heads and Follow panels (and Gradients, Beyond) share
// one place on screen, like tabs, so one of them is always completely covered by another. ImGui
// still builds and submits its draw lists, and under software GL (Mesa llvmpipe) every pixel of
// every submitted window costs CPU. DropCoveredWindows() removes, after ImGui::Render(), the draw
// lists of every window that an opaque window in front of it covers completely. What is on screen
// does not change: the front window's background is opaque over the whole covered rectangle. A
// panel asks whether it was covered through softgl.hpp's SkipCoveredWindow().
#pragma once

struct ImDrawData;

namespace attnscope {

// Removes the covered windows' draw lists (and their child windows') from draw_data and fixes its
// vertex and index totals. Returns how many draw lists were removed.
int DropCoveredWindows(ImDrawData* draw_data);

// After DropCoveredWindows(): a window skipped its work this frame but is no longer covered (the
// window in front was closed or moved), so one more frame must be drawn.
bool SkippedWindowUncovered();

}  // namespace attnscope
