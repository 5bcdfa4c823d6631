// The position-embedding experiment (core/vit/positions): the permutation, the shuffled picture, the
// demo model with and without position embeddings, against PyTorch's numbers from
// tools/make_position_fixtures.py (tests/data/vit/positions, assets/models/{demo,where}_vit.positions.json).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "image.hpp"
#include "io.hpp"
#include "memory_budget.hpp"
#include "positions.hpp"
#include "vit.hpp"
#include "vit_fixtures.hpp"

using namespace attnscope;
namespace fs = std::filesystem;
using attnscope::testing::mosaic_tile;
using attnscope::testing::read_json;
using attnscope::testing::worst_vs_torch;

namespace {

const fs::path kFixture = fs::path(ATTNSCOPE_TEST_DATA) / "vit" / "positions";
const fs::path kHeldout = fs::path(ATTNSCOPE_TEST_DATA) / "vit" / "heldout";
const fs::path kModels = (fs::path(ATTNSCOPE_TEST_DATA) / ".." / ".." / "assets" / "models").lexically_normal();
const fs::path kDemoModel = kModels / "demo_vit.safetensors";
const fs::path kWhereModel = kModels / "where_vit.safetensors";  // tools/train_where_vit.py

Tensor read_pixels(const char* name) { return {read_npy((kFixture / name).string()), {"B", "3", "H", "W"}}; }

const VitModel& demo_model() {
    static const VitModel model = load_vit_model(kDemoModel.string(), std::nullopt, default_memory_budget());
    return model;
}

}  // namespace

TEST_CASE("patch_permutation is PyTorch's script's splitmix64 Fisher-Yates shuffle") {
    const nlohmann::json expected = read_json(kFixture / "expected.json");
    CHECK(patch_permutation(64, expected["seed"].get<std::uint64_t>()) ==
          expected["order"].get<std::vector<std::size_t>>());
    for (std::size_t n : {1, 2, 16, 196}) {
        std::vector<std::size_t> order = patch_permutation(n, 123);
        std::sort(order.begin(), order.end());
        std::vector<std::size_t> identity(n);
        std::iota(identity.begin(), identity.end(), std::size_t{0});
        CHECK(order == identity);
    }
    CHECK(patch_permutation(64, 1) != patch_permutation(64, 2));
}

TEST_CASE("shuffle_patches moves the pixels as torch's reshape, permute and index do") {
    const Tensor pixels = read_pixels("pixels.npy");
    const nlohmann::json expected = read_json(kFixture / "expected.json");
    const Tensor shuffled = shuffle_patches(pixels, 8, expected["order"].get<std::vector<std::size_t>>());
    CHECK(worst_vs_torch(shuffled.values, read_npy((kFixture / "shuffled_pixels.npy").string())) == 0.0);
    CHECK_THROWS_AS(shuffle_patches(pixels, 8, patch_permutation(63, 1)), ShapeError);
    CHECK_THROWS_AS(shuffle_patches(pixels, 7, patch_permutation(64, 1)), ShapeError);
    std::vector<std::size_t> twice = patch_permutation(64, 1);
    twice[0] = twice[1];
    CHECK_THROWS_AS(shuffle_patches(pixels, 8, twice), ShapeError);
}

TEST_CASE("without position embeddings the shuffle permutes the attention and keeps the prediction, as in PyTorch") {
    const VitModel model = without_pos_embed(demo_model());
    const nlohmann::json expected = read_json(kFixture / "expected.json");
    const Tensor pixels = read_pixels("pixels.npy");
    const VitTrace original = run_vit(model, pixels);
    const PositionExperiment e = run_shuffled(model, pixels, original, false, expected["seed"].get<std::uint64_t>());
    CHECK(worst_vs_torch(e.shuffled_pixels.values, read_npy((kFixture / "shuffled_pixels.npy").string())) == 0.0);
    CHECK(worst_vs_torch(original.logits(), read_npy((kFixture / "nopos_logits.npy").string())) <= 1.0);
    CHECK(worst_vs_torch(e.shuffled.logits(), read_npy((kFixture / "nopos_shuffled_logits.npy").string())) <= 1.0);
    CHECK(worst_vs_torch(e.shuffled.blocks.back().attn(), read_npy((kFixture / "nopos_shuffled_attn3.npy").string())) <=
          1.0);
    // Equivariance: what is left is float rounding, as in torch.
    MESSAGE("no pos_embed: attnscope max |attn_shuffled - attn[o, o]| = "
            << e.difference.attn << " (torch " << expected["nopos"]["max_attn_difference"].get<double>()
            << "), class token " << e.difference.cls << ", probs " << e.difference.probs);
    CHECK(e.difference.attn < 1e-5f);
    CHECK(e.difference.cls < 1e-4f);
    CHECK(e.difference.probs < 1e-5f);
}

TEST_CASE("with position embeddings the same shuffle changes the attention and the probabilities, as in PyTorch") {
    const VitModel& model = demo_model();
    const nlohmann::json expected = read_json(kFixture / "expected.json");
    const Tensor pixels = read_pixels("pixels.npy");
    const VitTrace original = run_vit(model, pixels);
    const PositionExperiment e = run_shuffled(model, pixels, original, true, expected["seed"].get<std::uint64_t>());
    CHECK(worst_vs_torch(original.logits(), read_npy((kFixture / "pos_logits.npy").string())) <= 1.0);
    CHECK(worst_vs_torch(e.shuffled.logits(), read_npy((kFixture / "pos_shuffled_logits.npy").string())) <= 1.0);
    CHECK(worst_vs_torch(e.shuffled.blocks.back().attn(), read_npy((kFixture / "pos_shuffled_attn3.npy").string())) <=
          1.0);
    const double torch_attn = expected["pos"]["max_attn_difference"],
                 torch_probs = expected["pos"]["max_probs_difference"];
    MESSAGE("pos_embed: attnscope max |attn_shuffled - attn[o, o]| = " << e.difference.attn << " (torch " << torch_attn
                                                                       << "), probs " << e.difference.probs
                                                                       << " (torch " << torch_probs << ")");
    CHECK(e.difference.attn == doctest::Approx(torch_attn).epsilon(1e-3));
    CHECK(e.difference.probs == doctest::Approx(torch_probs).epsilon(1e-2));
    CHECK(e.difference.attn >
          1000 * read_json(kFixture / "expected.json")["nopos"]["max_attn_difference"].get<double>());
}

namespace {

// attnscope's own count of a model's held-out table: [pos_embed on, off] x [as is, shuffled], the
// correct predictions and the mean probability of the true class; checked against the table PyTorch
// wrote beside the model.
void check_heldout_table(const fs::path& model_path, const fs::path& heldout_dir) {
    const std::optional<PositionAccuracy> torch = read_position_accuracy(model_path.string());
    REQUIRE(torch);
    const nlohmann::json heldout = read_json(heldout_dir / "labels.json");
    const RgbImage mosaic = load_image((heldout_dir / "images.png").string(), default_memory_budget());
    const std::size_t tile = heldout["tile"], columns = heldout["columns"], count = heldout["label"].size();
    REQUIRE(count == torch->images);
    const VitModel model = load_vit_model(model_path.string(), std::nullopt, default_memory_budget());
    const VitModel models[2] = {model, without_pos_embed(model)};
    const std::vector<std::size_t> order = patch_permutation(model.config.patches(), torch->seed);
    std::size_t correct[2][2] = {{0, 0}, {0, 0}};
    double prob[2][2] = {{0, 0}, {0, 0}};
    for (std::size_t i = 0; i < count; ++i) {
        const RgbImage image = mosaic_tile(mosaic, tile, columns, i);
        const Tensor pixels = image_to_pixels(image, model.config.image_size, model.mean, model.std);
        const Tensor inputs[2] = {pixels, shuffle_patches(pixels, model.config.patch_size, order)};
        const std::size_t label = heldout["label"][i];
        for (int p = 0; p < 2; ++p)
            for (int s = 0; s < 2; ++s) {
                const VitTrace trace = run_vit(models[p], inputs[s]);
                const Array& probs = trace.probs();  // [1, K]
                correct[p][s] += std::max_element(probs.begin(), probs.end()) - probs.begin() == std::ptrdiff_t(label);
                prob[p][s] += probs(0, label) / double(count);
            }
    }
    for (int p = 0; p < 2; ++p)
        for (int s = 0; s < 2; ++s) {
            CAPTURE(p);
            CAPTURE(s);
            CHECK(correct[p][s] == torch->correct[p][s]);
            CHECK(prob[p][s] == doctest::Approx(torch->true_class_prob[p][s]).epsilon(1e-5));
        }
    MESSAGE(model_path.filename().string()
            << " held-out: pos_embed " << correct[0][0] << ", shuffled " << correct[0][1] << "; no pos_embed "
            << correct[1][0] << ", shuffled " << correct[1][1] << " of " << count);
}

}  // namespace

TEST_CASE("held-out accuracy with and without position embeddings, as is and shuffled, equals PyTorch's") {
    SUBCASE("the demo model (the kind of the red shape)") { check_heldout_table(kDemoModel, kHeldout); }
    SUBCASE("the position-task model (the quadrant of the red shape)") {
        check_heldout_table(kWhereModel, fs::path(ATTNSCOPE_TEST_DATA) / "vit" / "heldout_where");
    }
}

TEST_CASE("read_position_accuracy: none beside a model without the file, a readable error for a broken one") {
    const fs::path dir = fs::temp_directory_path() / ("attnscope_positions_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    CHECK_FALSE(read_position_accuracy((dir / "model.safetensors").string()).has_value());
    std::ofstream(dir / "model.positions.json") << "{\"images\": 3}";
    CHECK_THROWS_WITH_AS(read_position_accuracy((dir / "model.safetensors").string()),
                         doctest::Contains("model.positions.json: expected {\"images\""), FileError);
    fs::remove_all(dir);
}
