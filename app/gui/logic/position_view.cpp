#include "logic/position_view.hpp"

#include <algorithm>
#include <cstdio>

#include "logic/colormap.hpp"

namespace attnscope::ui {

VitPositionChoice position_choice(bool pos_embed, bool shuffle, std::uint64_t seed) {
    VitPositionChoice c;
    c.pos_embed = pos_embed;
    if (shuffle) c.shuffle_seed = seed;
    return c;
}

Array unshuffle_tokens(const Array& matrix, const std::vector<std::size_t>& order, std::size_t prefix) {
    const std::size_t N = matrix.shape()[0];
    if (matrix.dimension() != 2 || matrix.shape()[1] != N || prefix + order.size() != N)
        throw ShapeError("unshuffle_tokens: matrix " + format_shape(shape_of(matrix)) + ", expected [N, N] with N = " +
                         std::to_string(prefix) + " + " + std::to_string(order.size()) + " patches");
    auto original = [&](std::size_t t) { return t < prefix ? t : prefix + order[t - prefix]; };
    Array out = Array::from_shape({N, N});
    for (std::size_t t = 0; t < N; ++t)
        for (std::size_t u = 0; u < N; ++u) out(original(t), original(u)) = matrix(t, u);
    return out;
}

RgbImage attention_matrix_image(const Array& matrix, std::size_t scale) {
    RgbImage image;
    if (matrix.dimension() != 2 || scale == 0) return image;
    const std::size_t rows = matrix.shape()[0], cols = matrix.shape()[1];
    image.width = cols * scale;
    image.height = rows * scale;
    image.pixels.resize(image.width * image.height * 3);
    float hi = 0.0f;
    for (float v : matrix) hi = std::max(hi, v);
    for (std::size_t y = 0; y < image.height; ++y)
        for (std::size_t x = 0; x < image.width; ++x) {
            const float v = matrix(y / scale, x / scale);
            const auto rgba = colormap_color(Colormap::Sequential, hi > 0.0f ? v / hi : 0.0f);
            std::copy(rgba.begin(), rgba.begin() + 3, &image.pixels[(y * image.width + x) * 3]);
        }
    return image;
}

PredictionChange prediction_change(const Array& probs, const Array& shuffled_probs) {
    auto best = [](const Array& p) {  // image 0 of [B, K]
        const std::size_t K = p.shape()[1];
        std::size_t arg = 0;
        for (std::size_t k = 1; k < K; ++k)
            if (p(0, k) > p(0, arg)) arg = k;
        return arg;
    };
    PredictionChange c;
    c.as_is = best(probs);
    c.shuffled = best(shuffled_probs);
    c.as_is_prob = probs(0, c.as_is);
    c.shuffled_prob = shuffled_probs(0, c.shuffled);
    return c;
}

PositionLesson position_lesson(const PositionAccuracy& table) {
    const std::size_t best = table.correct[0][0];
    const std::size_t worst = std::min({table.correct[0][1], table.correct[1][0], table.correct[1][1]});
    return best > worst && (best - worst) * 10 >= table.images ? PositionLesson::needed : PositionLesson::unused;
}

std::string accuracy_text(std::size_t correct, std::size_t images) {
    char text[64];
    std::snprintf(text, sizeof text, "%zu/%zu = %.1f%%", correct, images,
                  images ? 100.0 * static_cast<double>(correct) / static_cast<double>(images) : 0.0);
    return text;
}

std::string difference_text(float value) {
    if (value == 0.0f) return "0";
    char text[32];
    std::snprintf(text, sizeof text, value >= 0.01f ? "%.3f" : "%.2g", static_cast<double>(value));
    return text;
}

}  // namespace attnscope::ui
