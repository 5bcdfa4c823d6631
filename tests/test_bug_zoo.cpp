// Tests of core/teach/bug_zoo: each bug's documented symptom, the check that catches it and its first
// step, and its tensors against PyTorch's buggy implementations.
//
// Truth from outside: tests/data/activations/bug_* (tools/make_activation_fixtures.py) and
// tests/data/zoo (tools/make_zoo_fixtures.py) hold what buggy PyTorch code computes on its weights
// and input; the zoo's buggy run of the same weights and input must give the same tensors.
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "bug_zoo.hpp"
#include "io.hpp"
#include "ops.hpp"
#include "weights.hpp"

using namespace attnscope;

namespace {

const std::string kData = std::string(ATTNSCOPE_TEST_DATA) + "/";

AttentionConfig small_config() {
    AttentionConfig cfg;
    cfg.batch = 2;
    cfg.tokens = 5;
    cfg.dim = 24;
    cfg.heads = 4;
    cfg.seed = 3;
    return cfg;
}

double max_abs(const Array& a, const Array& b) {
    double worst = 0.0;
    for (std::size_t i = 0; i < a.size(); ++i)
        worst = std::max(worst, std::fabs(static_cast<double>(a.data()[i]) - b.data()[i]));
    return worst;
}

// The zoo's buggy run on a fixture's weights and input; every step the fixture holds must agree.
std::size_t check_against_fixture(const std::string& path, Bug bug) {
    const TensorSource dump = TensorSource::open(path);
    const std::vector<UserStep> steps = load_user_steps(dump, std::nullopt);
    const UserStep* input = nullptr;
    for (const UserStep& s : steps)
        if (s.step == "input") input = &s;
    REQUIRE(input);
    const Tensor x{input->values, {"B", "N", "C"}};
    AttentionConfig cfg = small_config();
    const SourceWeights w = load_attention_weights(dump, std::nullopt, cfg.dim);
    cfg.qkv_bias = w.weights.qkv_bias.has_value();
    const ZooRun z = run_zoo(cfg, w.weights, x, bug);
    std::size_t compared = 0;
    for (const UserStep& s : steps) {
        CAPTURE(s.tensor_name);
        const Step* ours = z.buggy.find(s.step);
        REQUIRE(ours);
        REQUIRE(ours->shape() == shape_of(s.values));
        CHECK(max_abs(ours->tensor().values, s.values) < 1e-5);
        ++compared;
    }
    return compared;
}

}  // namespace

TEST_CASE("every bug is documented with a title and wrong line and symptom and a first step") {
    REQUIRE(bug_infos().size() == 8);
    for (const BugInfo& b : bug_infos()) {
        CHECK(bug_from_key(b.key) == b.bug);
        if (b.bug == Bug::None) continue;
        CHECK(std::string(b.title).size() > 5);
        CHECK(std::string(b.wrong_line) != b.right_line);
        CHECK(std::string(b.symptom).size() > 20);
        CHECK(std::string(b.first_step).size() > 0);
    }
}

TEST_CASE("each bug is caught by the documented check at the documented first step") {
    for (const BugInfo& b : bug_infos()) {
        CAPTURE(b.key);
        const ZooRun z = run_zoo(small_config(), b.bug);
        CHECK(z.caught_by == b.caught_by);
        CHECK(z.first_step == b.first_step);
        if (b.bug == Bug::None) {
            CHECK(z.comparison.first_divergence() == nullptr);
            CHECK(z.buggy.steps.size() == z.correct.steps.size());
        }
        // Every step before the first one that differs is equal to the correct run's.
        for (const StepComparison& c : z.comparison.steps) {
            if (c.step == z.first_step) break;
            CHECK(c.ok());
        }
    }
}

TEST_CASE("softmax over dim -2: the row-sum check fails at attn and the columns sum to 1") {
    const ZooRun z = run_zoo(small_config(), Bug::SoftmaxDim2);
    const RowSumCheck* rows = z.buggy.checks.row_sum("attn");
    REQUIRE(rows);
    CHECK_FALSE(rows->ok());
    const Tensor& attn = z.buggy.at("attn").tensor();
    const Array columns = sum_last(transpose(attn, 2, 3)).values;
    for (float s : columns) CHECK(s == doctest::Approx(1.0f).epsilon(1e-5));
    CHECK(z.comparison.first_divergence()->finding == Finding::SoftmaxAxis);
    CHECK(z.correct.checks.row_sum("attn")->ok());
}

TEST_CASE("missing scale: scaled equals scores and the first difference is at scaled") {
    const AttentionConfig cfg = small_config();
    const ZooRun z = run_zoo(cfg, Bug::MissingScale);
    CHECK(max_abs(z.buggy.at("scaled").tensor().values, z.buggy.at("scores").tensor().values) == 0.0);
    CHECK(z.comparison.first_divergence()->step == "scaled");
    CHECK(z.comparison.first_divergence()->finding == Finding::Scale);
    CHECK(z.buggy.checks.row_sum("attn")->ok());  // rows still sum to 1
    CHECK(z.buggy.checks.shapes_ok());
}

TEST_CASE("scale after softmax: rows sum to c^-0.5") {
    const AttentionConfig cfg = small_config();
    const ZooRun z = run_zoo(cfg, Bug::ScaleAfterSoftmax);
    const Array sums = sum_last(z.buggy.at("attn").tensor()).values;
    for (float s : sums) CHECK(s == doctest::Approx(std::pow(cfg.head_dim(), -0.5)).epsilon(1e-5));
    CHECK(z.caught_by == CaughtBy::RowSumCheck);
}

TEST_CASE("with the scale switched off (--no-scale) the wrong lines multiply by self.scale = 1 too") {
    AttentionConfig cfg = small_config();
    cfg.scaled = false;
    for (Bug bug : {Bug::MissingScale, Bug::ScaleAfterSoftmax}) {
        const ZooRun z = run_zoo(cfg, bug);
        CHECK(z.caught_by == CaughtBy::Nothing);
        CHECK(z.comparison.first_divergence() == nullptr);
        CHECK(z.buggy.checks.row_sum("attn")->ok());
    }
}

TEST_CASE("merge without the transpose: merged is context reshaped and context_t is absent") {
    const AttentionConfig cfg = small_config();
    const ZooRun z = run_zoo(cfg, Bug::MergeWithoutTranspose);
    CHECK(z.buggy.find("context_t") == nullptr);
    CHECK(z.buggy.at("merged").inputs == std::vector<std::string>{"context"});
    CHECK(max_abs(z.buggy.at("merged").tensor().values, z.buggy.at("context").tensor().values) ==
          0.0);  // same memory order
    CHECK(z.comparison.first_divergence()->step == "merged");
    CHECK(z.comparison.first_divergence()->finding == Finding::MergeTranspose);
}

TEST_CASE("reshape without permute and the (h c three) split: same shapes and different numbers") {
    for (Bug bug : {Bug::ReshapeWithoutPermute, Bug::SplitHC3}) {
        const ZooRun z = run_zoo(small_config(), bug);
        for (const char* step : {"q", "k", "v", "scores", "attn", "context", "merged", "out"})
            CHECK(z.buggy.at(step).shape() == z.correct.at(step).shape());
        CHECK(z.buggy.checks.row_sum("attn")->ok());
        CHECK(z.caught_by == CaughtBy::Difference);
        const StepComparison* first = z.comparison.first_divergence();
        REQUIRE(first);
        CHECK(first->finding == (bug == Bug::SplitHC3 ? Finding::Split : Finding::AxisOrder));
    }
}

TEST_CASE("k not transposed: a shape error naming q and k and their shapes and the trace up to it") {
    const AttentionConfig cfg = small_config();
    ZooRun z;
    CHECK_NOTHROW(z = run_zoo(cfg, Bug::KNotTransposed));
    CHECK(z.caught_by == CaughtBy::ShapeError);
    CHECK(z.first_step == "scores");
    CHECK(z.buggy.steps.back().name == "v");  // the trace up to the failing step
    CHECK(z.buggy.find("k_t") == nullptr);
    CHECK(z.buggy.find("scores") == nullptr);
    std::ifstream in(kData + "zoo/k_not_transposed.json");
    const auto torch = nlohmann::json::parse(in);
    CHECK_FALSE(torch["torch_error"].get<std::string>().empty());  // PyTorch refuses it too
    const std::string q = format_shape(torch["q"].get<Shape>()), k = format_shape(torch["k"].get<Shape>());
    CAPTURE(z.failure);
    CHECK(z.failure.find("operand q w/ shape " + q) != std::string::npos);
    CHECK(z.failure.find("operand k w/ shape " + k) != std::string::npos);
    CHECK(z.failure.find("q: [B, h, N, c] = " + q) != std::string::npos);
    CHECK(z.failure.find("k: [B, h, N', c] = " + k) != std::string::npos);
    CHECK(z.failure.find("transpose(-2, -1)") != std::string::npos);
}

TEST_CASE("the zoo's buggy runs equal PyTorch's buggy implementations on the same weights and input") {
    CHECK(check_against_fixture(kData + "activations/bug_split.npz", Bug::SplitHC3) >= 5);
    CHECK(check_against_fixture(kData + "activations/bug_softmax.safetensors", Bug::SoftmaxDim2) >= 7);
    CHECK(check_against_fixture(kData + "activations/bug_no_scale.npz", Bug::MissingScale) >= 5);
    CHECK(check_against_fixture(kData + "activations/bug_scale_after_softmax.safetensors", Bug::ScaleAfterSoftmax) >=
          4);
    CHECK(check_against_fixture(kData + "activations/bug_merge.safetensors", Bug::MergeWithoutTranspose) >= 5);
    CHECK(check_against_fixture(kData + "zoo/reshape_without_permute.npz", Bug::ReshapeWithoutPermute) >= 11);
}

TEST_CASE("scale applied twice, off the zoo's list but replayed by check, equals PyTorch's buggy run") {
    CHECK(check_against_fixture(kData + "activations/bug_double_scale.npz", Bug::DoubleScale) >= 3);
    for (const BugInfo& b : bug_infos()) CHECK(b.bug != Bug::DoubleScale);
    CHECK_FALSE(bug_from_key("double-scale"));
}

TEST_CASE("k not transposed with N equal to c runs silently and only the difference catches it") {
    AttentionConfig cfg = small_config();
    cfg.tokens = 6;  // N = c = 6: q @ k is a valid [6, 6] @ [6, 6]
    const ZooRun z = run_zoo(cfg, Bug::KNotTransposed);
    CHECK(z.failure.empty());
    CHECK(z.caught_by == CaughtBy::Difference);
    CHECK(z.first_step == "scores");
    const Tensor expected = matmul(z.correct.at("q").tensor(), z.correct.at("k").tensor(), {"B", "h", "N", "N'"});
    CHECK(max_abs(z.buggy.at("scores").tensor().values, expected.values) == 0.0);
}

TEST_CASE("the steps that read a missing step read its input instead") {
    AttentionConfig cfg = small_config();
    cfg.tokens = 6;
    const ZooRun z = run_zoo(cfg, Bug::KNotTransposed);
    CHECK(z.buggy.at("scores").inputs == std::vector<std::string>{"q", "k"});
    CHECK(z.buggy.at("scores").operands.at(1).expr == "k");
}
