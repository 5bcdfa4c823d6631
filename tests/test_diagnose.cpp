// Tests of core/teach/diagnose: the user's steps against the reference, and the names of known bugs.
//
// Truth from outside: the bug_* fixtures are the intermediates of buggy attention implementations
// run in PyTorch (tools/make_activation_fixtures.py); expected.json names each first divergence.
// The synthetic cases below build wrong tensors from the reference with our own ops.
#include <doctest/doctest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "diagnose.hpp"
#include "io.hpp"
#include "ops.hpp"
#include "run.hpp"
#include "weights.hpp"

using namespace attnscope;

namespace {

const std::string kData = std::string(ATTNSCOPE_TEST_DATA) + "/activations/";

// What `attnscope check DUMP` does, with the weights from the dump or a separate file.
CheckReport check_dump(const std::string& dump_path, const std::string& weights_path = "",
                       std::optional<std::size_t> block = {}) {
    const TensorSource dump = TensorSource::open(dump_path);
    const std::vector<UserStep> steps = load_user_steps(dump, block);
    AttentionConfig cfg;
    const UserStep* input = nullptr;
    for (const auto& s : steps)
        if (s.step == "input") input = &s;
    REQUIRE(input);
    const Tensor x{input->values, {"B", "N", "C"}};
    cfg.batch = x.values.shape()[0];
    cfg.tokens = x.values.shape()[1];
    cfg.dim = x.values.shape()[2];
    const SourceWeights w = load_attention_weights(
        weights_path.empty() ? dump : TensorSource::open(weights_path), block, cfg.dim);
    cfg.qkv_bias = w.weights.qkv_bias.has_value();
    cfg.heads = infer_heads(dump, steps).value_or(0);
    REQUIRE(cfg.heads == 4);
    return compare_steps(run_attention(cfg, w.weights, x), w.weights, steps);
}

struct Small {
    AttentionConfig cfg;
    AttentionWeights w;
    Trace ref;
    explicit Small(bool scaled = true) {
        cfg.batch = 2;
        cfg.tokens = 5;
        cfg.dim = 24;
        cfg.heads = 4;
        cfg.seed = 7;
        cfg.scaled = scaled;
        w = default_weights(cfg);
        ref = run_attention(cfg, w, default_input(cfg));
    }
    StepComparison compare(const std::string& step, const Array& values, const std::string& dtype = "F32") const {
        const CheckReport r = compare_steps(ref, w, {{step, step, dtype, values}});
        REQUIRE(r.steps.size() == 1);
        return r.steps[0];
    }
};

}  // namespace

TEST_CASE("buggy PyTorch implementations: each diagnosed at its first wrong step") {
    std::ifstream in(kData + "expected.json");
    const auto expected = nlohmann::json::parse(in);
    REQUIRE(expected.size() == 7);
    for (const auto& [name, e] : expected.items()) {
        CAPTURE(name);
        const auto options = e["options"].get<std::vector<std::string>>();
        const CheckReport report = options.empty() ? check_dump(kData + name)
                                                   : check_dump(kData + name, kData + options[1], std::stoul(options[3]));
        const StepComparison* first = report.first_divergence();
        REQUIRE(first);
        CHECK(first->step == e["first_divergence"].get<std::string>());
        CHECK(finding_name(first->finding) == e["finding"].get<std::string>());
        CHECK(first->diagnosis.find(e["phrase"].get<std::string>()) != std::string::npos);
        for (const auto& s : report.steps) {  // every step before it matches
            if (&s == first) break;
            CHECK(s.ok());
        }
    }
}

TEST_CASE("hook exports of the timm-named (fused) and Hugging Face-named models match every step") {
    for (const char* file : {"timm_export.safetensors", "hf_export.safetensors"})
        for (std::size_t block : {0, 1}) {
            CAPTURE(file);
            CAPTURE(block);
            const CheckReport report = check_dump(kData + file, "", block);
            CHECK(report.steps.size() >= 7);  // input, q, k, v, attn, merged, out (+ qkv for timm)
            CHECK(report.first_divergence() == nullptr);
            for (const auto& s : report.steps) CHECK(s.max_error < 1e-5);
        }
}

TEST_CASE("the same values under another axis order name the permutation") {
    const Small s;
    const StepComparison c = s.compare("attn", transpose(s.ref.at("attn").tensor(), 2, 3).values);
    CHECK(c.finding == Finding::AxisOrder);
    CHECK(c.diagnosis.find("axis order [B, h, N', N] instead of [B, h, N, N'] (.permute(0, 1, 3, 2)") !=
          std::string::npos);
    const StepComparison heads = s.compare("qkv_heads", s.ref.at("qkv_split").tensor().values);
    CHECK(heads.finding == Finding::AxisOrder);
    CHECK(heads.diagnosis.find("axis order [B, N, 3, h, c] instead of [3, B, h, N, c]") != std::string::npos);
}

TEST_CASE("merged without the transpose, columns-softmax and scale bugs from synthetic tensors") {
    const Small s;
    const Tensor& context = s.ref.at("context").tensor();  // [B, h, N, c]
    CHECK(s.compare("merged", reshape(context, {2, 5, 24}, {"B", "N", "C"}).values).finding == Finding::MergeTranspose);
    const Array columns = transpose(softmax_last(transpose(s.ref.at("scaled").tensor(), 2, 3)), 2, 3).values;
    CHECK(s.compare("attn", columns).finding == Finding::SoftmaxAxis);
    const StepComparison twice = s.compare("scaled", scale(s.ref.at("scaled").tensor(), 1.0f / std::sqrt(6.0f)).values);
    CHECK(twice.finding == Finding::Scale);
    CHECK(twice.diagnosis.find("twice") != std::string::npos);
}

TEST_CASE("with the scale switched off (--no-scale) the replayed bugs scale as the reference does") {
    const Small s(false);
    const Tensor& context = s.ref.at("context").tensor();  // [B, h, N, c], from unscaled scores
    const StepComparison merged = s.compare("merged", reshape(context, {2, 5, 24}, {"B", "N", "C"}).values);
    CHECK(merged.finding == Finding::MergeTranspose);
    const Array columns = transpose(softmax_last(transpose(s.ref.at("scaled").tensor(), 2, 3)), 2, 3).values;
    CHECK(s.compare("attn", columns).finding == Finding::SoftmaxAxis);
}

TEST_CASE("shape mismatches name the axis - unexplained values and NaN say so") {
    const Small s;
    const StepComparison shape = s.compare("merged", xt::zeros<float>({2, 5, 12}));
    CHECK(shape.finding == Finding::Shape);
    CHECK(shape.diagnosis ==
          "shape mismatch: [2, 5, 12], expected [B, N, C] = [2, 5, 24]: axis 2 (C) is 12, expected 24");
    CHECK(std::isnan(shape.max_error));
    CHECK_FALSE(shape.difference);
    Array noisy = s.ref.at("out").tensor().values;
    noisy(1, 2, 3) += 0.5f;
    const StepComparison values = s.compare("out", noisy);
    CHECK(values.finding == Finding::Values);
    CHECK(values.diagnosis.find("at [1, 2, 3]") != std::string::npos);
    CHECK(values.max_error == doctest::Approx(0.5).epsilon(1e-3));
    REQUIRE(values.difference);
    CHECK((*values.difference)(1, 2, 3) == doctest::Approx(0.5).epsilon(1e-3));
    Array nan = noisy;
    nan(0, 0, 0) = NAN;
    CHECK(s.compare("out", nan).diagnosis.find("holds 1 NaN and 0 Inf values") != std::string::npos);
}

TEST_CASE("half-precision dumps get a coarser tolerance") {
    const Small s;
    Array rounded = s.ref.at("out").tensor().values;
    for (float& v : rounded) v *= 1.0f + 1e-3f;  // about float16's rounding
    CHECK_FALSE(s.compare("out", rounded, "F32").ok());
    CHECK(s.compare("out", rounded, "F16").ok());
}

TEST_CASE("inspect_tensor: stats, roles and the row sums of attention maps") {
    const TensorSource maps = TensorSource::open(kData + "attn_maps.npz");
    const InspectedTensor good = inspect_tensor(maps, *maps.find("blocks.0.attn.attn"));
    CHECK(good.role.name == "attn");
    REQUIRE(good.row_sums);
    CHECK(good.row_sums->failing_rows == 0);
    const InspectedTensor columns = inspect_tensor(maps, *maps.find("columns_softmax"));
    REQUIRE(columns.row_sums);
    CHECK(columns.row_sums->failing_rows == 40);
    const TensorSource model = TensorSource::open(kData + "timm_model.safetensors");
    const InspectedTensor proj = inspect_tensor(model, *model.find("blocks.0.attn.proj.weight"));
    CHECK_FALSE(proj.row_sums);  // square but a weight
    CHECK(proj.stats);
    const TensorSource bomb = TensorSource::open(kData + "bad/bomb_inflates.npz");
    const InspectedTensor refused = inspect_tensor(bomb, bomb.tensors()[0]);
    CHECK_FALSE(refused.stats);
    CHECK(refused.error.find("inflates past") != std::string::npos);
}

TEST_CASE("load_user_steps refuses a 0-d step - infer_heads reads 4-D steps") {
    CHECK_THROWS_WITH_AS(load_user_steps(TensorSource::open(kData + "bad/scalar_attn.npz"), {}),
                         doctest::Contains("'attn' is a 0-d scalar"), FileError);
    const TensorSource dump = TensorSource::open(kData + "bug_double_scale.npz");
    CHECK(infer_heads(dump, load_user_steps(dump, {})) == std::optional<std::size_t>(4));
}
