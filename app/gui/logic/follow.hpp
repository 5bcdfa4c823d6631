// The followed element (Follow panel, inspector outlines, pipeline tint) and the outlines of marked
// cells. Window-free: the inspector reports its hovered cell, the frame loop ends each frame.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace attnscope::ui {

// What is followed: a pinned element (a click in the inspector, --follow) stays until it is cleared
// (Esc, "clear") or another click moves it; without a pin, the inspector's hovered cell is followed
// only while the mouse is on it.
struct FollowState {
    std::string step;                 // "" nothing is followed
    std::vector<std::size_t> index;   // the element's full index in step
    bool pinned = false;
    bool hovered_this_frame = false;  // the inspector reported a hovered cell during this frame

    bool active() const { return !step.empty(); }
    // The Follow panel appears for a pinned element only: a hovered one is marked in the pipeline
    // and the inspector, and the panel would cover the Heads grid (its place) at every hover.
    bool shows_panel() const { return pinned && active(); }
    // The inspector's hovered cell; clicked: pin it (clicking the pinned cell again unpins it).
    void hover(const std::string& hovered_step, const std::vector<std::size_t>& hovered_index, bool clicked);
    void pin(const std::string& pinned_step, const std::vector<std::size_t>& pinned_index);
    void unpin();  // the element stays followed while it is hovered
    void clear();
    // After every panel drew: an unpinned element that was not hovered this frame is dropped.
    // Returns true when that changed what is followed (the frame loop draws once more).
    bool end_frame();
};

// One side of an outline around marked cells: a horizontal edge lies on the grid line `line`
// (between rows line-1 and line) over columns [begin, end); a vertical one on the grid line `line`
// (between columns line-1 and line) over rows [begin, end). `outward` is the direction away from the
// marked cell (-1: towards smaller indices, +1: towards larger), so an outline can be drawn outside
// the cells and leave their colours visible.
struct MarkEdge {
    bool horizontal = true;
    std::size_t line = 0, begin = 0, end = 0;
    std::uint8_t mark = 0;
    int outward = -1;
};

// The outline of every region of equal non-zero marks (rows x cols, row-major), limited to the rows
// [r0, r1) and columns [c0, c1) on screen; neighbouring edges along one line are merged.
std::vector<MarkEdge> mark_outline(const std::vector<std::uint8_t>& marks, std::size_t rows, std::size_t cols,
                                   std::size_t r0, std::size_t r1, std::size_t c0, std::size_t c1);

}  // namespace attnscope::ui
