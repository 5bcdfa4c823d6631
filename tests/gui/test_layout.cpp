// The default arrangement (app/gui/logic/layout): every panel inside the display and under the menu
// bar, the panels shown together side by side, and larger screens giving the heatmaps the room.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "logic/layout.hpp"

using namespace attnscope::ui;

namespace {

struct Screen {
    float w, h;
};
// A projector, a small laptop, the design size, full HD, and a 27" monitor.
const Screen kScreens[] = {{1024, 768}, {1280, 720}, {1600, 1000}, {1920, 1080}, {2560, 1440}};

LayoutInput input_for(Screen s) {
    LayoutInput in;
    in.display_w = s.w;
    in.display_h = s.h;
    in.scale = default_ui_scale(s.w, s.h, 1.0f);
    in.menu_h = 16.0f * in.scale + 8.0f * in.scale;  // ImGui's frame height: the font and twice FramePadding.y (4)
    return in;
}

bool overlap(const Rect& a, const Rect& b) {
    return a.x < b.right() && b.x < a.right() && a.y < b.bottom() && b.y < a.bottom();
}

// What opens together: the default demo, and the ViT demo (Image in Config's place).
const std::vector<Panel> kDefaultPanels = {Panel::Pipeline, Panel::Config, Panel::Shape,
                                           Panel::Inspector, Panel::Heads, Panel::RowSums};
const std::vector<Panel> kVitPanels = {Panel::Pipeline, Panel::Image, Panel::Shape,
                                       Panel::Inspector, Panel::Heads, Panel::RowSums};

}  // namespace

TEST_CASE("layout: every panel lies inside the display and under the menu bar") {
    for (Screen s : kScreens) {
        const LayoutInput in = input_for(s);
        for (Panel p : kAllPanels) {
            const Rect r = default_rect(p, in);
            CAPTURE(s.w);
            CAPTURE(s.h);
            CAPTURE(panel_id(p));
            CHECK(r.x >= 0.0f);
            CHECK(r.y >= in.menu_h);
            CHECK(r.right() <= s.w);
            CHECK(r.bottom() <= s.h);
            CHECK(r.w >= 200.0f);
            CHECK(r.h >= 150.0f);
        }
    }
}

TEST_CASE("layout: the panels that open together do not overlap and fill the screen") {
    for (Screen s : kScreens)
        for (const auto* set : {&kDefaultPanels, &kVitPanels}) {
            LayoutInput in = input_for(s);
            in.vit = set == &kVitPanels;
            CAPTURE(s.w);
            CAPTURE(s.h);
            double area = 0.0;
            for (std::size_t i = 0; i < set->size(); ++i) {
                const Rect a = default_rect((*set)[i], in);
                area += static_cast<double>(a.w) * a.h;
                for (std::size_t j = i + 1; j < set->size(); ++j) {
                    CAPTURE(panel_id((*set)[i]));
                    CAPTURE(panel_id((*set)[j]));
                    CHECK_FALSE(overlap(a, default_rect((*set)[j], in)));
                }
            }
            CHECK(area == doctest::Approx(static_cast<double>(s.w) * (s.h - in.menu_h)).epsilon(0.01));  // no empty area
        }
}

TEST_CASE("layout: panels that share a place take the same rectangle") {
    const LayoutInput in = input_for({1280, 720});
    auto same = [&](Panel a, Panel b) {
        const Rect ra = default_rect(a, in), rb = default_rect(b, in);
        return ra.x == rb.x && ra.y == rb.y && ra.w == rb.w && ra.h == rb.h;
    };
    CHECK(same(Panel::Heads, Panel::Follow));
    CHECK(same(Panel::Heads, Panel::Beyond));
    CHECK(same(Panel::Config, Panel::Image));
    CHECK(same(Panel::Config, Panel::Zoo));
    CHECK(same(Panel::RowSums, Panel::AttentionMap));
    // The quiz covers Row sums, nothing the student needs to predict a shape.
    CHECK(same(Panel::Quiz, Panel::RowSums));
    CHECK_FALSE(overlap(default_rect(Panel::Quiz, in), default_rect(Panel::Shape, in)));
    CHECK_FALSE(overlap(default_rect(Panel::Quiz, in), default_rect(Panel::Pipeline, in)));
}

TEST_CASE("layout: the pipeline is tall enough for its 17 rows on a short screen") {
    const LayoutInput in = input_for({1280, 720});
    CHECK(default_rect(Panel::Pipeline, in).h >= 25.0f * 16.0f);  // 25 lines (tests/gui/layout_test.py: no scrollbar)
    const LayoutInput projector = input_for({1024, 768});
    CHECK(default_rect(Panel::Pipeline, projector).h >= 25.0f * 16.0f);
}

TEST_CASE("layout: with a ViT on screen the pipeline keeps its 17 rows and the picture below gets the rest") {
    for (Screen s : {Screen{1024, 768}, Screen{1280, 720}}) {
        CAPTURE(s.w);
        LayoutInput in = input_for(s);
        const Rect config = default_rect(Panel::Config, in);
        in.vit = true;
        const Rect pipeline = default_rect(Panel::Pipeline, in), image = default_rect(Panel::Image, in);
        CHECK(pipeline.h >= 23.0f * 16.0f);  // 17 rows, the controls and the title bar (layout_test.py: no scrollbar)
        CHECK(image.h >= config.h + 2.0f * 16.0f);
        CHECK(image.bottom() == doctest::Approx(s.h));
        CHECK(pipeline.bottom() == doctest::Approx(image.y));
    }
}

TEST_CASE("layout: a larger screen gives the heatmaps the room, the text column grows with the font only") {
    const LayoutInput hd = input_for({1920, 1080}), qhd = input_for({2560, 1440}), design = input_for({1600, 1000});
    const Rect inspector = default_rect(Panel::Inspector, design), heads = default_rect(Panel::Heads, design);
    for (const LayoutInput& big : {hd, qhd}) {
        CHECK(default_rect(Panel::Inspector, big).w > inspector.w);
        CHECK(default_rect(Panel::Inspector, big).h > inspector.h);
        CHECK(default_rect(Panel::Heads, big).w > heads.w);
        CHECK(default_rect(Panel::Heads, big).h > heads.h);
        const Rect pipeline = default_rect(Panel::Pipeline, big);
        CHECK(pipeline.w <= 31.0f * 16.0f * big.scale + 1.0f);
    }
}

TEST_CASE("layout: the default UI scale follows the screen") {
    CHECK(default_ui_scale(1024, 768, 1.0f) == 1.0f);    // a projector: as small as stays readable
    CHECK(default_ui_scale(1280, 720, 1.0f) == 1.0f);
    CHECK(default_ui_scale(800, 600, 1.0f) == doctest::Approx(0.78125f));  // the 1024 x 768 layout, smaller
    CHECK(default_ui_scale(640, 480, 1.0f) == 0.75f);    // 12 px text at the least
    CHECK(default_ui_scale(800, 600, 1.25f) == 1.25f);   // a desktop at 125% keeps its scale
    CHECK(default_ui_scale(1600, 1000, 1.0f) == 1.0f);   // the design size
    CHECK(default_ui_scale(1920, 1080, 1.0f) == doctest::Approx(1.08f));
    CHECK(default_ui_scale(2560, 1440, 1.0f) == doctest::Approx(1.44f));
    CHECK(default_ui_scale(1280, 800, 2.0f) == 2.0f);    // a desktop at 200%
    CHECK(default_ui_scale(10000, 8000, 1.0f) == 3.0f);  // no larger than Ctrl+= goes
}

TEST_CASE("layout: visible_fraction is the share no rectangle above covers") {
    const Rect r{0, 0, 100, 100};
    CHECK(visible_fraction(r, {}) == 1.0f);
    CHECK(visible_fraction(r, {{0, 0, 100, 100}}) == 0.0f);
    CHECK(visible_fraction(r, {{50, 0, 100, 100}}) == doctest::Approx(0.5f));
    CHECK(visible_fraction(r, {{50, 0, 50, 100}, {0, 50, 100, 50}}) == doctest::Approx(0.25f));  // overlapping: counted once
    CHECK(visible_fraction(r, {{200, 200, 10, 10}}) == 1.0f);
    CHECK(visible_fraction(r, {{-50, -50, 100, 100}}) == doctest::Approx(0.75f));
}

TEST_CASE("layout: the report names each panel by its English ID") {
    PanelReport heads;
    heads.title = "Heads";
    heads.rect = {900, 22, 380, 400};
    heads.cuts.push_back({"table column step", 12.0f});
    const std::string json = layout_report_json(1280, 720, 22, {heads});
    CHECK(json.find("\"display\"") != std::string::npos);
    CHECK(json.find("\"where\": \"table column step\"") != std::string::npos);
    CHECK(json.find("\"px\": 12.0") != std::string::npos);
    CHECK(json.find("\"menu_bar_height\": 22") != std::string::npos);
    CHECK(json.find("\"title\": \"Heads\"") != std::string::npos);
    CHECK(json.find("\"visible_fraction\": 1.0") != std::string::npos);
    for (Panel p : kAllPanels) CHECK(std::string(panel_id(p)).find("###") == std::string::npos);
}

TEST_CASE("layout: presentation mode's text is twice the UI's, less on a projector") {
    CHECK(presentation_scale(1600, 1000) == 2.0f);  // the README's screenshot
    CHECK(presentation_scale(2560, 1440) == 2.0f);
    CHECK(presentation_scale(1280, 720) == doctest::Approx(1.5f));
    CHECK(presentation_scale(1024, 768) == 1.5f);  // every step's narrative fits (tests/gui/layout_test.py)
    CHECK(presentation_scale(800, 600) == 1.25f);
}
