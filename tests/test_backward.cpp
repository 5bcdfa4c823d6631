// The backward pass: every op's backward against central finite differences, the whole layer's
// gradients against PyTorch autograd (fixtures from tools/make_grad_golden.py), the
// softmax-saturation demo, and `attnscope run --grad-output`.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>

#include <nlohmann/json.hpp>

#include "backward.hpp"
#include "io.hpp"
#include "ops.hpp"
#include "pipeline.hpp"
#include "random.hpp"
#include "run.hpp"
#include "run_attnscope.hpp"
#include "weights.hpp"

using namespace attnscope;
using attnscope::testing::run_attnscope;
namespace fs = std::filesystem;

namespace {

Array random_array(const Shape& shape, std::uint64_t stream, float scale = 1.0f) {
    Array a = make_array(shape);
    Rng rng(1234, stream);
    for (float& v : a) v = rng.normal() * scale;
    return a;
}

// loss = sum(f() * G), accumulated in double.
double loss_of(const Tensor& y, const Array& G) {
    REQUIRE(shape_of(y.values) == shape_of(G));
    double sum = 0.0;
    for (std::size_t i = 0; i < G.size(); ++i) sum += double(y.values.data()[i]) * G.data()[i];
    return sum;
}

// Central differences of loss = sum(forward() * G) with respect to every element of *wrt, against
// the backward's gradient. Returns max |numeric - analytic| / max(1, max |analytic|).
// eps = 1e-2 in float32: truncation O(eps^2) and rounding O(1e-7 / eps) both stay near 1e-4.
double fd_error(const std::function<Tensor()>& forward, const Array& G, Array* wrt, const Array& analytic) {
    REQUIRE(shape_of(*wrt) == shape_of(analytic));
    const float eps = 1e-2f;
    double worst = 0.0, scale = 1.0;
    for (const float a : analytic) scale = std::max(scale, std::fabs(double(a)));
    for (std::size_t i = 0; i < wrt->size(); ++i) {
        const float saved = wrt->data()[i];
        wrt->data()[i] = saved + eps;
        const double up = loss_of(forward(), G);
        wrt->data()[i] = saved - eps;
        const double down = loss_of(forward(), G);
        wrt->data()[i] = saved;
        const double numeric = (up - down) / (2.0 * double(eps));
        worst = std::max(worst, std::fabs(numeric - analytic.data()[i]) / scale);
    }
    return worst;
}

constexpr double kFdTolerance = 2e-4;  // relative to max(1, max |grad|); measured at most 1.9e-5

}  // namespace

// ---- every op's backward against finite differences -------------------------------------------
TEST_CASE("finite differences: linear backward gives grad_x grad_weight and grad_bias") {
    Tensor x{random_array({2, 3, 4}, 1), {"B", "N", "C"}};
    Array w = random_array({5, 4}, 2, 0.5f), b = random_array({5}, 3);
    const Array G = random_array({2, 3, 5}, 4);
    auto f = [&] { return linear(x, w, &b, "D"); };
    const LinearGrads g = linear_backward(x, w, true, Tensor{G, {"B", "N", "D"}});
    CHECK(g.x.axes == Axes{"B", "N", "C"});
    CHECK(fd_error(f, G, &x.values, g.x.values) < kFdTolerance);
    CHECK(fd_error(f, G, &w, g.weight) < kFdTolerance);
    CHECK(fd_error(f, G, &b, g.bias) < kFdTolerance);
    CHECK(linear_backward(x, w, false, Tensor{G, {}}).bias.size() == 0);
    CHECK_THROWS_AS(linear_backward(x, w, true, Tensor{random_array({2, 3, 4}, 5), {}}), ShapeError);
}

TEST_CASE("finite differences: reshape permute select and transpose backward") {
    Tensor x{random_array({2, 3, 4}, 6), {"B", "N", "C"}};
    {
        const Array G = random_array({6, 4}, 7);
        auto f = [&] { return reshape(x, {6, 4}, {"BN", "C"}); };
        const Tensor g = reshape_backward(Tensor{G, {}}, x);
        CHECK(g.axes == x.axes);
        CHECK(fd_error(f, G, &x.values, g.values) < kFdTolerance);
    }
    {
        const Array G = random_array({4, 2, 3}, 8);
        auto f = [&] { return permute(x, {2, 0, 1}); };
        const Tensor g = permute_backward(Tensor{G, {}}, {2, 0, 1});
        CHECK(shape_of(g.values) == Shape{2, 3, 4});
        CHECK(fd_error(f, G, &x.values, g.values) < kFdTolerance);
    }
    for (std::size_t axis = 0; axis < 3; ++axis) {
        Shape ys = {2, 3, 4};
        ys.erase(ys.begin() + static_cast<std::ptrdiff_t>(axis));
        const Array G = random_array(ys, 9 + axis);
        auto f = [&] { return select(x, axis, 1); };
        const Tensor g = select_backward(Tensor{G, {}}, x, axis, 1);
        CHECK(fd_error(f, G, &x.values, g.values) < kFdTolerance);
    }
    {
        const Array G = random_array({2, 4, 3}, 12);
        auto f = [&] { return transpose(x, 1, 2); };
        const Tensor g = transpose_backward(Tensor{G, {}}, 1, 2);
        CHECK(fd_error(f, G, &x.values, g.values) < kFdTolerance);
    }
}

TEST_CASE("finite differences: matmul backward gives both operands' gradients") {
    Tensor a{random_array({2, 2, 3, 4}, 13), {"B", "h", "N", "c"}};
    Tensor b{random_array({2, 2, 4, 5}, 14), {"B", "h", "c", "N'"}};
    const Array G = random_array({2, 2, 3, 5}, 15);
    auto f = [&] { return matmul(a, b, {"B", "h", "N", "N'"}); };
    const MatmulGrads g = matmul_backward(a, b, Tensor{G, {}});
    CHECK(g.a.axes == a.axes);
    CHECK(g.b.axes == b.axes);
    CHECK(fd_error(f, G, &a.values, g.a.values) < kFdTolerance);
    CHECK(fd_error(f, G, &b.values, g.b.values) < kFdTolerance);
}

TEST_CASE("finite differences: scale softmax and sum backward") {
    Tensor x{random_array({2, 3, 5}, 16, 2.0f), {"h", "N", "N'"}};
    const Array G = random_array({2, 3, 5}, 17);
    {
        auto f = [&] { return scale(x, 0.37f); };
        CHECK(fd_error(f, G, &x.values, scale_backward(Tensor{G, {}}, 0.37f).values) < kFdTolerance);
    }
    {
        auto f = [&] { return softmax_last(x); };
        const Tensor g = softmax_last_backward(softmax_last(x), Tensor{G, {}});
        CHECK(fd_error(f, G, &x.values, g.values) < kFdTolerance);
    }
    {
        const Array Gs = random_array({2, 3}, 18);
        auto f = [&] { return sum_last(x); };
        CHECK(fd_error(f, Gs, &x.values, sum_last_backward(Tensor{Gs, {}}, 5).values) < kFdTolerance);
    }
}

TEST_CASE("finite differences: dropout backward draws the forward's mask again") {
    Tensor x{random_array({3, 40}, 19), {"N", "C"}};
    const Array G = random_array({3, 40}, 20);
    auto f = [&] {
        Rng rng(7, kAttnDrop);
        return dropout(x, 0.3f, true, rng);
    };
    Rng rng(7, kAttnDrop);
    const Tensor g = dropout_backward(Tensor{G, {}}, 0.3f, true, rng);
    CHECK(fd_error(f, G, &x.values, g.values) < kFdTolerance);
    // The mask is really used: some gradients are zero, the rest are G / (1 - p).
    std::size_t zeros = 0;
    for (std::size_t i = 0; i < G.size(); ++i) {
        if (g.values.data()[i] == 0.0f) ++zeros;
        else CHECK(g.values.data()[i] == doctest::Approx(G.data()[i] / 0.7f));
    }
    CHECK(zeros > 10);
    CHECK(zeros < 70);
    Rng eval_rng(7, kAttnDrop);
    CHECK(dropout_backward(Tensor{G, {}}, 0.3f, false, eval_rng).values == G);
}

TEST_CASE("finite differences: layer_norm gelu and add backward") {
    Tensor x{random_array({3, 6}, 21, 1.5f), {"N", "C"}};
    Array w = random_array({6}, 22), b = random_array({6}, 23);
    const Array G = random_array({3, 6}, 24);
    {
        auto f = [&] { return layer_norm(x, w, b, 1e-6f); };
        const LayerNormGrads g = layer_norm_backward(x, w, 1e-6f, Tensor{G, {}});
        CHECK(fd_error(f, G, &x.values, g.x.values) < kFdTolerance);
        CHECK(fd_error(f, G, &w, g.weight) < kFdTolerance);
        CHECK(fd_error(f, G, &b, g.bias) < kFdTolerance);
    }
    {
        auto f = [&] { return gelu(x); };
        CHECK(fd_error(f, G, &x.values, gelu_backward(x, Tensor{G, {}}).values) < kFdTolerance);
    }
    {
        Tensor pos{random_array({1, 6}, 25), {"1", "C"}};
        auto f = [&] { return add(x, pos); };
        const AddGrads g = add_backward(pos, Tensor{G, {}});
        CHECK(fd_error(f, G, &x.values, g.a.values) < kFdTolerance);
        CHECK(fd_error(f, G, &pos.values, g.b.values) < kFdTolerance);
    }
}

// ---- the whole layer against PyTorch autograd -------------------------------------------------
namespace {

const fs::path kGradGolden = fs::path(ATTNSCOPE_TEST_DATA) / "grad";

// |ours - torch| <= kGoldenTolerance * max(1, max |torch| over the tensor).
constexpr double kGoldenTolerance = 1e-5;

double max_error(const Array& ours, const Array& torch) {
    REQUIRE(shape_of(ours) == shape_of(torch));
    double worst = 0.0, scale = 1.0;
    for (const float t : torch) scale = std::max(scale, std::fabs(double(t)));
    for (std::size_t i = 0; i < ours.size(); ++i)
        worst = std::max(worst, std::fabs(double(ours.data()[i]) - torch.data()[i]));
    return worst / scale;
}

struct GradCase {
    nlohmann::json meta;
    Trace trace;
};

GradCase run_grad_case(const fs::path& dir) {
    std::ifstream in(dir / "meta.json");
    REQUIRE(in.good());
    GradCase g{nlohmann::json::parse(in), {}};
    AttentionConfig cfg;
    cfg.batch = g.meta["batch"];
    cfg.tokens = g.meta["tokens"];
    cfg.dim = g.meta["dim"];
    cfg.heads = g.meta["heads"];
    cfg.qkv_bias = g.meta["qkv_bias"];
    cfg.seed = g.meta["seed"];
    cfg.scaled = g.meta["scaled"];
    cfg.training = g.meta["training"];
    cfg.attn_drop = g.meta["attn_drop"];
    cfg.proj_drop = g.meta["proj_drop"];
    cfg.causal = g.meta.value("causal", false);
    cfg.valid_tokens = g.meta.value("valid_tokens", std::vector<std::size_t>{});
    const AttentionWeights w = load_attention_weights((dir / "weights.safetensors").string(), std::nullopt, cfg.dim);
    const Tensor x{read_npy((dir / "input.npy").string()), {"B", "N", "C"}};
    const Tensor G{read_npy((dir / "G.npy").string()), {"B", "N", "C"}};
    g.trace = run_attention(cfg, w, x);
    g.trace.gradients = std::make_shared<const Gradients>(run_attention_backward(g.trace, w, G, "G.npy"));
    return g;
}

std::vector<fs::path> grad_case_dirs() {
    std::vector<fs::path> dirs;
    for (const auto& e : fs::directory_iterator(kGradGolden))
        if (e.is_directory()) dirs.push_back(e.path());
    std::sort(dirs.begin(), dirs.end());
    return dirs;
}

}  // namespace

TEST_CASE("autograd golden: every grad step and parameter gradient equals PyTorch within 1e-5") {
    const auto dirs = grad_case_dirs();
    REQUIRE(dirs.size() >= 5);  // no bias, bias, dropout, saturated, masked
    for (const auto& dir : dirs) {
        CAPTURE(dir.filename().string());
        const GradCase g = run_grad_case(dir);
        const Gradients& grads = *g.trace.gradients;
        REQUIRE(grads.steps.size() == g.trace.steps.size());  // attention_step_names(), + masked with a mask
        double case_worst = 0.0;
        for (const Step& step : g.trace.steps) {
            const std::string& name = step.name;
            CAPTURE(name);
            const GradStep* s = grads.find(name);
            REQUIRE(s != nullptr);
            CHECK(s->name == "grad_" + name);
            CHECK(s->tensor.axes == g.trace.at(name).axes());
            const double e = max_error(s->tensor.values, read_npy((dir / ("grad_" + name + ".npy")).string()));
            CHECK(e <= kGoldenTolerance);
            case_worst = std::max(case_worst, e);
        }
        std::vector<std::string> params = {"qkv.weight", "proj.weight", "proj.bias"};
        if (g.meta["qkv_bias"]) params.push_back("qkv.bias");
        CHECK(grads.params.size() == params.size());
        for (const auto& p : params) {
            CAPTURE(p);
            const ParamGrad* pg = grads.param(p);
            REQUIRE(pg != nullptr);
            const double e = max_error(pg->values, read_npy((dir / ("grad_" + p + ".npy")).string()));
            CHECK(e <= kGoldenTolerance);
            case_worst = std::max(case_worst, e);
        }
        MESSAGE(dir.filename().string() << ": max relative error " << case_worst);
    }
}

TEST_CASE("autograd golden: the unscaled case is saturated and its grad_scores nearly vanish") {
    const GradCase g = run_grad_case(kGradGolden / "saturated_noscale_b1_n4_c48_h1");
    CHECK(g.trace.at("attn").stats.max > 0.999f);
    const double scores = g.trace.gradients->find("scores")->norm;
    const double attn = g.trace.gradients->find("attn")->norm;
    CHECK(scores < 0.03 * attn);  // softmax passes almost nothing back (measured 0.014)
    CHECK(scores == doctest::Approx(double(g.meta["grad_scores_norm"])).epsilon(1e-3));
}

// ---- the saturation demo on the engine's own config ------------------------------------------
TEST_CASE("saturation demo: without the scale a larger C makes attention one-hot and grad_scores vanish") {
    AttentionConfig cfg;
    cfg.batch = 1;
    cfg.tokens = 8;
    cfg.heads = 1;
    auto run = [&](std::size_t dim, bool scaled) {
        cfg.dim = dim;
        cfg.scaled = scaled;
        return run_attention_with_gradients(cfg);
    };
    const Trace scaled = run(512, true), unscaled_small = run(16, false), unscaled = run(512, false);
    CHECK(scaled.at("scaled").code == "* self.scale");
    CHECK(unscaled.at("scaled").code.find("scale off") != std::string::npos);
    CHECK(unscaled.at("scaled").tensor().values == unscaled.at("scores").tensor().values);
    CHECK(scaled.at("attn").stats.max < 0.9f);
    CHECK(unscaled.at("attn").stats.max > 0.99f);
    // What softmax passes back: ||grad_scaled|| / ||grad_attn||.
    auto passed_back = [](const Trace& t) { return t.gradients->find("scaled")->norm / t.gradients->find("attn")->norm; };
    const double p_scaled = passed_back(scaled), p_small = passed_back(unscaled_small), p_unscaled = passed_back(unscaled);
    const double g_scaled = scaled.gradients->find("scores")->norm, g_unscaled = unscaled.gradients->find("scores")->norm;
    MESSAGE("softmax passes back: scaled C=512 " << p_scaled << ", unscaled C=16 " << p_small << ", unscaled C=512 "
                                                 << p_unscaled << "; ||grad_scores|| scaled " << g_scaled
                                                 << ", unscaled " << g_unscaled);
    CHECK(p_unscaled < 0.3 * p_scaled);  // measured 0.24
    CHECK(p_unscaled < 0.3 * p_small);   // measured 0.23
    CHECK(unscaled.gradients->saturated_rows > scaled.gradients->saturated_rows);
    CHECK(unscaled.gradients->saturated_rows * 2 >= unscaled.gradients->attn_rows);  // measured 4 of 8
    // A saturated row passes (almost) nothing to its scores: per row, far less than the others.
    const Gradients& u = *unscaled.gradients;
    const double per_saturated = u.saturated_grad_norm / std::sqrt(double(u.saturated_rows));
    const double per_other = u.other_grad_norm / std::sqrt(double(u.attn_rows - u.saturated_rows));
    MESSAGE("unscaled C=512: gradient per saturated row " << per_saturated << ", per other row " << per_other);
    CHECK(per_saturated < 0.05 * per_other);
}

TEST_CASE("backward refuses a G of the wrong shape and an incomplete trace") {
    AttentionConfig cfg;
    cfg.batch = 1;
    cfg.tokens = 3;
    cfg.dim = 8;
    cfg.heads = 2;
    const AttentionWeights w = default_weights(cfg);
    Trace t = run_attention(cfg, w, default_input(cfg));
    CHECK_THROWS_WITH_AS(run_attention_backward(t, w, Tensor{make_array({1, 3, 4}), {}}),
                         "grad_output has shape [1, 3, 4], expected out's shape [B, N, C] = [1, 3, 8]", ShapeError);
    t.steps.pop_back();
    CHECK_THROWS_AS(run_attention_backward(t, w, default_grad_output(cfg)), ConfigError);
}

TEST_CASE("default G is seeded N(0 1) and the progress hook sees both passes") {
    AttentionConfig cfg;
    cfg.batch = 1;
    cfg.tokens = 4;
    cfg.dim = 16;
    cfg.heads = 2;
    CHECK(default_grad_output(cfg).values == default_grad_output(cfg).values);
    AttentionConfig other = cfg;
    other.seed = 1;
    CHECK(default_grad_output(cfg).values != default_grad_output(other).values);
    std::size_t last_done = 0, last_total = 0;
    RunHooks hooks;
    hooks.progress = [&](std::size_t done, std::size_t total) {
        last_done = done;
        last_total = total;
    };
    const Trace t = run_attention_with_gradients(cfg, hooks);
    CHECK(last_done == last_total);
    CHECK(last_total == 2 * attention_step_names().size());
    CHECK(t.gradients->find("out_drop")->tensor.values == default_grad_output(cfg).values);
    CHECK(t.gradients->grad_output_source == "N(0, 1) from seed 0");
}

// ---- the command line -------------------------------------------------------------------------
TEST_CASE("cli: run --grad-output dumps grad_step and grad_param files equal to the engine's") {
    const fs::path dir = fs::temp_directory_path() / ("attnscope_grad_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    AttentionConfig cfg;
    cfg.batch = 1;
    cfg.tokens = 3;
    cfg.dim = 8;
    cfg.heads = 2;
    cfg.qkv_bias = true;
    const Array G = random_array({1, 3, 8}, 30);
    write_npy((dir / "G.npy").string(), G);
    const auto r = run_attnscope("run -B 1 -N 3 -C 8 --heads 2 --qkv-bias --grad-output '" + (dir / "G.npy").string() +
                                 "' --dump '" + (dir / "dump").string() + "'");
    CHECK(r.status == 0);
    CHECK(r.out.find("gradients of sum(out_drop * G)") != std::string::npos);
    const AttentionWeights w = default_weights(cfg);
    Trace t = run_attention(cfg, w, default_input(cfg));
    const Gradients g = run_attention_backward(t, w, Tensor{G, {"B", "N", "C"}});
    for (const auto& s : g.steps) CHECK(read_npy((dir / "dump" / (s.name + ".npy")).string()) == s.tensor.values);
    for (const auto& p : g.params) CHECK(read_npy((dir / "dump" / ("grad_" + p.name + ".npy")).string()) == p.values);
    CHECK(fs::exists(dir / "dump" / "grad_qkv.bias.npy"));
    std::ifstream in(dir / "dump" / "trace.json");
    const auto j = nlohmann::json::parse(in);
    CHECK(j["gradients"]["step_norms"].size() == attention_step_names().size());
    CHECK(j["config"]["scaled"] == true);

    // --grad without a file: the seeded G; no qkv.bias gradient without a bias.
    const auto seeded = run_attnscope("run -B 1 -N 3 -C 8 --heads 2 --no-scale --grad --dump '" +
                                      (dir / "seeded").string() + "'");
    CHECK(seeded.status == 0);
    CHECK(fs::exists(dir / "seeded" / "grad_scores.npy"));
    CHECK(!fs::exists(dir / "seeded" / "grad_qkv.bias.npy"));
    CHECK(read_npy((dir / "seeded" / "scaled.npy").string()) == read_npy((dir / "seeded" / "scores.npy").string()));

    // With a mask the dump has grad_masked; the flash path has no backward: exit 2, nothing written.
    const auto masked = run_attnscope("run -B 1 -N 3 -C 8 --heads 2 --causal --grad --dump '" +
                                      (dir / "masked").string() + "'");
    CHECK(masked.status == 0);
    CHECK(fs::exists(dir / "masked" / "grad_masked.npy"));
    const auto flash = run_attnscope("run -B 1 -N 3 -C 8 --heads 2 --flash --grad --dump '" +
                                     (dir / "flash").string() + "'");
    CHECK(flash.status == 2);
    CHECK(flash.err.find("--grad") != std::string::npos);
    CHECK(!fs::exists(dir / "flash"));

    // A G of the wrong shape: one line, exit 2, nothing written.
    write_npy((dir / "bad.npy").string(), random_array({1, 3, 7}, 31));
    const auto bad = run_attnscope("run -B 1 -N 3 -C 8 --heads 2 --grad-output '" + (dir / "bad.npy").string() +
                                   "' --dump '" + (dir / "bad").string() + "'");
    CHECK(bad.status == 2);
    CHECK(bad.err.find("--grad-output") != std::string::npos);
    CHECK(bad.err.find("expected out's shape [B, N, C] = [1, 3, 8]") != std::string::npos);
    CHECK(std::count(bad.err.begin(), bad.err.end(), '\n') == 1);
    CHECK(!fs::exists(dir / "bad" / "trace.json"));
    fs::remove_all(dir);
}
