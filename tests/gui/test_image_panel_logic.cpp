// Window-free logic of the Image panel (app/gui/logic/vit_view): click -> patch, overlay cache
// keys, the ranked prediction, the fresh-model patch sizes.
#include <doctest/doctest.h>

#include <set>
#include <tuple>
#include <utility>

#include "logic/vit_view.hpp"

using namespace attnscope;
using namespace attnscope::ui;

TEST_CASE("patch_at maps a point of the shown picture to its patch at any scale") {
    const PatchGrid grid{8, 8, 8};  // 64 x 64 image, patch 8
    // Shown at 256 x 256: each patch is 32 pixels.
    CHECK(patch_at(0, 0, 256, 256, grid) == PatchPick{0, 0});
    CHECK(patch_at(31.9f, 0, 256, 256, grid) == PatchPick{0, 0});
    CHECK(patch_at(32, 0, 256, 256, grid) == PatchPick{0, 1});
    CHECK(patch_at(100, 200, 256, 256, grid) == PatchPick{6, 3});  // y picks the row, x the column
    CHECK(patch_at(255.99f, 255.99f, 256, 256, grid) == PatchPick{7, 7});
    // Outside the picture, or no grid: nothing.
    CHECK_FALSE(patch_at(256, 10, 256, 256, grid));
    CHECK_FALSE(patch_at(-0.5f, 10, 256, 256, grid));
    CHECK_FALSE(patch_at(10, 256, 256, 256, grid));
    CHECK_FALSE(patch_at(10, 10, 0, 256, grid));
    CHECK_FALSE(patch_at(10, 10, 256, 256, PatchGrid{}));
    // A non-square display and a 2 x 4 grid.
    const PatchGrid wide{2, 4, 16};
    CHECK(patch_at(99, 49, 100, 50, wide) == PatchPick{1, 3});
    CHECK(patch_at(25, 24.9f, 100, 50, wide) == PatchPick{0, 1});
    // The token of the picked patch: 1 + row * cols + col.
    const auto p = patch_at(100, 200, 256, 256, grid);
    REQUIRE(p);
    CHECK(grid.token(p->row, p->col) == 1 + 6 * 8 + 3);
}

TEST_CASE("query_name names the class token and patches by (row, col)") {
    const PatchGrid grid{8, 8, 8};
    CHECK(query_name(0, grid) == "class token");
    CHECK(query_name(grid.token(6, 3), grid) == "patch (6, 3)");
    CHECK(query_name(grid.token(0, 7), grid) == "patch (0, 7)");
}

TEST_CASE("overlay keys change exactly when the overlay's picture changes") {
    // Head maps: block and query matter, the rollout's fusion does not exist for them.
    CHECK(OverlayKey::head(1, 3, 0, 0).str() == OverlayKey::head(1, 3, 0, 0).str());
    CHECK(OverlayKey::head(1, 3, 0, 0).str() != OverlayKey::head(1, 2, 0, 0).str());
    CHECK(OverlayKey::head(1, 3, 0, 0).str() != OverlayKey::head(1, 3, 0, 5).str());
    CHECK(OverlayKey::head(1, 3, 0, 0).str() != OverlayKey::head(1, 3, 1, 0).str());
    CHECK(OverlayKey::head(1, 3, 0, 0).str() != OverlayKey::head_mean(1, 3, 0).str());
    // A new run invalidates everything.
    CHECK(OverlayKey::head(1, 3, 0, 0).str() != OverlayKey::head(2, 3, 0, 0).str());
    CHECK(OverlayKey::picture(1).str() != OverlayKey::picture(2).str());
    // The rollout spans all blocks: query and fusion matter, the block shown does not.
    CHECK(OverlayKey::rollout(1, 0, HeadFusion::mean).str() != OverlayKey::rollout(1, 0, HeadFusion::max).str());
    CHECK(OverlayKey::rollout(1, 0, HeadFusion::min).str() != OverlayKey::rollout(1, 0, HeadFusion::max).str());
    CHECK(OverlayKey::rollout(1, 0, HeadFusion::mean).str() != OverlayKey::rollout(1, 9, HeadFusion::mean).str());
    // All distinct across kinds.
    std::set<std::string> keys{OverlayKey::head(1, 0, 0, 0).str(), OverlayKey::head_mean(1, 0, 0).str(),
                               OverlayKey::rollout(1, 0, HeadFusion::mean).str(), OverlayKey::picture(1).str()};
    CHECK(keys.size() == 4);
}

TEST_CASE("ranked_classes: most probable first, with labels") {
    Array probs = xt::zeros<float>({2, 4});
    probs(0, 0) = 0.1f, probs(0, 1) = 0.6f, probs(0, 2) = 0.05f, probs(0, 3) = 0.25f;
    probs(1, 0) = 0.25f, probs(1, 1) = 0.25f, probs(1, 2) = 0.25f, probs(1, 3) = 0.25f;
    const std::vector<std::string> labels{"circle", "square", "triangle", "cross"};
    auto top = ranked_classes(probs, 0, 3, labels);
    REQUIRE(top.size() == 3);
    CHECK(top[0].index == 1);
    CHECK(top[0].label == "square");
    CHECK(top[0].prob == doctest::Approx(0.6f));
    CHECK(top[1].label == "cross");
    CHECK(top[2].label == "circle");
    // k larger than K: all of them; ties keep class order; missing labels get "class i".
    top = ranked_classes(probs, 1, 10, {"a", "b"});
    REQUIRE(top.size() == 4);
    CHECK(top[0].label == "a");
    CHECK(top[1].label == "b");
    CHECK(top[2].label == "class 2");
    CHECK(top[3].index == 3);
    // A batch item that does not exist, or not a [B, K] array: nothing.
    CHECK(ranked_classes(probs, 2, 3, labels).empty());
    CHECK(ranked_classes(Array(xt::zeros<float>({4})), 0, 3, labels).empty());
}

TEST_CASE("fresh_patch_sizes: 8, 16, 32 where they tile the image into at least 2 x 2") {
    CHECK(fresh_patch_sizes(64) == std::vector<std::size_t>{8, 16, 32});
    CHECK(fresh_patch_sizes(32) == std::vector<std::size_t>{8, 16});
    CHECK(fresh_patch_sizes(48) == std::vector<std::size_t>{8, 16});
    CHECK(fresh_patch_sizes(224) == std::vector<std::size_t>{8, 16, 32});
    CHECK(fresh_patch_sizes(12).empty());
}

TEST_CASE("overlay_backdrop: grey, darkened, same size") {
    RgbImage img;
    img.width = 2;
    img.height = 1;
    img.pixels = {255, 255, 0, 255, 255, 255};  // yellow, white
    const RgbImage g = overlay_backdrop(img);
    REQUIRE(g.width == 2);
    REQUIRE(g.height == 1);
    REQUIRE(g.pixels.size() == 6);
    CHECK(g.pixels[0] == g.pixels[1]);
    CHECK(g.pixels[1] == g.pixels[2]);  // no colour left
    CHECK(g.pixels[0] == 181);          // 0.8 * (0.299 + 0.587) * 255
    CHECK(g.pixels[3] == 204);          // 0.8 * 255
}

TEST_CASE("attention_tab_sizes: ViT-B's 12 heads + 2 fit under a picture and a map each 14 patches wide") {
    const float line = 17.0f, spacing = 8.0f, right = 180.0f;
    for (const auto& [w, h] : {std::pair{530.0f, 400.0f}, std::pair{700.0f, 520.0f}, std::pair{1100.0f, 700.0f}}) {
        CAPTURE(w);
        const AttentionTabSizes s = attention_tab_sizes(w, h, line, spacing, right, 1000.0f, 14);
        // Everything inside the region: two squares and the prediction column across, the squares,
        // the caption and the strip's rows down.
        CHECK(2.0f * s.side + right + 2.0f * spacing <= w + 0.5f);
        CHECK(line + s.side + spacing + line + static_cast<float>(s.rows) * (line + s.tile + spacing) <= h + 0.5f);
        CHECK(s.per_row * s.rows >= 14);
        CHECK(s.tile >= 28.0f);
        CHECK(s.side / 14.0f >= 8.0f);  // a patch of the large map is at least 8 px: single patches show
    }
    // A wide region: the small maps stay on one row and the squares grow with the height.
    const AttentionTabSizes wide = attention_tab_sizes(1100.0f, 700.0f, line, spacing, right, 1000.0f, 14);
    CHECK(wide.rows == 1);
    CHECK(wide.side > attention_tab_sizes(530.0f, 400.0f, line, spacing, right, 1000.0f, 14).side);
    // A short one (the Image panel at 1280x720): the small maps give way to the squares.
    const AttentionTabSizes short_region = attention_tab_sizes(390.0f, 210.0f, line, spacing, 220.0f, 180.0f, 5);
    CHECK(short_region.tile < short_region.side);
    CHECK(short_region.side >= 64.0f);
    CHECK(line + short_region.side + spacing + line +
              static_cast<float>(short_region.rows) * (line + short_region.tile + spacing) <=
          210.5f);
    // A tall, narrow one (the Image panel at 1920x1080): the prediction goes under the strip and the
    // squares take the width.
    const AttentionTabSizes tall = attention_tab_sizes(530.0f, 600.0f, line, spacing, right, 180.0f, 14);
    CHECK(tall.stacked);
    CHECK(tall.side > attention_tab_sizes(530.0f, 600.0f, line, spacing, right, 1000.0f, 14).side);
    CHECK(2.0f * tall.side + spacing <= 530.5f);
    CHECK(line + tall.side + spacing + line + static_cast<float>(tall.rows) * (line + tall.tile + spacing) + 180.0f +
              spacing <=
          600.5f);
    CHECK_FALSE(short_region.stacked);
    // The Image panel at 1280x720 with two classes beside the squares (3 rows of 30 px): the squares
    // grow to the column's height, and the column, the caption and the strip all fit.
    const AttentionTabSizes projector = attention_tab_sizes(404.0f, 196.0f, line, spacing, 160.0f, 90.0f, 5);
    CHECK_FALSE(projector.stacked);
    CHECK(projector.side >= 73.0f);  // 90 - line: as high as the column
    CHECK(2.0f * projector.side + 160.0f + 2.0f * spacing <= 404.5f);
    CHECK(std::max(line + projector.side, 90.0f) + spacing + line +
              static_cast<float>(projector.rows) * (line + projector.tile + spacing) <=
          196.5f);
    // The strip became one row of buttons there, the squares larger for it; never in a tall region.
    CHECK(projector.buttons);
    CHECK(projector.side >= 110.0f);
    CHECK(line + projector.side + spacing + 2.0f * line <= 196.5f);  // titles, squares, caption, buttons
    CHECK_FALSE(wide.buttons);
    CHECK_FALSE(tall.buttons);
    // A narrow one: the strip wraps, the squares keep their floor.
    const AttentionTabSizes narrow = attention_tab_sizes(200.0f, 150.0f, line, spacing, right, 180.0f, 14);
    CHECK(narrow.rows > 1);
    CHECK(narrow.side == 48.0f);
}

TEST_CASE("vit_slide_layout: the picture at a third of the screen's height beside the narrative and the heatmap") {
    const float line = 33.0f;
    // The slide's body under the shapes at 800x600, 1024x768, 1280x720, 1600x1000 and 1920x1080.
    for (const auto& [w, body, screen] : {std::tuple{770.0f, 290.0f, 600.0f}, std::tuple{990.0f, 450.0f, 768.0f},
                                          std::tuple{1250.0f, 400.0f, 720.0f}, std::tuple{1560.0f, 560.0f, 1000.0f},
                                          std::tuple{1880.0f, 640.0f, 1080.0f}}) {
        CAPTURE(screen);
        const VitSlideLayout l = vit_slide_layout(w, body, screen, line);
        CHECK(l.side >= screen / 3.0f - 1.0f);  // in whole pixels
        CHECK(l.side + line <= body + 0.5f);  // under its caption, within the body
        CHECK(l.text_w + l.side <= 0.7f * w);  // the heatmap keeps at least 30% of the width
    }
    // A body too short for a third: the body decides, the caption above the picture.
    CHECK(vit_slide_layout(1250.0f, 200.0f, 720.0f, line).side == doctest::Approx(167.0f));
    // A wide screen: a quarter of the width.
    CHECK(vit_slide_layout(1880.0f, 900.0f, 1080.0f, line).side == doctest::Approx(470.0f));
}

TEST_CASE("vit_slide_tiles: the class token's maps as large as the region under the narrative allows") {
    const float line = 22.0f, spacing = 8.0f;
    for (const auto& [w, h, maps] : {std::tuple{440.0f, 160.0f, std::size_t{4}}, std::tuple{350.0f, 300.0f, std::size_t{4}},
                                     std::tuple{560.0f, 250.0f, std::size_t{13}}}) {
        CAPTURE(w);
        CAPTURE(maps);
        const SlideTiles s = vit_slide_tiles(w, h, line, spacing, maps);
        CHECK(s.per_row * s.rows >= maps);
        CHECK(static_cast<float>(s.per_row) * (s.tile + spacing) - spacing <= w + 0.5f);
        CHECK(line + static_cast<float>(s.rows) * (line + s.tile + spacing) - spacing <= h + 0.5f);
        CHECK(s.fits);
    }
    // A short region: one row of four; a tall narrow one: two rows of two.
    CHECK(vit_slide_tiles(440.0f, 160.0f, line, spacing, 4).rows == 1);
    CHECK(vit_slide_tiles(350.0f, 400.0f, line, spacing, 4).rows == 2);
    // Too little room for maps one and a half lines high: left out.
    CHECK(vit_slide_tiles(440.0f, 80.0f, line, spacing, 4).fits);
    CHECK_FALSE(vit_slide_tiles(440.0f, 70.0f, line, spacing, 4).fits);
    // Captions wider than the tiles of a row of five: two rows.
    CHECK(vit_slide_tiles(330.0f, 120.0f, line, spacing, 5).rows == 1);
    const SlideTiles captioned = vit_slide_tiles(330.0f, 120.0f, line, spacing, 5, 70.0f);
    CHECK(captioned.rows == 2);
    CHECK(static_cast<float>(captioned.per_row) * (70.0f + spacing) - spacing <= 330.0f);
}
