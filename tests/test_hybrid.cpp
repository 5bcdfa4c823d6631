// The hybrid ViT: a CNN stem (conv stride 2 -> BatchNorm2d in eval -> ReLU per stage, a 1x1
// projection) instead of linear patches. Every recorded stem step, the tokens and the logits against
// the same torch module (tools/make_hybrid_fixtures.py), bad stems, and a fresh model with a stem.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <string>

#include "io.hpp"
#include "vit.hpp"
#include "vit_fixtures.hpp"

using namespace attnscope;
namespace fs = std::filesystem;
using attnscope::testing::edited_copy;
using attnscope::testing::Metadata;
using attnscope::testing::read_json;
using attnscope::testing::refused;
using attnscope::testing::Tensors;
using attnscope::testing::worst_vs_torch;

namespace {

const fs::path kHybrid = fs::path(ATTNSCOPE_TEST_DATA) / "hybrid";
const fs::path kCase = kHybrid / "i64_s8_16_k3_d32_h2_l2";
constexpr std::uint64_t kNoLimit = std::numeric_limits<std::uint64_t>::max();

Tensor read_pixels(const fs::path& dir) { return {read_npy((dir / "pixels.npy").string()), {"B", "3", "H", "W"}}; }

Array& tensor_named(Tensors& tensors, const std::string& name) {
    for (auto& [n, a] : tensors)
        if (n == name) return a;
    FAIL("no tensor " << name);
    throw std::logic_error("unreachable");
}

double max_abs_diff(const Array& a, const Array& b) {
    double worst = 0;
    for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(double(a.data()[i]) - b.data()[i]));
    return worst;
}

// The step-by-step comparisons' measure (as tests/test_beyond.cpp): |ours - torch| / max(1, |torch|).
double worst_step_error(const Array& ours, const Array& torch) {
    REQUIRE(shape_of(ours) == shape_of(torch));
    double worst = 0;
    for (std::size_t i = 0; i < ours.size(); ++i) {
        const double t = torch.data()[i];
        worst = std::max(worst, std::fabs(ours.data()[i] - t) / std::max(1.0, std::fabs(t)));
    }
    return worst;
}

}  // namespace

TEST_CASE("golden: every stem step and the tokens within 1e-5, the logits within 1e-4 relative of PyTorch's") {
    for (const std::string name : {"i64_s8_16_k3_d32_h2_l2", "i32_s4_8_8_k5_bias_d16_h2_l1"}) {
        CAPTURE(name);
        const fs::path dir = kHybrid / name;
        const auto meta = read_json(dir / "meta.json");
        const VitModel model = load_vit_model((dir / "model.safetensors").string(), std::nullopt, kNoLimit);
        const VitConfig& c = model.config;
        CHECK(c.stem_channels == meta["stem_channels"].get<std::vector<std::size_t>>());
        CHECK(c.stem_kernel == meta["stem_kernel"]);
        CHECK(c.stem_conv_bias == meta["conv_bias"]);
        CHECK(c.patch_size == meta["patch_size"]);
        CHECK(c.image_size == meta["image_size"]);
        CHECK(c.tokens() == meta["tokens"]);
        CHECK(c.dim == meta["dim"]);
        CHECK(c.heads == meta["heads"]);
        const VitTrace t = run_vit(model, read_pixels(dir));
        // Every step as the other step-by-step comparisons check it: 1e-5 absolute, relative above 1.
        std::vector<std::string> steps = vit_stem_step_names(c.stem_channels.size());
        for (const char* s : {"patches", "patch_embed", "embed"}) steps.push_back(s);
        double worst_step = 0;
        for (const std::string& step : steps) {
            CAPTURE(step);
            std::string file = step;
            if (const auto dot = file.find('.'); dot != std::string::npos) file[dot] = '_';
            const double e = worst_step_error(t.at(step).tensor().values, read_npy((dir / (file + ".npy")).string()));
            CHECK(e <= 1e-5);
            worst_step = std::max(worst_step, e);
        }
        // The logits with the tolerance of the other ViT tests: 1e-4 relative, 1e-6 absolute below 0.01.
        const Array torch_logits = read_npy((dir / "logits.npy").string());
        const double logit_ratio = worst_vs_torch(t.logits(), torch_logits);
        CHECK(logit_ratio <= 1.0);
        MESSAGE(name << ": " << steps.size() << " steps, worst |ours - torch| / max(1, |torch|) = " << worst_step
                     << "; logits max |ours - torch| = " << max_abs_diff(t.logits(), torch_logits)
                     << ", worst ratio to the 1e-4 relative bound = " << logit_ratio);
    }
}

TEST_CASE("the stem's steps come between the pixels and the tokens, with the shapes a student reads") {
    const VitModel model = load_vit_model((kCase / "model.safetensors").string(), std::nullopt, kNoLimit);
    const VitTrace t = run_vit(model, read_pixels(kCase));
    std::vector<std::string> names;
    for (const Step& s : t.embed) names.push_back(s.name);
    const std::vector<std::string> expected = {"pixels",   "stem0.conv", "stem0.bn",    "stem0.relu", "stem1.conv",
                                               "stem1.bn", "stem1.relu", "patches",     "patch_embed", "tokens",
                                               "embed"};
    CHECK(names == expected);
    CHECK(t.at("pixels").shape() == Shape{1, 3, 64, 64});
    CHECK(t.at("stem0.relu").shape() == Shape{1, 8, 32, 32});
    CHECK(t.at("stem1.conv").shape() == Shape{1, 16, 16, 16});
    CHECK(t.at("patches").shape() == Shape{1, 256, 16});
    CHECK(t.at("patch_embed").shape() == Shape{1, 256, 32});
    CHECK(t.at("embed").shape() == Shape{1, 257, 32});
    CHECK(t.grid.rows == 16);
    CHECK(t.grid.patch == 4);
    CHECK(t.at("stem0.conv").op == Op::conv2d);
    CHECK(t.at("stem0.bn").op == Op::batchnorm);
    CHECK(t.at("stem0.relu").op == Op::relu);
    CHECK(t.at("stem1.conv").code == "self.patch_embed.backbone[3](x)");
    CHECK(t.blocks.front().attn().shape()[2] == 257);
    for (const Step& s : t.embed) CHECK(s.tensor().values.size() > 0);
    CHECK(t.nonfinite.ok());
}

TEST_CASE("bad stems: channels that do not chain, a missing running_var, NaN, a negative variance, the proj") {
    const fs::path base = kCase / "model.safetensors";
    const fs::path chain = edited_copy(base, "chain.safetensors", [](Tensors& t, Metadata&) {
        tensor_named(t, "patch_embed.backbone.3.weight") = xt::zeros<float>({std::size_t{16}, std::size_t{4}, std::size_t{3}, std::size_t{3}});
    });
    refused(chain, chain.string() + ": patch_embed.backbone.3.weight has shape [16, 4, 3, 3]: its 4 input channels do "
                                    "not chain with the 8 output channels of patch_embed.backbone.0.weight");
    const fs::path no_var = edited_copy(base, "novar.safetensors", [](Tensors& t, Metadata&) {
        t.erase(std::remove_if(t.begin(), t.end(), [](const auto& e) { return e.first == "patch_embed.backbone.1.running_var"; }),
                t.end());
    });
    refused(no_var, no_var.string() + ": no tensor named 'patch_embed.backbone.1.running_var'");
    const fs::path nan = edited_copy(base, "nan.safetensors", [](Tensors& t, Metadata&) {
        tensor_named(t, "patch_embed.backbone.4.running_mean")(3) = std::numeric_limits<float>::quiet_NaN();
    });
    refused(nan, nan.string() + ": patch_embed.backbone.4.running_mean holds NaN at element 3");
    const fs::path negative = edited_copy(base, "negvar.safetensors", [](Tensors& t, Metadata&) {
        tensor_named(t, "patch_embed.backbone.1.running_var")(0) = -1.0f;
    });
    refused(negative, "patch_embed.backbone.1.running_var holds a negative variance");
    const fs::path proj = edited_copy(base, "proj.safetensors", [](Tensors& t, Metadata&) {
        tensor_named(t, "patch_embed.proj.weight") = xt::zeros<float>({std::size_t{32}, std::size_t{8}, std::size_t{1}, std::size_t{1}});
    });
    refused(proj, "patch_embed.proj.weight has shape [32, 8, 1, 1], expected [D, 16, 1, 1]");
    const fs::path even = edited_copy(base, "even.safetensors", [](Tensors& t, Metadata&) {
        tensor_named(t, "patch_embed.backbone.0.weight") = xt::zeros<float>({std::size_t{8}, std::size_t{3}, std::size_t{2}, std::size_t{2}});
    });
    refused(even, "patch_embed.backbone.0.weight has shape [8, 3, 2, 2], expected [C_out, C_in, k, k] with an odd k");
    for (const fs::path& p : {chain, no_var, nan, negative, proj, even}) fs::remove(p);
}

TEST_CASE("a fresh model with a CNN stem: 64 x 64 -> 32 x 32 x 32 -> 64 x 16 x 16 -> 256 tokens + the class token") {
    VitConfig c;  // 64 x 64, D = 96
    c.depth = 1;
    const VitConfig hybrid = with_cnn_stem(c);
    CHECK(hybrid.tokens() == 257);
    c.patch_size = 8;
    CHECK(c.tokens() == 65);
    const VitModel model = fresh_vit_model(hybrid, 5);
    Tensor pixels{make_array({1, 3, 64, 64}), {"B", "3", "H", "W"}};
    for (std::size_t i = 0; i < pixels.values.size(); ++i) pixels.values.data()[i] = std::sin(0.01f * float(i));
    const VitTrace t = run_vit(model, pixels);
    CHECK(t.at("stem0.conv").shape() == Shape{1, 32, 32, 32});
    CHECK(t.at("stem1.relu").shape() == Shape{1, 64, 16, 16});
    CHECK(t.at("patch_embed").shape() == Shape{1, 256, 96});
    CHECK(t.at("embed").shape() == Shape{1, 257, 96});
    CHECK(t.nonfinite.ok());
    // Fresh BatchNorms (running mean 0, var 1, weight 1, bias 0) scale by 1 / sqrt(1 + 1e-5).
    const Array& conv = t.at("stem0.conv").tensor().values;
    const Array& bn = t.at("stem0.bn").tensor().values;
    for (std::size_t i = 0; i < conv.size(); i += 97) CHECK(bn.data()[i] == doctest::Approx(conv.data()[i] / std::sqrt(1.00001)));
    const VitTrace again = run_vit(fresh_vit_model(hybrid, 5), pixels);
    CHECK(max_abs_diff(again.logits(), t.logits()) == 0);
    VitConfig wrong = hybrid;
    wrong.patch_size = 8;
    CHECK(!validate(wrong, 1, kNoLimit).empty());
}
