// Who paints the window backgrounds under software GL (app/gui/softgl/backdrop_plan.hpp). The pixels
// themselves are compared with ImGui's own backgrounds by the gui_smoke test under xvfb-run.
#include <doctest/doctest.h>

#include <algorithm>
#include <random>

#include "softgl/backdrop_plan.hpp"
#include "softgl/pieces.hpp"

using namespace attnscope::ui;

namespace {

const Box kDisplay{0, 0, 1600, 1000};

Layer window(Box box, float title = 24, float rounding = 4) { return {box, true, rounding, title}; }
Layer content(Box box) { return {box, false, 0, 0}; }  // a child window's list, or a collapsed window

bool contains(const Box& b, float x, float y) { return x >= b.x0 && x < b.x1 && y >= b.y0 && y < b.y1; }

bool listed(const std::vector<std::size_t>& v, std::size_t i) { return std::find(v.begin(), v.end(), i) != v.end(); }

// Every sample point of the display lies in exactly one gap or one background the clear paints.
void check_partition(const BackdropPlan& plan, const std::vector<Layer>& layers, const Box& display, float step) {
    int missed = 0, doubled = 0;
    for (float y = display.y0 + 0.5f; y < display.y1; y += step)
        for (float x = display.x0 + 0.5f; x < display.x1; x += step) {
            int n = 0;
            for (const Box& g : plan.gaps) n += contains(g, x, y);
            for (std::size_t i : plan.on_backdrop) n += contains(background_of(layers[i]), x, y);
            missed += n == 0;
            doubled += n > 1;
        }
    CHECK(missed == 0);
    CHECK(doubled == 0);
}

// The app's default layout: the main menu bar (24 high, no title, square), then six panels whose
// title bars start 2 px under it, with a child window's list after the first.
std::vector<Layer> tiled() {
    return {window({0, 0, 1600, 24}, 0, 0),   window({0, 22, 530, 570}),       content({0, 22, 530, 570}),
            window({0, 570, 530, 1000}),      window({530, 22, 1130, 522}),    window({530, 522, 1130, 1000}),
            window({1130, 570, 1600, 1000}),  window({1130, 22, 1600, 570})};
}

}  // namespace

TEST_CASE("tiled panels: the clear paints every background, the gaps and title bars are filled") {
    const std::vector<Layer> layers = tiled();
    const BackdropPlan plan = plan_backdrop(layers, kDisplay);
    CHECK(plan.clear_with_window_bg);
    CHECK(plan.own_background.empty());
    CHECK(plan.on_backdrop == std::vector<std::size_t>{0, 1, 3, 4, 5, 6, 7});
    check_partition(plan, layers, kDisplay, 1.0f);
    // The title bars lie in the gaps (they overlap the menu bar, drawn before them).
    bool title_in_gap = false;
    for (const Box& g : plan.gaps) title_in_gap = title_in_gap || contains(g, 100.5f, 30.5f);
    CHECK(title_in_gap);
    // Under a title bar ImGui rounds the bottom corners only: 2 patches per panel, none for the menu bar.
    REQUIRE(plan.corners.size() == 12);
    const CornerPatch& c = plan.corners[0];  // the Pipeline panel's bottom left
    CHECK(c.corner == Corner::BottomLeft);
    CHECK(c.rounding == 4.0f);
    CHECK((c.cut.x0 == 0 && c.cut.y0 == 566 && c.cut.x1 == 4 && c.cut.y1 == 570));
    CHECK((c.rounded.x0 == 0 && c.rounded.y0 == 560 && c.rounded.x1 == 10 && c.rounded.y1 == 570));
    const CornerPatch& d = plan.corners[1];
    CHECK(d.corner == Corner::BottomRight);
    CHECK((d.cut.x0 == 526 && d.cut.y0 == 566 && d.cut.x1 == 530 && d.cut.y1 == 570));
}

TEST_CASE("a window without a title bar gets all four corners patched") {
    const std::vector<Layer> layers{window({0, 0, 1600, 1000}, 0, 6)};
    const BackdropPlan plan = plan_backdrop(layers, kDisplay);
    REQUIRE(plan.clear_with_window_bg);
    REQUIRE(plan.corners.size() == 4);
    CHECK(plan.corners[0].corner == Corner::TopLeft);
    CHECK((plan.corners[0].rounded.x1 == 14 && plan.corners[0].rounded.y1 == 14));
    CHECK(plan.corners[3].corner == Corner::BottomRight);
    CHECK((plan.corners[3].cut.x0 == 1594 && plan.corners[3].cut.y0 == 994));
    check_partition(plan, layers, kDisplay, 3.0f);
}

TEST_CASE("a window over another one, or after a popup, fills its own background") {
    std::vector<Layer> layers = tiled();
    layers.push_back(window({180, 40, 1420, 830}));  // the Cost panel over the others
    BackdropPlan plan = plan_backdrop(layers, kDisplay);
    CHECK(plan.clear_with_window_bg);
    CHECK(plan.own_background == std::vector<std::size_t>{8});
    CHECK_FALSE(listed(plan.on_backdrop, 8));
    check_partition(plan, layers, kDisplay, 2.0f);

    // A popup (or a list of no window, such as a modal's dimming) may draw anywhere.
    std::vector<Layer> after_popup{content(kDisplay), window({0, 0, 1600, 1000})};
    plan = plan_backdrop(after_popup, kDisplay);
    CHECK_FALSE(plan.clear_with_window_bg);
    CHECK(plan.own_background == std::vector<std::size_t>{1});

    // A window that only touches the one before it along an edge is still alone.
    std::vector<Layer> touching{window({0, 0, 800, 1000}), window({800, 0, 1600, 1000})};
    plan = plan_backdrop(touching, kDisplay);
    CHECK(plan.on_backdrop == std::vector<std::size_t>{0, 1});
}

TEST_CASE("when windows cover less than half the display, the clear keeps the backdrop colour") {
    const std::vector<Layer> layers{window({0, 0, 500, 500}), window({600, 0, 1000, 300}), content({600, 0, 1000, 300})};
    const BackdropPlan plan = plan_backdrop(layers, kDisplay);
    CHECK_FALSE(plan.clear_with_window_bg);
    CHECK(plan.own_background == std::vector<std::size_t>{0, 1});
    CHECK(plan.on_backdrop.empty());
    CHECK(plan.gaps.empty());
    CHECK(plan.corners.empty());

    // The same windows on a small display do cover most of it.
    const Box small{0, 0, 1000, 600};
    const BackdropPlan fits = plan_backdrop(layers, small);
    CHECK(fits.clear_with_window_bg);
    check_partition(fits, layers, small, 1.0f);
}

TEST_CASE("a background too small for its corner patches, or a translucent WindowBg, is left to ImGui") {
    // rounding 4: a patch square is 10 px, so the background needs 20 x 20.
    std::vector<Layer> layers{window({0, 0, 1600, 43}), window({0, 43, 1600, 1000})};
    BackdropPlan plan = plan_backdrop(layers, kDisplay);
    CHECK(plan.own_background == std::vector<std::size_t>{0});  // 19 px under its title bar
    CHECK(plan.on_backdrop == std::vector<std::size_t>{1});
    layers[0].box.y1 = 44;
    layers[1].box.y0 = 44;
    plan = plan_backdrop(layers, kDisplay);
    CHECK(plan.on_backdrop == std::vector<std::size_t>{0, 1});
    // A square window needs no room for patches.
    plan = plan_backdrop({window({0, 0, 1600, 30}, 24, 0), window({0, 30, 1600, 1000})}, kDisplay);
    CHECK(plan.on_backdrop == std::vector<std::size_t>{0, 1});

    plan = plan_backdrop(tiled(), kDisplay, /*window_bg_opaque=*/false);
    CHECK_FALSE(plan.clear_with_window_bg);
    CHECK(plan.own_background.size() == 7);
}

TEST_CASE("the gaps and the backgrounds the clear paints partition the display, for random tilings") {
    std::mt19937 rng(8);
    for (int trial = 0; trial < 200; ++trial) {
        // Guillotine cuts of the display into tiles at whole pixels; some tiles stay empty, some
        // windows are shrunk inside their tile or hang off the display's edge.
        std::vector<Box> tiles{kDisplay};
        for (int cut = 0; cut < 7; ++cut) {
            const std::size_t k = rng() % tiles.size();
            const Box t = tiles[k];
            const bool vertical = rng() % 2;
            const float lo = vertical ? t.x0 : t.y0, hi = vertical ? t.x1 : t.y1;
            if (hi - lo < 80) continue;
            const float at = lo + 40 + static_cast<float>(rng() % static_cast<unsigned>(hi - lo - 79));
            tiles.erase(tiles.begin() + static_cast<long>(k));
            tiles.push_back(vertical ? Box{t.x0, t.y0, at, t.y1} : Box{t.x0, t.y0, t.x1, at});
            tiles.push_back(vertical ? Box{at, t.y0, t.x1, t.y1} : Box{t.x0, at, t.x1, t.y1});
        }
        std::vector<Layer> layers;
        for (Box t : tiles) {
            if (rng() % 5 == 0) continue;
            if (rng() % 4 == 0) t.x0 += 3, t.y1 -= 5;
            if (t.x1 == kDisplay.x1 && rng() % 3 == 0) t.x1 += 50;
            layers.push_back(window(t, static_cast<float>(rng() % 3) * 12, static_cast<float>(rng() % 7)));
        }
        const BackdropPlan plan = plan_backdrop(layers, kDisplay);
        CAPTURE(trial);
        if (!plan.clear_with_window_bg) continue;
        check_partition(plan, layers, kDisplay, 7.0f);
        for (const CornerPatch& c : plan.corners) {  // each patch lies in the display's painted backgrounds
            bool inside = false;
            for (std::size_t i : plan.on_backdrop) {
                const Box b = background_of(layers[i]);
                inside = inside || (c.rounded.x0 >= b.x0 && c.rounded.x1 <= b.x1 && c.rounded.y0 >= b.y0 && c.rounded.y1 <= b.y1);
            }
            CHECK(inside);
        }
    }
}

TEST_CASE("softgl pieces: ATTNSCOPE_SOFTGL_OFF turns off exactly the pieces it names") {
    using attnscope::SoftGlPiece;
    using attnscope::softgl_piece_on;
    for (SoftGlPiece p : {SoftGlPiece::backdrop, SoftGlPiece::fringe, SoftGlPiece::occlusion})
        CHECK(softgl_piece_on(p, ""));
    CHECK_FALSE(softgl_piece_on(SoftGlPiece::backdrop, "backdrop"));
    CHECK(softgl_piece_on(SoftGlPiece::fringe, "backdrop"));
    CHECK_FALSE(softgl_piece_on(SoftGlPiece::fringe, "occlusion,fringe"));
    CHECK_FALSE(softgl_piece_on(SoftGlPiece::occlusion, "occlusion,fringe"));
    CHECK(softgl_piece_on(SoftGlPiece::backdrop, "occlusion,fringe"));
    CHECK(softgl_piece_on(SoftGlPiece::occlusion, "occlusions,occ"));  // whole names only
}
