#include "logic/follow.hpp"

#include <algorithm>

namespace attnscope::ui {

void FollowState::hover(const std::string& hovered_step, const std::vector<std::size_t>& hovered_index, bool clicked) {
    hovered_this_frame = true;
    const bool same = hovered_step == step && hovered_index == index;
    if (clicked && pinned && same) {
        pinned = false;  // a click on the pinned cell unpins it; it stays followed while hovered
        return;
    }
    if (pinned && !clicked) return;  // a pin holds while the mouse moves over other cells
    step = hovered_step;
    index = hovered_index;
    if (clicked) pinned = true;
}

void FollowState::pin(const std::string& pinned_step, const std::vector<std::size_t>& pinned_index) {
    step = pinned_step;
    index = pinned_index;
    pinned = true;
}

void FollowState::unpin() { pinned = false; }

void FollowState::clear() {
    step.clear();
    index.clear();
    pinned = false;
}

bool FollowState::end_frame() {
    const bool drop = !pinned && !hovered_this_frame && active();
    if (drop) clear();
    hovered_this_frame = false;
    return drop;
}

namespace {

// Appends an edge, merged with the previous one when it continues it on the same line.
void add_edge(std::vector<MarkEdge>& out, const MarkEdge& e) {
    if (!out.empty()) {
        MarkEdge& last = out.back();
        if (last.horizontal == e.horizontal && last.line == e.line && last.mark == e.mark && last.outward == e.outward &&
            last.end == e.begin) {
            last.end = e.end;
            return;
        }
    }
    out.push_back(e);
}

}  // namespace

std::vector<MarkEdge> mark_outline(const std::vector<std::uint8_t>& marks, std::size_t rows, std::size_t cols,
                                   std::size_t r0, std::size_t r1, std::size_t c0, std::size_t c1) {
    std::vector<MarkEdge> out;
    if (marks.size() != rows * cols) return out;
    r1 = std::min(r1, rows);
    c1 = std::min(c1, cols);
    const auto at = [&](std::size_t r, std::size_t c) -> std::uint8_t {
        return r < rows && c < cols ? marks[r * cols + c] : 0;
    };
    // Horizontal edges: grid lines r0 .. r1, each between row line-1 (above) and row line (below).
    for (std::size_t line = r0; line <= r1 && r0 < r1; ++line)
        for (std::size_t c = c0; c < c1; ++c) {
            const std::uint8_t above = line > 0 ? at(line - 1, c) : 0, below = at(line, c);
            if (above == below) continue;
            if (above && line > r0) add_edge(out, {true, line, c, c + 1, above, +1});
            if (below && line < r1) add_edge(out, {true, line, c, c + 1, below, -1});
        }
    // Vertical edges: grid lines c0 .. c1, each between column line-1 (left) and column line (right).
    for (std::size_t line = c0; line <= c1 && c0 < c1; ++line)
        for (std::size_t r = r0; r < r1; ++r) {
            const std::uint8_t left = line > 0 ? at(r, line - 1) : 0, right = at(r, line);
            if (left == right) continue;
            if (left && line > c0) add_edge(out, {false, line, r, r + 1, left, +1});
            if (right && line < c1) add_edge(out, {false, line, r, r + 1, right, -1});
        }
    return out;
}

}  // namespace attnscope::ui
