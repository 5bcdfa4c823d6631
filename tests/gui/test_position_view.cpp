// Window-free logic of the Image panel's position experiment (app/gui/logic/position_view).
#include <doctest/doctest.h>

#include <optional>
#include <string>

#include "logic/colormap.hpp"
#include "logic/position_view.hpp"

using namespace attnscope;
using namespace attnscope::ui;

TEST_CASE("position_choice: the seed counts only while shuffling") {
    CHECK(position_choice(true, false, 7) == VitPositionChoice{});
    CHECK(position_choice(false, false, 7) == VitPositionChoice{false, std::nullopt});
    CHECK(position_choice(true, true, 7) == VitPositionChoice{true, 7});
    CHECK(position_choice(false, true, 0) != position_choice(false, true, 1));
}

TEST_CASE("unshuffle_tokens puts the shuffled run's rows and columns back, the class token kept") {
    // 1 class token + 3 patches; shuffled patch i shows original patch order[i].
    const std::vector<std::size_t> order{2, 0, 1};
    // An original matrix whose entry (t, u) is 10 t + u, and the shuffled run's matrix, written
    // by hand: shuffled token 1 is original token 3, shuffled 2 is original 1, shuffled 3 is original 2.
    const Array original = {{0, 1, 2, 3}, {10, 11, 12, 13}, {20, 21, 22, 23}, {30, 31, 32, 33}};
    const Array shuffled = {{0, 3, 1, 2}, {30, 33, 31, 32}, {10, 13, 11, 12}, {20, 23, 21, 22}};
    CHECK(unshuffle_tokens(shuffled, order, 1) == original);
    // With no token before the patches the whole matrix is permuted.
    const Array two = {{0, 1}, {10, 11}};
    CHECK(unshuffle_tokens(two, {1, 0}, 0) == Array{{11, 10}, {1, 0}});
    CHECK_THROWS_AS(unshuffle_tokens(shuffled, {0, 1}, 1), ShapeError);
}

TEST_CASE("attention_matrix_image: one block per weight, dark at 0, the top colour at the largest weight") {
    const Array m = {{0.0f, 0.5f}, {1.0f, 0.25f}};
    const RgbImage image = attention_matrix_image(m, 3);
    REQUIRE(image.width == 6);
    REQUIRE(image.height == 6);
    auto pixel = [&](std::size_t x, std::size_t y) {
        const std::uint8_t* p = &image.pixels[(y * image.width + x) * 3];
        return std::array<std::uint8_t, 3>{p[0], p[1], p[2]};
    };
    auto lut = [](float t) {
        const auto c = colormap_color(Colormap::Sequential, t);
        return std::array<std::uint8_t, 3>{c[0], c[1], c[2]};
    };
    CHECK(pixel(0, 0) == lut(0.0f));
    CHECK(pixel(2, 2) == lut(0.0f));  // the same block
    CHECK(pixel(0, 3) == lut(1.0f));  // row 1, column 0: the largest weight
    CHECK(pixel(5, 0) == lut(0.5f));
    CHECK(lut(0.0f) != lut(1.0f));
    CHECK(attention_matrix_image(m, 0).pixels.empty());
}

TEST_CASE("prediction_change, accuracy_text and difference_text") {
    const Array probs = {{0.1f, 0.7f, 0.2f}};
    const Array same = {{0.2f, 0.6f, 0.2f}};
    const Array other = {{0.5f, 0.3f, 0.2f}};
    CHECK_FALSE(prediction_change(probs, same).changed());
    const PredictionChange c = prediction_change(probs, other);
    CHECK(c.changed());
    CHECK(c.as_is == 1);
    CHECK(c.shuffled == 0);
    CHECK(c.shuffled_prob == 0.5f);
    CHECK(accuracy_text(160, 160) == "160/160 = 100.0%");
    CHECK(accuracy_text(3, 4) == "3/4 = 75.0%");
    CHECK(accuracy_text(0, 0) == "0/0 = 0.0%");
    CHECK(difference_text(0.0f) == "0");
    CHECK(difference_text(0.178f) == "0.178");
    CHECK(difference_text(9.54e-7f) == "9.5e-07");
}

TEST_CASE("position_lesson: the demo model keeps its accuracy, the position-task model needs its positions") {
    // The two tables PyTorch measured (tools/make_position_fixtures.py).
    const std::string models = std::string(ATTNSCOPE_SOURCE_DIR) + "/assets/models/";
    const std::optional<PositionAccuracy> demo = read_position_accuracy(models + "demo_vit.safetensors");
    const std::optional<PositionAccuracy> where = read_position_accuracy(models + "where_vit.safetensors");
    REQUIRE(demo);
    REQUIRE(where);
    CHECK(position_lesson(*demo) == PositionLesson::unused);
    CHECK(position_lesson(*where) == PositionLesson::needed);

    PositionAccuracy t;
    t.images = 100;
    t.correct[0][0] = 95;
    t.correct[0][1] = t.correct[1][0] = t.correct[1][1] = 86;  // 9 of 100 lost: under a tenth
    CHECK(position_lesson(t) == PositionLesson::unused);
    t.correct[1][0] = 85;  // 10 of 100
    CHECK(position_lesson(t) == PositionLesson::needed);
    t.correct[0][0] = 20;  // better without: not a lesson about needing positions
    CHECK(position_lesson(t) == PositionLesson::unused);
}
