// The fused * self.scale + softmax pass (core/kernels/fused.hpp) gives the values of the separate
// ops, and stats and row sums that agree with a plain double loop over the values; so do the stats
// of qkv and its q, k and v taken in one pass (core/engine/trace.hpp). Against PyTorch
// the fused path is checked by the golden tests (test_pipeline: no mask, no hook, so it runs there).
#include <doctest/doctest.h>

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include <xtensor/xrandom.hpp>

#include "fused.hpp"
#include "ops.hpp"
#include "pipeline.hpp"
#include "run.hpp"

using namespace attnscope;

namespace {

Tensor random_scores(const Shape& shape, float spread, unsigned seed) {
    xt::random::seed(seed);
    Array a = xt::random::randn<float>(shape);
    a *= spread;
    return Tensor{a, {"B", "h", "N", "N'"}};
}

// min, max, mean and population std over the finite values, in double, one value at a time.
struct PlainStats {
    double min = INFINITY, max = -INFINITY, sum = 0, sum_sq = 0;
    std::size_t finite = 0, nan = 0, inf = 0;
};
PlainStats plain_stats(const Array& a) {
    PlainStats p;
    for (float v : a) {
        if (std::isnan(v)) {
            ++p.nan;
        } else if (std::isinf(v)) {
            ++p.inf;
        } else {
            p.min = std::min(p.min, double(v));
            p.max = std::max(p.max, double(v));
            p.sum += v;
            p.sum_sq += double(v) * v;
            ++p.finite;
        }
    }
    return p;
}

void check_stats(const Stats& s, const Array& values) {
    const PlainStats p = plain_stats(values);
    CHECK(s.nan_count == p.nan);
    CHECK(s.inf_count == p.inf);
    CHECK(double(s.min) == p.min);
    CHECK(double(s.max) == p.max);
    const double mean = p.sum / double(p.finite);
    const double std = std::sqrt(std::max(0.0, p.sum_sq / double(p.finite) - mean * mean));
    const double scale = std::max(std::fabs(p.min), std::fabs(p.max));
    CHECK(std::fabs(s.mean - mean) <= 1e-6 * scale);
    CHECK(std::fabs(s.std - std) <= 1e-6 * scale);
}

ScaledSoftmax on_threads(int threads, const Tensor& scores, float scale) {
    const int saved = omp_get_max_threads();
    omp_set_num_threads(threads);
    ScaledSoftmax r = scaled_softmax(scores, scale);
    omp_set_num_threads(saved);
    return r;
}

}  // namespace

TEST_CASE("the fused pass equals scale then softmax_last then sum_last value for value") {
    // Rows of 197 (not a multiple of the 8-float vectors) and of 64, several chunks of rows.
    for (const Shape& shape : {Shape{2, 12, 197, 197}, Shape{1, 3, 5, 64}}) {
        CAPTURE(shape.back());
        const Tensor scores = random_scores(shape, 40.0f, 3);
        // self.scale (its stats derived from the scores'), 1 (--no-scale), and a scale above 1
        // (its stats taken from the scaled rows themselves).
        for (const float s : {0.125f, 1.0f, 3.0f}) {
            CAPTURE(s);
            const ScaledSoftmax r = scaled_softmax(scores, s);
            const Tensor scaled = scale(scores, s), attn = softmax_last(scaled);
            CHECK(r.attn.values == attn.values);
            CHECK(r.attn_row_sums.values == sum_last(attn).values);
            CHECK(r.attn.axes == scores.axes);
            CHECK(r.attn_row_sums.axes == Axes{"B", "h", "N"});
            check_stats(r.scores_stats, scores.values);
            check_stats(r.scaled_stats, scaled.values);
            check_stats(r.attn_stats, attn.values);
        }
    }
}

TEST_CASE("the fused pass gives the same stats on one thread and on two") {
    const Tensor scores = random_scores({4, 6, 100, 100}, 10.0f, 5);
    const ScaledSoftmax one = on_threads(1, scores, 0.3f), two = on_threads(2, scores, 0.3f);
    CHECK(one.attn.values == two.attn.values);
    CHECK(one.attn_stats.mean == two.attn_stats.mean);  // the same chunks, merged in the same order
    CHECK(one.attn_stats.std == two.attn_stats.std);
    CHECK(one.scores_stats.mean == two.scores_stats.mean);
    CHECK(one.scaled_stats.std == two.scaled_stats.std);
}

TEST_CASE("after the fused pass scaled is computed on its first read") {
    AttentionConfig cfg;
    cfg.batch = 1, cfg.tokens = 20, cfg.dim = 32, cfg.heads = 2;
    const Trace t = run_attention(cfg);
    const Step& scaled = t.at("scaled");
    CHECK_FALSE(scaled.holds_values());
    CHECK(scaled.shape() == Shape{1, 2, 20, 20});
    CHECK(scaled.tensor().values == scale(t.at("scores").tensor(), attention_scale(cfg)).values);
    CHECK(scaled.holds_values());
    CHECK(scaled.axes() == t.at("scores").axes());
    CHECK(scaled.view().base.get() == &scaled.tensor());
}

TEST_CASE("the fused pass counts NaN and Inf in the scores and what softmax makes of them") {
    Tensor scores = random_scores({1, 2, 4, 40}, 1.0f, 9);
    scores.values(0, 0, 1, 7) = std::numeric_limits<float>::quiet_NaN();
    scores.values(0, 1, 2, 3) = std::numeric_limits<float>::infinity();
    const ScaledSoftmax r = scaled_softmax(scores, 0.5f);
    check_stats(r.scores_stats, scores.values);
    check_stats(r.scaled_stats, scale(scores, 0.5f).values);
    check_stats(r.attn_stats, r.attn.values);
    check_stats(scaled_softmax(scores, 2.0f).scaled_stats, scale(scores, 2.0f).values);
    CHECK(r.scores_stats.nan_count == 1);
    CHECK(r.scores_stats.inf_count == 1);
    CHECK(r.attn_stats.nan_count == 80);  // both poisoned rows are NaN after softmax
    CHECK(std::isnan(r.attn_row_sums.values(0, 0, 1)));
}

TEST_CASE("a run through the fused pass records what the step-by-step path records") {
    // A hook that edits steps makes the pipeline run scale and softmax one at a time; this one
    // changes nothing, so both traces must hold the same values and the same checks.
    AttentionConfig cfg;
    cfg.batch = 2, cfg.tokens = 33, cfg.dim = 64, cfg.heads = 4, cfg.seed = 11;
    const Trace fused = run_attention(cfg);
    RunHooks hooks;
    hooks.edit = [](const Trace&, Step&) {};
    const Trace stepwise = run_attention(cfg, hooks);
    REQUIRE(fused.steps.size() == stepwise.steps.size());
    for (std::size_t i = 0; i < fused.steps.size(); ++i) {
        const Step &a = fused.steps[i], &b = stepwise.steps[i];
        CAPTURE(a.name);
        CHECK(a.tensor().values == b.tensor().values);
        CHECK(a.stats.min == b.stats.min);
        CHECK(a.stats.max == b.stats.max);
        CHECK(a.stats.nan_count == b.stats.nan_count);
        const double scale = std::max(std::fabs(double(b.stats.min)), std::fabs(double(b.stats.max)));
        CHECK(std::fabs(a.stats.mean - b.stats.mean) <= 1e-6 * scale);
        CHECK(std::fabs(a.stats.std - b.stats.std) <= 1e-6 * scale);
    }
    const RowSumCheck &fa = fused.checks.row_sums.front(), &sa = stepwise.checks.row_sums.front();
    CHECK(fa.step == "attn");
    CHECK(fa.sums.values == sa.sums.values);
    CHECK(fa.rows == sa.rows);
    CHECK(fa.max_error == sa.max_error);
    CHECK(fa.explanation == sa.explanation);
}

TEST_CASE("the stats of qkv and of its q k and v blocks come from one pass") {
    xt::random::seed(21);
    const std::size_t rows = 300, width = 40;  // several chunks of rows
    Array x = xt::random::randn<float>({rows, 3 * width});
    x(7, width + 3) = std::numeric_limits<float>::quiet_NaN();  // in k
    x(9, 2 * width) = -std::numeric_limits<float>::infinity();  // in v
    std::vector<Stats> parts;
    const Stats whole = compute_stats_by_column_blocks(x.data(), rows, 3, width, parts);
    check_stats(whole, x);
    REQUIRE(parts.size() == 3);
    for (std::size_t p = 0; p < 3; ++p) {
        CAPTURE(p);
        Array block = Array::from_shape({rows, width});
        for (std::size_t r = 0; r < rows; ++r)
            for (std::size_t j = 0; j < width; ++j) block(r, j) = x(r, p * width + j);
        check_stats(parts[p], block);
    }
    CHECK(parts[1].nan_count == 1);
    CHECK(parts[2].inf_count == 1);
}
