// Window-free logic of the Image panel's "Drop path" tab (app/gui/logic/drop_path_view) and the
// run its controls ask for (EngineRunner::vit_job with a VitDropPathChoice).
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "logic/drop_path_view.hpp"
#include "logic/engine_runner.hpp"
#include "logic/narrative.hpp"

using namespace attnscope;
namespace fs = std::filesystem;

TEST_CASE("branch_cell: identity, kept with its 1/(1-p) scale, dropped with zero gradient") {
    DropPathRecord r;
    r.step = "drop_path1";
    r.rate = 0.25f;
    r.mask = make_array({3, 1, 1});
    r.mask.data()[0] = 0.0f;
    r.mask.data()[1] = 1.0f / 0.75f;
    r.mask.data()[2] = 1.0f / 0.75f;
    CHECK(ui::branch_cell(r, 0).fate == ui::BranchFate::identity);  // not active: eval
    r.active = true;
    CHECK(ui::branch_cell(r, 0).fate == ui::BranchFate::dropped);
    CHECK(ui::branch_cell(r, 0).grad_scale() == 0.0f);
    CHECK(ui::branch_cell(r, 1).fate == ui::BranchFate::kept);
    CHECK(ui::branch_cell(r, 1).grad_scale() == r.mask.data()[1]);
    CHECK(ui::branch_cell(r, 7).fate == ui::BranchFate::identity);  // no such sample
    CHECK(ui::scale_text(1.0f / 0.75f) == "x1.33");
}

TEST_CASE("narrative: ls1, drop_path1, ls2 and drop_path2 are told in English and Chinese") {
    for (const std::string& step : vit_optional_block_step_names()) {
        CAPTURE(step);
        CHECK(ui::step_narrative(step, ui::Language::English).text.size() > 40);
        CHECK(ui::step_narrative(step, ui::Language::Chinese).title.size() > 3);
    }
}

TEST_CASE("vit_job with a drop-path choice: the demo model in training drops with the seed, in eval not at all") {
    const fs::path root = ATTNSCOPE_SOURCE_DIR;
    const std::string model = (root / "assets" / "models" / "demo_vit.safetensors").string();
    const std::string picture = (root / "assets" / "samples" / "06_triangle.png").string();
    const VitDropPathChoice train{0.9f, true, 3};
    EngineResult r = EngineRunner::vit_job(model, picture, std::nullopt, {}, train)({});
    REQUIRE(r.error.empty());
    REQUIRE(r.vit);
    CHECK(r.vit->drop_path == train);
    const VitTrace& t = r.vit->trace;
    CHECK(t.config.drop_path_rate == 0.9f);
    for (const VitBlockTrace& b : t.blocks) {
        REQUIRE(b.drop_paths.size() == 2);
        for (const DropPathRecord& d : b.drop_paths) CHECK(d.dropped_residual_vs_x == 0.0);
    }
    CHECK_FALSE(t.blocks[0].drop_paths[0].active);  // dpr[0] = 0
    CHECK(t.blocks.back().drop_paths[0].active);

    EngineResult e = EngineRunner::vit_job(model, picture, std::nullopt, {}, {0.9f, false, 3})({});
    REQUIRE(e.vit);
    for (const VitBlockTrace& b : e.vit->trace.blocks)
        for (const DropPathRecord& d : b.drop_paths) CHECK_FALSE(d.active);

    CHECK_THROWS_WITH_AS(EngineRunner::vit_job(model, picture, std::nullopt, {}, {1.0f, true, 3})({}),
                         doctest::Contains("the drop-path rate 1 must be at least 0 and below 1"), std::runtime_error);
}
