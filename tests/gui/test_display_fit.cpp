// Following the window (app/gui/logic/display_fit): the UI scale chosen again, the panels placed
// again, a user's own arrangement kept through small changes and never undone silently.
#include <doctest/doctest.h>

#include "logic/display_fit.hpp"

using namespace attnscope::ui;

namespace {
const DisplayInfo k1600{1600, 1000, 1.0f};
}  // namespace

TEST_CASE("display fit: an untouched layout follows every change of size") {
    const FitChange small = follow_display(k1600, 1.0f, {1580, 990, 1.0f}, false);
    CHECK(small.replace);
    CHECK_FALSE(small.keep_inside);
    CHECK_FALSE(small.tell);
    CHECK_FALSE(small.rescale);  // below 1600 x 1000 the scale stays 1
    CHECK(small.new_reference);
    const FitChange large = follow_display(k1600, 1.0f, {1024, 768, 1.0f}, false);
    CHECK(large.replace);
    CHECK_FALSE(large.tell);
}

TEST_CASE("display fit: the UI scale is chosen again for a larger window, the same as at start") {
    const FitChange c = follow_display(k1600, 1.0f, {2560, 1440, 1.0f}, false);
    CHECK(c.rescale);
    CHECK(c.display_scale == doctest::Approx(default_ui_scale(2560, 1440, 1.0f)));
    CHECK(c.display_scale == doctest::Approx(1.44f));
    CHECK(c.replace);
    // Back to the start size: back to the start scale, even though 1.0 is within a step of 1.04.
    const FitChange back = follow_display({1664, 1040, 1.0f}, 1.04f, k1600, false);
    CHECK(back.rescale);
    CHECK(back.display_scale == 1.0f);
}

TEST_CASE("display fit: a few pixels on a large window do not rebuild the fonts") {
    const DisplayInfo hd{1920, 1080, 1.0f};
    const float s = default_ui_scale(1920, 1080, 1.0f);
    const FitChange c = follow_display(hd, s, {1930, 1084, 1.0f}, false);
    CHECK_FALSE(c.rescale);
    CHECK(c.display_scale == s);
    CHECK(c.replace);  // the panels still follow the new size
}

TEST_CASE("display fit: another monitor's scale is taken at once") {
    const FitChange c = follow_display(k1600, 1.0f, {1600, 1000, 2.0f}, false);
    CHECK(c.rescale);
    CHECK(c.display_scale == 2.0f);
    CHECK(c.replace);
    // Even a scale within a step of the current one, when the desktop's scale changed.
    const FitChange near = follow_display({1600, 1000, 1.0f}, 1.0f, {1600, 1000, 1.03f}, false);
    CHECK(near.rescale);
}

TEST_CASE("display fit: a user's arrangement survives a small resize, inside the display") {
    const FitChange c = follow_display(k1600, 1.0f, {1500, 950, 1.0f}, true);
    CHECK_FALSE(c.replace);
    CHECK(c.keep_inside);
    CHECK_FALSE(c.tell);
    CHECK_FALSE(c.new_reference);  // small changes add up: measured from the arrangement's own size
    // 15% on either side is still small; beyond it the arrangement gives way.
    CHECK_FALSE(follow_display(k1600, 1.0f, {1360, 1000, 1.0f}, true).replace);
    CHECK_FALSE(follow_display(k1600, 1.0f, {1600, 1150, 1.0f}, true).replace);
}

TEST_CASE("display fit: a large change or a new scale re-places a user's arrangement, and says so") {
    const FitChange smaller = follow_display(k1600, 1.0f, {1024, 768, 1.0f}, true);
    CHECK(smaller.replace);
    CHECK(smaller.tell);
    CHECK_FALSE(smaller.keep_inside);
    CHECK(smaller.new_reference);
    const FitChange monitor = follow_display(k1600, 1.0f, {1600, 1000, 2.0f}, true);
    CHECK(monitor.replace);
    CHECK(monitor.tell);
}

TEST_CASE("display fit: a panel moved, resized or restored from a saved layout counts; rounding does not") {
    const Rect asked{100, 24, 500, 400};
    CHECK_FALSE(moved_from(asked, asked));
    CHECK_FALSE(moved_from(asked, {101, 24.5f, 499, 401}));
    CHECK(moved_from(asked, {300, 24, 500, 400}));
    CHECK(moved_from(asked, {100, 24, 500, 300}));
}

TEST_CASE("display fit: keep_inside moves a panel back in, nearest to where it was, shrinking it when larger") {
    const Rect area{0, 22, 1024, 746};
    const Rect inside{10, 30, 300, 200};
    const Rect same = keep_inside(inside, area);
    CHECK(same.x == 10);
    CHECK(same.y == 30);
    CHECK(same.w == 300);
    CHECK(same.h == 200);
    const Rect right = keep_inside({900, 600, 400, 300}, area);  // past the right and bottom edges
    CHECK(right.x == 624);
    CHECK(right.y == 468);
    CHECK(right.w == 400);
    CHECK(right.h == 300);
    const Rect above = keep_inside({-50, 0, 200, 100}, area);  // left of the display, over the menu bar
    CHECK(above.x == 0);
    CHECK(above.y == 22);
    const Rect huge = keep_inside({-10, -10, 2000, 1000}, area);
    CHECK(huge.x == 0);
    CHECK(huge.y == 22);
    CHECK(huge.w == 1024);
    CHECK(huge.h == 746);
}

TEST_CASE("display fit: under 1024 wide a user's arrangement keeps its scale through a small resize") {
    const DisplayInfo xga{1024, 768, 1.0f}, narrower{964, 768, 1.0f};
    const FitChange kept = follow_display(xga, 1.0f, narrower, true);
    CHECK_FALSE(kept.rescale);  // 0.94 would rebuild the fonts and so place the panels anew
    CHECK_FALSE(kept.replace);
    CHECK(kept.keep_inside);
    const FitChange untouched = follow_display(xga, 1.0f, narrower, false);
    CHECK(untouched.rescale);
    CHECK(untouched.display_scale == doctest::Approx(default_ui_scale(964, 768, 1.0f)));
    const FitChange large = follow_display(xga, 1.0f, {800, 600, 1.0f}, true);  // past 15%: the scale follows
    CHECK(large.rescale);
    CHECK(large.replace);
    CHECK(large.tell);
}
