// The followed element's rules (hover follows only while hovered, a click pins, Esc/clear ends it)
// and the outlines of marked cells (drawn around regions, never filling them).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "logic/follow.hpp"

using attnscope::ui::FollowState;
using attnscope::ui::mark_outline;
using attnscope::ui::MarkEdge;

TEST_CASE("follow: a hovered cell is followed only while the mouse is on it") {
    FollowState f;
    f.hover("x", {0, 1, 2}, false);
    CHECK(f.active());
    CHECK_FALSE(f.pinned);
    CHECK_FALSE(f.end_frame());  // hovered this frame: kept
    CHECK(f.step == "x");
    // The next frame reports no hover (the mouse left): dropped, and the frame loop is told.
    CHECK(f.end_frame());
    CHECK_FALSE(f.active());
    CHECK(f.index.empty());
    CHECK_FALSE(f.end_frame());  // nothing left to drop
}

TEST_CASE("follow: a click pins; the pin survives leaving and hovering other cells") {
    FollowState f;
    f.hover("attn", {0, 1, 2, 3}, true);
    CHECK(f.pinned);
    f.end_frame();
    CHECK_FALSE(f.end_frame());
    CHECK(f.step == "attn");
    f.hover("attn", {0, 1, 5, 5}, false);  // moving over another cell does not move the pin
    CHECK(f.index == std::vector<std::size_t>{0, 1, 2, 3});
    f.hover("q", {0, 0, 1, 1}, true);  // another click moves it
    CHECK(f.step == "q");
    CHECK(f.pinned);
}

TEST_CASE("follow: the Follow panel appears for a pinned element only, never for a hover or nothing") {
    FollowState f;
    CHECK_FALSE(f.shows_panel());  // at start: Heads, which shares its place, is visible
    f.hover("x", {0, 1}, false);
    CHECK_FALSE(f.shows_panel());
    f.hover("x", {0, 1}, true);
    CHECK(f.shows_panel());
    f.clear();
    CHECK_FALSE(f.shows_panel());
    f.pin("q", {0, 1, 2, 3});
    CHECK(f.shows_panel());
    f.unpin();
    CHECK_FALSE(f.shows_panel());
}

TEST_CASE("follow: clicking the pinned cell unpins it; clear and unpin end the follow") {
    FollowState f;
    f.hover("x", {0, 3, 4}, true);
    f.end_frame();
    f.hover("x", {0, 3, 4}, true);
    CHECK_FALSE(f.pinned);
    CHECK(f.active());        // still hovered this frame
    f.end_frame();
    CHECK(f.end_frame());     // then gone once the mouse leaves
    f.pin("context", {0, 1, 2});  // --follow
    CHECK(f.pinned);
    f.clear();                // Esc or the "clear" button
    CHECK_FALSE(f.active());
    CHECK_FALSE(f.pinned);
    f.pin("context", {0, 1, 2});
    f.unpin();
    f.end_frame();
    CHECK_FALSE(f.active());
}

namespace {

// Whether some edge of the outline covers grid segment (line, at) in the given direction.
bool covered(const std::vector<MarkEdge>& edges, bool horizontal, std::size_t line, std::size_t at) {
    return std::any_of(edges.begin(), edges.end(), [&](const MarkEdge& e) {
        return e.horizontal == horizontal && e.line == line && e.begin <= at && at < e.end;
    });
}

}  // namespace

TEST_CASE("outline: a fully marked slice is outlined at its border only") {
    const std::size_t R = 5, C = 7;
    const std::vector<std::uint8_t> marks(R * C, 1);
    const auto edges = mark_outline(marks, R, C, 0, R, 0, C);
    REQUIRE(edges.size() == 4);  // merged: top, bottom, left, right
    for (std::size_t c = 0; c < C; ++c) {
        CHECK(covered(edges, true, 0, c));
        CHECK(covered(edges, true, R, c));
        for (std::size_t line = 1; line < R; ++line) CHECK_FALSE(covered(edges, true, line, c));
    }
    for (std::size_t r = 0; r < R; ++r) {
        CHECK(covered(edges, false, 0, r));
        CHECK(covered(edges, false, C, r));
    }
}

TEST_CASE("outline: one cell gets four sides pointing away from it; two regions each get theirs") {
    std::vector<std::uint8_t> marks(4 * 4, 0);
    marks[1 * 4 + 2] = 3;  // the element itself at (1, 2)
    auto edges = mark_outline(marks, 4, 4, 0, 4, 0, 4);
    REQUIRE(edges.size() == 4);
    for (const MarkEdge& e : edges) {
        CHECK(e.mark == 3);
        CHECK(e.end - e.begin == 1);
        if (e.horizontal) CHECK(e.outward == (e.line == 1 ? -1 : +1));
        else CHECK(e.outward == (e.line == 2 ? -1 : +1));
    }
    marks[1 * 4 + 3] = 1;  // a source right beside it: both outline the line between them
    edges = mark_outline(marks, 4, 4, 0, 4, 0, 4);
    CHECK(std::count_if(edges.begin(), edges.end(), [](const MarkEdge& e) { return !e.horizontal && e.line == 3; }) == 2);
}

TEST_CASE("outline: only the visible rows and columns get edges; no marks, no edges") {
    std::vector<std::uint8_t> marks(10 * 10, 2);
    // Rows 3..6 and columns 2..5 on screen: the region continues beyond, so no edge at all.
    CHECK(mark_outline(marks, 10, 10, 3, 7, 2, 6).empty());
    CHECK(mark_outline(std::vector<std::uint8_t>(100, 0), 10, 10, 0, 10, 0, 10).empty());
    CHECK(mark_outline(marks, 10, 9, 0, 10, 0, 9).empty());  // marks of another size: nothing drawn
}
