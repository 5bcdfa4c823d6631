// DropPath (stochastic depth) and LayerScale in the ViT block: the ops against naive loops, timm's
// dpr against torch.linspace, and the whole model against timm-equivalent torch code run on the
// masks attnscope drew (tools/make_drop_path_golden.py), forward and gradient.
#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "io.hpp"
#include "ops.hpp"
#include "pipeline.hpp"
#include "random.hpp"
#include "vit.hpp"
#include "vit_fixtures.hpp"

using namespace attnscope;
namespace fs = std::filesystem;
using attnscope::testing::random_tensor;
using attnscope::testing::read_json;
using attnscope::testing::worst_vs_torch;
using attnscope::testing::worst_vs_torch_scale;

namespace {

const fs::path kData = fs::path(ATTNSCOPE_TEST_DATA) / "drop_path";
const fs::path kCase = kData / "b4_i32_p8_d32_h2_l3_dp0.6";
constexpr std::uint64_t kNoLimit = UINT64_MAX;

Array npy(const std::string& name) { return read_npy((kCase / name).string()); }

// The fixture's model in training mode with its rate and seed (or in eval).
VitModel fixture_model(bool training) {
    const auto meta = read_json(kCase / "meta.json");
    VitModel model = load_vit_model((kCase / "model.safetensors").string(), std::nullopt, kNoLimit);
    model.config.drop_path_rate = meta["drop_path_rate"].get<float>();
    model.config.training = training;
    model.config.seed = meta["seed"].get<std::uint64_t>();
    return model;
}

}  // namespace

TEST_CASE("drop_path scales each sample's whole branch by its mask value; its backward uses the same mask") {
    const Tensor x = random_tensor({3, 4, 5}, {"B", "N", "C"}, 1);
    Array mask = make_array({3, 1, 1});
    mask.data()[0] = 2.0f;
    mask.data()[1] = 0.0f;
    mask.data()[2] = 2.0f;
    const Tensor y = drop_path(x, mask);
    for (std::size_t b = 0; b < 3; ++b)
        for (std::size_t i = 0; i < 20; ++i)
            CHECK(y.values.data()[b * 20 + i] == x.values.data()[b * 20 + i] * mask.data()[b]);
    const Tensor g = drop_path_backward(x, mask);
    CHECK(g.values == y.values);
    CHECK_THROWS_WITH_AS(drop_path(x, make_array({2, 1, 1})),
                         "drop_path: the mask has shape [2, 1, 1], expected [B, 1, 1] for x [3, 4, 5]", ShapeError);
}

TEST_CASE("drop_path_mask draws one uniform per sample and drops it when u < p") {
    Rng rng(5, kDropPath), again(5, kDropPath);
    const Array mask = drop_path_mask(1000, 0.25f, rng);
    CHECK(shape_of(mask) == Shape{1000, 1, 1});
    std::size_t dropped = 0;
    for (std::size_t b = 0; b < 1000; ++b) {
        const bool drop = again.uniform() < 0.25f;
        CHECK(mask.data()[b] == (drop ? 0.0f : 1.0f / 0.75f));
        dropped += drop ? 1 : 0;
    }
    CHECK(dropped > 200);  // about a quarter
    CHECK(dropped < 300);
    CHECK_THROWS_AS(drop_path_mask(2, 1.0f, rng), ShapeError);
}

TEST_CASE("layer_scale multiplies every channel by gamma; its backward against naive sums") {
    const Tensor x = random_tensor({2, 3, 4}, {"B", "N", "C"}, 2), gy = random_tensor({2, 3, 4}, {"B", "N", "C"}, 3);
    Array gamma = make_array({4});
    for (std::size_t c = 0; c < 4; ++c) gamma.data()[c] = 0.5f + static_cast<float>(c);
    const Tensor y = layer_scale(x, gamma);
    for (std::size_t i = 0; i < 24; ++i) CHECK(y.values.data()[i] == x.values.data()[i] * gamma.data()[i % 4]);
    const LayerScaleGrads g = layer_scale_backward(x, gamma, gy);
    for (std::size_t c = 0; c < 4; ++c) {
        double sum = 0;
        for (std::size_t r = 0; r < 6; ++r) sum += double(gy.values.data()[r * 4 + c]) * x.values.data()[r * 4 + c];
        CHECK(g.gamma.data()[c] == doctest::Approx(sum).epsilon(1e-6));
    }
    for (std::size_t i = 0; i < 24; ++i) CHECK(g.x.values.data()[i] == gy.values.data()[i] * gamma.data()[i % 4]);
    CHECK_THROWS_WITH_AS(layer_scale(x, make_array({3}), "blocks.0.ls1.gamma"),
                         "layer_scale: blocks.0.ls1.gamma has shape [3], expected [4] for x [2, 3, 4]", ShapeError);
}

// torch evaluates linspace partly in vector chunks (base + k * step), which rounds some entries a
// float32 step or two away from the per-element formula attnscope uses.
TEST_CASE("the blocks' drop-path rates are timm's dpr, torch.linspace(0, rate, depth), within two float32 steps") {
    const auto cases = read_json(kData / "dpr.json");
    REQUIRE(cases.size() >= 5);
    std::size_t exact = 0, total = 0;
    for (const auto& c : cases) {
        VitConfig cfg;
        cfg.depth = c["depth"].get<std::size_t>();
        cfg.drop_path_rate = c["rate"].get<float>();
        CAPTURE(cfg.depth);
        CAPTURE(cfg.drop_path_rate);
        REQUIRE(c["dpr"].size() == cfg.depth);
        for (std::size_t i = 0; i < cfg.depth; ++i) {
            const float torch = c["dpr"][i].get<float>(), ours = cfg.drop_path(i);
            CHECK(std::fabs(ours - torch) <= 2.5e-7f * torch);  // 2^-22: two steps of the float32 mantissa
            exact += ours == torch ? 1 : 0;
            ++total;
        }
    }
    MESSAGE(exact << " of " << total << " rates equal torch's to the bit, the others within two float32 steps");
    CHECK(exact * 10 >= total * 8);
}

TEST_CASE("LayerScale is read from a checkpoint that has it; drop-path masks equal the fixture's; every step equals torch") {
    const auto meta = read_json(kCase / "meta.json");
    const VitModel model = fixture_model(true);
    const VitConfig& cfg = model.config;
    CHECK(cfg.layer_scale);
    CHECK(cfg.depth == meta["depth"].get<std::size_t>());
    REQUIRE(model.weights.blocks[1].ls2_gamma.size() == cfg.dim);
    CHECK(model.weights.blocks[1].ls2_gamma ==
          SafetensorsFile::open((kCase / "model.safetensors").string()).load("blocks.1.ls2.gamma"));
    for (std::size_t i = 0; i < cfg.depth; ++i) CHECK(cfg.drop_path(i) == meta["dpr"][i].get<float>());

    const VitTrace t = run_vit(model, Tensor{npy("pixels.npy"), {}});
    const std::size_t B = meta["batch"].get<std::size_t>();
    CHECK(t.batch == B);
    const std::vector<std::string> expected_names = {"norm1", "attn_out", "ls1",  "drop_path1", "residual1", "norm2", "fc1",
                                                     "gelu",  "fc2",      "ls2", "drop_path2", "residual2"};
    CHECK(vit_block_step_names(cfg) == expected_names);
    double worst = 0;
    std::size_t dropped = 0, compared = 0;
    for (std::size_t i = 0; i < cfg.depth; ++i) {
        const VitBlockTrace& b = t.blocks[i];
        std::vector<std::string> names;
        for (const Step& s : b.steps) names.push_back(s.name);
        CHECK(names == expected_names);
        REQUIRE(b.drop_paths.size() == 2);
        for (const DropPathRecord& r : b.drop_paths) {
            const std::string prefix = "block" + std::to_string(i) + "_" + r.step;
            CAPTURE(prefix);
            // The same seed draws the same masks as when the fixture was made (exactly).
            CHECK(r.mask == npy(prefix + "_mask.npy"));
            CHECK(r.rate == cfg.drop_path(i));
            CHECK(r.active == (i > 0));
            for (std::size_t s = 0; s < B; ++s) dropped += r.dropped(s) ? 1 : 0;
            CHECK(r.dropped_residual_vs_x == 0.0);
        }
        for (const char* step : {"attn_out", "ls1", "drop_path1", "residual1", "fc2", "ls2", "drop_path2", "residual2"}) {
            const std::string file = "block" + std::to_string(i) + "_" + step + ".npy";
            const double w = worst_vs_torch_scale(b.at(step).tensor().values, npy(file));
            CAPTURE(file);
            CHECK(w <= 1.0);
            worst = std::max(worst, w);
            ++compared;
        }
        // A dropped sample: its drop_path step is all zeros and the residual is the block's input.
        const Array& dp1 = b.at("drop_path1").tensor().values;
        const std::size_t per = dp1.size() / B;
        for (std::size_t s = 0; s < B; ++s)
            if (b.drop_paths[0].dropped(s))
                CHECK(std::all_of(dp1.data() + s * per, dp1.data() + (s + 1) * per, [](float v) { return v == 0.0f; }));
    }
    CHECK(dropped == meta["dropped_branches_after_block0"].get<std::size_t>());
    const double logits = worst_vs_torch(t.logits(), npy("logits.npy"));
    MESSAGE("DropPath + LayerScale, training: " << compared << " block steps at worst " << worst
                                                << " of the 2e-5 max(1, max|torch|) bound, logits at " << logits
                                                << " of the 1e-4 relative bound");
    CHECK(logits <= 1.0);
}

TEST_CASE("the gradient through a dropped branch is zero: drop_path_backward against torch's autograd") {
    const auto meta = read_json(kCase / "meta.json");
    const std::size_t B = meta["batch"].get<std::size_t>(), depth = meta["depth"].get<std::size_t>();
    double worst = 0;
    std::size_t zero_samples = 0;
    for (std::size_t i = 0; i < depth; ++i)
        for (int k = 1; k <= 2; ++k) {
            const std::string prefix = "block" + std::to_string(i) + "_";
            const std::string dp = "drop_path" + std::to_string(k), ls = "ls" + std::to_string(k);
            const Array mask = npy(prefix + dp + "_mask.npy");
            const Array grad_out = npy(prefix + "grad_" + dp + ".npy"), torch_grad = npy(prefix + "grad_" + ls + ".npy");
            const Tensor ours = drop_path_backward(Tensor{grad_out, {"B", "N", "C"}}, mask);
            worst = std::max(worst, worst_vs_torch(ours.values, torch_grad));
            const std::size_t per = torch_grad.size() / B;
            for (std::size_t s = 0; s < B; ++s)
                if (mask.data()[s] == 0.0f) {
                    ++zero_samples;
                    CHECK(std::all_of(ours.values.data() + s * per, ours.values.data() + (s + 1) * per,
                                      [](float v) { return v == 0.0f; }));
                    CHECK(std::all_of(torch_grad.data() + s * per, torch_grad.data() + (s + 1) * per,
                                      [](float v) { return v == 0.0f; }));
                    // ... while the residual path still carries a gradient to x.
                    CHECK(std::any_of(grad_out.data() + s * per, grad_out.data() + (s + 1) * per,
                                      [](float v) { return v != 0.0f; }));
                }
        }
    MESSAGE("drop_path backward vs torch autograd: worst " << worst << " of the 1e-4 bound, " << zero_samples
                                                           << " dropped branches with zero gradient");
    CHECK(worst <= 1.0);
    CHECK(zero_samples == meta["dropped_branches_after_block0"].get<std::size_t>());
}

TEST_CASE("in eval DropPath is the identity: a view of the branch, logits equal torch's eval run") {
    const VitModel model = fixture_model(false);
    const VitTrace t = run_vit(model, Tensor{npy("pixels.npy"), {}});
    for (const VitBlockTrace& b : t.blocks) {
        REQUIRE(b.drop_paths.size() == 2);
        for (const DropPathRecord& r : b.drop_paths) {
            CHECK_FALSE(r.active);
            CHECK(std::all_of(r.mask.begin(), r.mask.end(), [](float v) { return v == 1.0f; }));
            const Step& s = b.at(r.step);
            CHECK(s.is_view);
            CHECK(s.note.find("identity") == 0);
        }
        CHECK(b.at("drop_path1").tensor().values == b.at("ls1").tensor().values);
    }
    const double logits = worst_vs_torch(t.logits(), npy("logits_eval.npy"));
    MESSAGE("DropPath + LayerScale, eval: logits at " << logits << " of the 1e-4 bound");
    CHECK(logits <= 1.0);
}

TEST_CASE("without a rate and without LayerScale the block records its eight steps and no drop path") {
    VitConfig cfg;
    cfg.image_size = 16;
    cfg.patch_size = 8;
    cfg.dim = 16;
    cfg.heads = 2;
    cfg.mlp_hidden = 32;
    cfg.depth = 2;
    VitModel model = fresh_vit_model(cfg, 3);
    CHECK_FALSE(model.config.layer_scale);
    CHECK(vit_block_step_names(model.config) == vit_block_step_names());
    const VitTrace t = run_vit(model, random_tensor({1, 3, 16, 16}, {"B", "3", "H", "W"}, 4));
    for (const VitBlockTrace& b : t.blocks) {
        CHECK(b.drop_paths.empty());
        CHECK(b.steps.size() == vit_block_step_names().size());
        CHECK(b.at("residual1").code == "x = x + self.attn(self.norm1(x))");
    }
    // With a rate the residual's line reads as timm's (the same weights, so the same kernels).
    model.config.drop_path_rate = 0.2f;
    const VitTrace t2 = run_vit(model, random_tensor({1, 3, 16, 16}, {"B", "3", "H", "W"}, 4));
    CHECK(t2.blocks[1].at("residual1").code == "x = x + self.drop_path1(self.attn(self.norm1(x)))");
    CHECK(t2.blocks[1].at("residual2").inputs == std::vector<std::string>{"residual1", "drop_path2"});
    CHECK(t2.logits() == t.logits());  // eval: the same numbers
}

TEST_CASE("a bad drop-path rate, a family without DropPath, and LayerScale in some blocks only are refused") {
    VitConfig cfg;
    cfg.drop_path_rate = 1.0f;
    auto problems = validate(cfg, 1, kNoLimit);
    REQUIRE(problems.size() == 1);
    CHECK(english(problems[0]).find("the drop-path rate 1 must be at least 0 and below 1") == 0);
    cfg.drop_path_rate = -0.1f;
    CHECK(validate(cfg, 1, kNoLimit).size() == 1);
    cfg.drop_path_rate = 0.1f;
    cfg.family = VitFamily::Torchvision;
    problems = validate(cfg, 1, kNoLimit);
    REQUIRE(problems.size() == 1);
    CHECK(english(problems[0]) == "drop path (stochastic depth) is timm's DropPath; a torchvision ViT has no drop_path in its blocks");

    // The fixture's checkpoint without blocks.1.ls1.gamma.
    const SafetensorsFile file = SafetensorsFile::open((kCase / "model.safetensors").string());
    std::vector<std::pair<std::string, Array>> tensors;
    for (const SafetensorsEntry& e : file.entries())
        if (e.name != "blocks.1.ls1.gamma") tensors.emplace_back(e.name, file.load(e.name));
    const fs::path partial = fs::temp_directory_path() / ("attnscope_partial_ls_" + std::to_string(::getpid()) + ".safetensors");
    write_safetensors(partial.string(), tensors, file.metadata());
    CHECK_THROWS_WITH_AS(load_vit_model(partial.string(), std::nullopt, kNoLimit),
                         doctest::Contains("blocks.1.ls1.gamma is missing but blocks.0.ls1.gamma is present: LayerScale "
                                           "is in every block or in none"),
                         FileError);
    fs::remove(partial);
}
