// Axis colours and axis moves: the same axis label has the same colour in every panel, and a
// step's axes can be traced back to where they sat in its input (for the shape-view animation).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tensor.hpp"

namespace attnscope::ui {

// 0xRRGGBB. Fixed for the pinned labels (B, N, N', 3, h, c, C, 3C); "X/k" has X's colour; any
// other label gets a stable colour from a spare palette chosen by its text.
std::uint32_t axis_color(const std::string& label);

// 0x000000 or 0xFFFFFF, whichever reads better on the colour.
std::uint32_t text_color_on(std::uint32_t rgb);

// Relative luminance in [0, 1] (sRGB weights, no gamma: good enough to pick a text colour).
float luminance(std::uint32_t rgb);

// Where each axis of `after` came from in `before`, in units of before-axis positions.
//  - the same label (first unused occurrence) -> that position: permute/transpose moves it;
//  - a new label (a split "3C" -> "3","h","c" or a merge "h","c" -> "C") -> the mean position of
//    the before-axes that have no partner, so the new boxes grow out of the axes they replace;
//  - a label derived from one ("H/2", "W/2" of patch merging's 2 x 2 neighbours) -> that axis;
//  - nothing to come from -> its own position (it simply appears).
struct AxisMove {
    float from = 0.0f;     // position in `before`
    bool matched = false;  // the same label existed before
    bool derived = false;  // "X/k" from the axis X
};

// "H" for "H/2"; the label itself when it has no "/k".
std::string base_label(const std::string& label);
std::vector<AxisMove> axis_moves(const Axes& before, const Axes& after);

// True when `after` is a reordering of `before` with at least one axis in a new place.
bool is_reorder(const Axes& before, const Axes& after);

// A reshape keeps the numbers in row-major (memory) order and only cuts that order into a new
// shape. When its labels read like a reordering (is_reorder), the axis to show it by: the first
// label of `after` that sits at another position in `before`; -1 when there is none.
int relabelled_axis(const Axes& before, const Axes& after);

// Runs along the memory order of a row-major `shape`, by the index each number has on `axis`:
// `samples` evenly spaced memory positions, consecutive ones with the same index merged.
struct MemoryRun {
    std::size_t begin = 0, end = 0;  // in samples
    std::size_t index = 0;           // the index on the axis
};
std::vector<MemoryRun> memory_runs(const Shape& shape, std::size_t axis, std::size_t samples);

// Smooth 0..1 -> 0..1 (cubic ease in-out), clamped.
float ease_in_out(float t);

}  // namespace attnscope::ui
