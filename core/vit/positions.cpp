// The position-embedding experiment: the permutation, the shuffled picture, the model without its
// position embeddings, and the comparison of the two runs with the permutation undone.
#include "positions.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <utility>

#include <nlohmann/json.hpp>

#include "io.hpp"

namespace attnscope {

namespace {

// splitmix64 (Steele, Lea, Flood 2014): one 64-bit output per call, all arithmetic mod 2^64.
struct SplitMix64 {
    std::uint64_t state;
    std::uint64_t next() {
        std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
};

bool is_permutation_of(const std::vector<std::size_t>& order, std::size_t n) {
    if (order.size() != n) return false;
    std::vector<bool> seen(n, false);
    for (std::size_t i : order) {
        if (i >= n || seen[i]) return false;
        seen[i] = true;
    }
    return true;
}

// Token t of the shuffled run is token o(t) of the original: the tokens before the patches stay.
std::size_t original_token(std::size_t t, std::size_t prefix, const std::vector<std::size_t>& order) {
    return t < prefix ? t : prefix + order[t - prefix];
}

}  // namespace

std::vector<std::size_t> patch_permutation(std::size_t patches, std::uint64_t seed) {
    std::vector<std::size_t> order(patches);
    std::iota(order.begin(), order.end(), std::size_t{0});
    SplitMix64 rng{seed};
    for (std::size_t i = patches; i-- > 1;) std::swap(order[i], order[rng.next() % (i + 1)]);
    return order;
}

Tensor shuffle_patches(const Tensor& pixels, std::size_t patch, const std::vector<std::size_t>& order) {
    const Shape shape = shape_of(pixels.values);
    if (shape.size() != 4 || patch == 0 || shape[2] % patch != 0 || shape[3] % patch != 0)
        throw ShapeError(Message(Msg::shuffle_pixels, {{"shape", format_shape(shape)}, {"patch", std::to_string(patch)}}));
    const std::size_t B = shape[0], C = shape[1], rows = shape[2] / patch, cols = shape[3] / patch;
    if (!is_permutation_of(order, rows * cols))
        throw ShapeError(Message(Msg::shuffle_order, {{"count", std::to_string(rows * cols)}, {"entries", std::to_string(order.size())}}));
    Tensor out{Array::from_shape(shape), pixels.axes};
    for (std::size_t i = 0; i < rows * cols; ++i) {
        const std::size_t to_row = i / cols, to_col = i % cols;
        const std::size_t from_row = order[i] / cols, from_col = order[i] % cols;
        for (std::size_t b = 0; b < B; ++b)
            for (std::size_t c = 0; c < C; ++c)
                for (std::size_t y = 0; y < patch; ++y)
                    for (std::size_t x = 0; x < patch; ++x)
                        out.values(b, c, to_row * patch + y, to_col * patch + x) =
                            pixels.values(b, c, from_row * patch + y, from_col * patch + x);
    }
    return out;
}

VitModel without_pos_embed(VitModel model) {
    model.weights.pos_embed.fill(0.0f);  // [1, N, D]
    return model;
}

ShuffleDifference shuffle_difference(const VitTrace& original, const VitTrace& shuffled,
                                     const std::vector<std::size_t>& order) {
    const std::size_t prefix = original.grid.prefix, N = original.grid.tokens();
    if (original.blocks.size() != shuffled.blocks.size() || shuffled.grid.tokens() != N ||
        !is_permutation_of(order, original.grid.patches()))
        throw ShapeError(Message(Msg::shuffle_difference_runs, {{"count", std::to_string(original.grid.patches())}}));
    ShuffleDifference d;
    for (std::size_t block = 0; block < original.blocks.size(); ++block) {
        const Array& a = original.blocks[block].attn();  // [B, h, N, N]
        const Array& s = shuffled.blocks[block].attn();  // [B, h, N, N]
        for (std::size_t b = 0; b < a.shape()[0]; ++b)
            for (std::size_t h = 0; h < a.shape()[1]; ++h)
                for (std::size_t t = 0; t < N; ++t)
                    for (std::size_t u = 0; u < N; ++u) {
                        const float diff = std::abs(s(b, h, t, u) - a(b, h, original_token(t, prefix, order),
                                                                      original_token(u, prefix, order)));
                        if (diff > d.attn) d.attn = diff, d.attn_block = block;
                    }
    }
    const Array& norm = original.at(VitStep::norm).tensor().values;    // [B, N, D]
    const Array& norm_s = shuffled.at(VitStep::norm).tensor().values;  // [B, N, D]
    for (std::size_t b = 0; b < norm.shape()[0]; ++b)
        for (std::size_t c = 0; c < norm.shape()[2]; ++c)
            d.cls = std::max(d.cls, std::abs(norm_s(b, 0, c) - norm(b, 0, c)));
    if (original.has_head()) {
        const Array& p = original.probs();   // [B, K]
        const Array& ps = shuffled.probs();  // [B, K]
        for (std::size_t i = 0; i < p.size(); ++i) d.probs = std::max(d.probs, std::abs(ps.flat(i) - p.flat(i)));
    }
    return d;
}

PositionExperiment run_shuffled(const VitModel& model, const Tensor& pixels, const VitTrace& original, bool pos_embed,
                                std::uint64_t seed, const RunHooks& hooks) {
    PositionExperiment e;
    e.pos_embed = pos_embed;
    e.seed = seed;
    e.order = patch_permutation(model.config.patches(), seed);
    e.shuffled_pixels = shuffle_patches(pixels, model.config.patch_size, e.order);
    e.shuffled = run_vit(model, e.shuffled_pixels, hooks);
    e.difference = shuffle_difference(original, e.shuffled, e.order);
    return e;
}

std::optional<PositionAccuracy> read_position_accuracy(const std::string& model_path) {
    std::filesystem::path path(model_path);
    path.replace_extension(".positions.json");
    if (!std::filesystem::exists(path)) return std::nullopt;
    const std::string where = path.string();
    std::ifstream in(path);
    const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
    PositionAccuracy a;
    a.source = where;
    try {
        a.images = j.at("images").get<std::size_t>();
        a.seed = j.at("seed").get<std::uint64_t>();
        const char* pos[2] = {"pos_embed", "no_pos_embed"};
        const char* arrangement[2] = {"as_is", "shuffled"};
        for (int p = 0; p < 2; ++p)
            for (int s = 0; s < 2; ++s) {
                a.correct[p][s] = j.at("correct").at(pos[p]).at(arrangement[s]).get<std::size_t>();
                a.true_class_prob[p][s] = j.at("mean_true_class_prob").at(pos[p]).at(arrangement[s]).get<double>();
            }
    } catch (const nlohmann::json::exception&) {
        throw FileError(Message(Msg::positions_json, {{"file", where}}));
    }
    return a;
}

}  // namespace attnscope
