// The whole pipeline against PyTorch (fixtures from tools/make_golden.py), and the checks.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "blas_kernels.hpp"
#include "checks.hpp"
#include "random.hpp"
#include "io.hpp"
#include "pipeline.hpp"
#include "run.hpp"
#include "weights.hpp"

using namespace attnscope;
namespace fs = std::filesystem;

namespace {

const fs::path kGolden = fs::path(ATTNSCOPE_TEST_DATA) / "golden";

nlohmann::json read_json(const fs::path& p) {
    std::ifstream in(p);
    REQUIRE(in.good());
    return nlohmann::json::parse(in);
}

// Tolerance of every golden comparison:
// |ours - torch| <= 1e-5 max(1, |torch|) + 1e-6 max|torch over the step|. The second term is float32
// rounding: a score near 0 can be a sum of products as large as the step's largest values, and its
// rounding error scales with those terms, not with the result (OpenBLAS's Haswell and Prescott
// kernels sum in different orders: scores up to 4052 differ by 1e-3 between them).
std::size_t count_mismatches(const Array& ours, const Array& torch, double* worst) {
    std::size_t bad = 0;
    *worst = 0;
    double scale = 0;
    for (std::size_t i = 0; i < torch.size(); ++i) scale = std::max(scale, std::fabs(double(torch.data()[i])));
    for (std::size_t i = 0; i < ours.size(); ++i) {
        const double t = torch.data()[i], d = std::fabs(double(ours.data()[i]) - t);
        *worst = std::max(*worst, d);
        bad += !(d <= 1e-5 * std::max(1.0, std::fabs(t)) + 1e-6 * scale);
    }
    return bad;
}

struct GoldenCase {
    fs::path dir;
    nlohmann::json meta;
    AttentionConfig config;
    Trace trace;
};

GoldenCase run_golden(const fs::path& dir) {
    GoldenCase g{dir, read_json(dir / "meta.json"), {}, {}};
    g.config.batch = g.meta["batch"];
    g.config.tokens = g.meta["tokens"];
    g.config.dim = g.meta["dim"];
    g.config.heads = g.meta["heads"];
    g.config.qkv_bias = g.meta["qkv_bias"];
    const AttentionWeights w = load_attention_weights((dir / "weights.safetensors").string(), std::nullopt, g.config.dim);
    const Tensor x{read_npy((dir / "input.npy").string()), {"B", "N", "C"}};
    g.trace = run_attention(g.config, w, x);
    return g;
}

// PyTorch's tensor of a step. The ill-conditioned large case also has the steps PyTorch computes
// on particular OpenBLAS kernels (<step>.<kernels>.npy, tools/make_golden.py): its scores reach
// ~4000, where the kernels' summation order moves context by 2.3e-4, for PyTorch as for us.
Array expected_step(const fs::path& dir, const std::string& step) {
    const fs::path same_kernels = dir / (step + "." + blas_kernels_name() + ".npy");
    return read_npy((fs::exists(same_kernels) ? same_kernels : dir / (step + ".npy")).string());
}

std::vector<fs::path> golden_dirs() {
    std::vector<fs::path> dirs;
    for (const auto& e : fs::directory_iterator(kGolden))
        if (e.is_directory()) dirs.push_back(e.path());
    std::sort(dirs.begin(), dirs.end());
    return dirs;
}

}  // namespace

TEST_CASE("golden: every step of every case equals PyTorch's ViTAttention within 1e-5") {
    const auto dirs = golden_dirs();
    REQUIRE(dirs.size() >= 4);  // bias on, bias off, h = 1, scores past 88
    for (const auto& dir : dirs) {
        const GoldenCase g = run_golden(dir);
        REQUIRE(g.trace.steps.size() == attention_step_names().size());
        for (const Step& step : g.trace.steps) {
            CAPTURE(dir.filename().string());
            CAPTURE(step.name);
            const Array torch = expected_step(dir, step.name);
            REQUIRE(step.shape() == shape_of(torch));
            double worst = 0;
            CHECK(count_mismatches(step.tensor().values, torch, &worst) == 0);
            // What PyTorch's tensor looks like at this step: strides and contiguity.
            CHECK(step.torch_strides == g.meta["strides"][step.name].get<Strides>());
            CHECK(step.contiguous == g.meta["contiguous"][step.name].get<bool>());
        }
        CHECK(g.trace.checks.all_ok());
    }
}

TEST_CASE("golden: the case with scaled scores past 88 is finite and its rows sum to 1") {
    const GoldenCase g = run_golden(kGolden / "large_b1_n12_c32_h2");
    CHECK(g.meta["max_scaled"].get<double>() > 88.0);
    CHECK(g.trace.at("scaled").stats.max > 88.0f);
    CHECK(g.trace.checks.nonfinite.ok());
    CHECK(g.trace.at("attn").stats.nan_count == 0);
    CHECK(g.trace.checks.row_sum("attn")->failing_rows == 0);
}

TEST_CASE("weights from a checkpoint with --block read blocks.<I>.attn.* and give the same trace") {
    const fs::path dir = kGolden / "nobias_b1_n10_c48_h6";
    const AttentionWeights bare = load_attention_weights((dir / "weights.safetensors").string(), std::nullopt, 48);
    const AttentionWeights block = load_attention_weights((dir / "checkpoint_blocks.safetensors").string(), 3, 48);
    CHECK(bare.qkv_weight == block.qkv_weight);
    CHECK(bare.proj_bias == block.proj_bias);
    CHECK_FALSE(block.qkv_bias);
    CHECK_THROWS_WITH_AS(load_attention_weights((dir / "checkpoint_blocks.safetensors").string(), 9, 48),
                         doctest::Contains("no attention weights for block 9; it holds blocks 0, 1, 2, 3"), FileError);
    CHECK_THROWS_WITH_AS(load_attention_weights((dir / "weights.safetensors").string(), std::nullopt, 120),
                         doctest::Contains("qkv.weight has shape [144, 48], expected [3*C, C] = [360, 120] for dim 120"),
                         FileError);
}

TEST_CASE("every step is recorded with its name PyTorch line axes and shape formula") {
    const Trace t = run_attention(AttentionConfig{});  // the reference's debug example
    std::vector<std::string> names;
    for (const Step& s : t.steps) {
        names.push_back(s.name);
        CHECK_FALSE(s.code.empty());
        CHECK_FALSE(s.formula.empty());
        CHECK_FALSE(s.note.empty());
        CHECK(s.axes().size() == s.shape().size());
    }
    CHECK(names == attention_step_names());
    CHECK(t.at("qkv_split").shape() == Shape{2, 16, 3, 8, 96});
    CHECK(t.at("qkv_heads").shape() == Shape{3, 2, 8, 16, 96});
    CHECK(t.at("qkv_heads").axes() == Axes{"3", "B", "h", "N", "c"});
    CHECK(t.at("scores").axes() == Axes{"B", "h", "N", "N'"});
    CHECK(t.at("merged").note.find("copy") == 0);
    CHECK(t.at("qkv_heads").is_view);
    CHECK(t.checks.shapes.size() == names.size());
    CHECK(t.checks.all_ok());
}

TEST_CASE("default weights follow the reference's initialisation and depend only on the seed") {
    AttentionConfig c;
    c.dim = 64;
    c.heads = 4;
    c.qkv_bias = true;
    const AttentionWeights w = default_weights(c);
    const float xavier = std::sqrt(6.0f / (64 + 192));
    CHECK(xt::amax(xt::abs(w.qkv_weight))() <= xavier);
    CHECK(xt::amax(xt::abs(w.qkv_weight))() > 0.9f * xavier);
    CHECK(xt::amax(xt::abs(*w.qkv_bias))() == 0.0f);
    CHECK(xt::amax(xt::abs(w.proj_weight))() <= 1.0f / 8.0f);
    const Tensor x = default_input(c);
    CHECK(double(xt::mean(x.values)()) == doctest::Approx(0.0).epsilon(0.05).scale(1));
    CHECK(double(xt::stddev(x.values)()) == doctest::Approx(1.0).epsilon(0.05));
    CHECK(default_weights(c).proj_weight == w.proj_weight);
    CHECK(default_input(c).values == x.values);
    c.seed = 1;
    CHECK(default_weights(c).proj_weight != w.proj_weight);
    CHECK(default_input(c).values != x.values);
}

TEST_CASE("training-mode dropout: row sums of attn_drop differ from 1 and the check says it is expected") {
    AttentionConfig c;
    c.training = true;
    c.attn_drop = 0.1f;
    const Trace t = run_attention(c);
    const RowSumCheck& drop = *t.checks.row_sum("attn_drop");
    CHECK(drop.failing_rows > 0);
    CHECK(drop.deviation_expected);
    CHECK(drop.ok());
    CHECK(drop.explanation.find("not a bug") != std::string::npos);
    CHECK(t.checks.row_sum("attn")->failing_rows == 0);
    CHECK(t.checks.all_ok());
    CHECK_FALSE(t.at("attn_drop").is_view);
}

TEST_CASE("row-sum check counts failing rows per head") {
    Step probs;
    probs.name = "attn";
    Tensor weights{xt::ones<float>({1, 2, 3, 4}) * 0.25f, {"B", "h", "N", "N'"}};
    weights.values(0, 1, 2, 0) = 0.5f;  // one row of head 1 sums to 1.25
    probs.set_tensor(std::move(weights));
    const RowSumCheck r = check_row_sums(probs, false, 0.0f);
    CHECK(r.rows == 6);
    CHECK(r.failing_rows == 1);
    CHECK(r.head_failing == std::vector<std::size_t>{0, 1});
    CHECK(r.max_error == doctest::Approx(0.25));
    CHECK_FALSE(r.ok());
    CHECK(r.sums.values(0, 1, 2) == doctest::Approx(1.25));
}

TEST_CASE("the NaN/Inf check names the first step where a non-finite value appears") {
    AttentionConfig c;
    c.batch = 1;
    c.tokens = 4;
    c.dim = 8;
    c.heads = 2;
    AttentionWeights w = default_weights(c);
    Tensor x = default_input(c);
    x.values *= 1e30f;  // finite input; x @ W^T overflows float32
    w.qkv_weight *= 1e15f;
    const Trace t = run_attention(c, w, x);
    CHECK(t.checks.nonfinite.first_step == "qkv");
    CHECK_FALSE(t.checks.all_ok());
}

TEST_CASE("config validation: divisibility ranges and the memory budget before anything is allocated") {
    AttentionConfig c;
    c.dim = 100;
    auto p = validate(c, default_memory_budget());
    REQUIRE(p.size() == 1);
    CHECK(english(p[0]) == "--dim 100 is not divisible by --heads 8 (head_dim c = C / h must be a whole number)");
    c = AttentionConfig{};
    c.tokens = 1000000;
    p = validate(c, default_memory_budget());
    REQUIRE(p.size() == 1);
    CHECK(english(p[0]).find("over the memory budget") != std::string::npos);
    c.tokens = std::size_t(1) << 62;  // products overflow 64 bits: saturate, never wrap to small
    CHECK(trace_bytes(c) == UINT64_MAX);
    CHECK_FALSE(validate(c, default_memory_budget()).empty());
    c = AttentionConfig{};
    c.attn_drop = 1.5f;
    CHECK(english(validate(c, default_memory_budget()).at(0)).find("--attn-drop") == 0);
    c = AttentionConfig{};
    c.heads = 0;
    CHECK(english(validate(c, default_memory_budget()).at(0)) == "--heads must be at least 1");
    CHECK(validate(AttentionConfig{}, default_memory_budget()).empty());
    CHECK_THROWS_AS(run_attention(AttentionConfig{}, default_weights(AttentionConfig{}),
                                  Tensor{xt::zeros<float>({2, 16, 512}), {}}),
                    ShapeError);
}

TEST_CASE("cancellation between steps and progress reports") {
    std::size_t last = 0, total = 0;
    RunHooks hooks;
    hooks.progress = [&](std::size_t done, std::size_t all) {
        last = done;
        total = all;
    };
    run_attention(AttentionConfig{}, hooks);
    CHECK(last == attention_step_names().size());
    CHECK(total == last);
    std::atomic<bool> cancel{true};
    hooks.cancel = &cancel;
    CHECK_THROWS_AS(run_attention(AttentionConfig{}, hooks), Cancelled);
}

TEST_CASE("stats equal a naive double-precision loop with NaN and Inf inside and outside SIMD blocks") {
    Array a = make_array({5000});
    Rng rng(7, 7);
    for (float& v : a) v = 3.0f + 2.0f * rng.normal();
    a(17) = NAN;
    a(2049) = INFINITY;
    a(4999) = -INFINITY;  // the scalar tail
    Stats s = compute_stats(a);
    double sum = 0, sq = 0, lo = INFINITY, hi = -INFINITY;
    std::size_t finite = 0;
    for (float v : a)
        if (std::isfinite(v)) {
            sum += v;
            sq += double(v) * v;
            lo = std::min(lo, double(v));
            hi = std::max(hi, double(v));
            ++finite;
        }
    const double mean = sum / finite;
    CHECK(s.nan_count == 1);
    CHECK(s.inf_count == 2);
    CHECK(s.min == lo);
    CHECK(s.max == hi);
    CHECK(s.mean == doctest::Approx(mean).epsilon(1e-6));
    CHECK(s.std == doctest::Approx(std::sqrt(sq / finite - mean * mean)).epsilon(1e-5));
    const Stats none = compute_stats(xt::zeros<float>({0}));
    CHECK(none.nan_count == 0);
    CHECK(none.min == 0.0f);
}
