#include "checks.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "ops.hpp"

namespace attnscope {

std::vector<ExpectedShape> expected_attention_shapes(const AttentionConfig& cfg) {
    std::vector<ExpectedShape> shapes;
    for (const StepInfo& step : attention_steps(cfg.reference))
        if (!step.only_masked || cfg.masked())
            shapes.push_back({std::string(step.name), std::string(step.shape), step_shape(step, cfg)});
    return shapes;
}

std::vector<ShapeCheck> check_shapes(const Steps& steps, const std::vector<ExpectedShape>& expected) {
    std::vector<ShapeCheck> checks;
    for (const auto& e : expected) {
        ShapeCheck check{e.step, e.formula, e.shape, {}, false};
        for (const auto& s : steps)
            if (s.name == e.step) {
                check.actual = s.shape();
                check.ok = check.actual == e.shape;
            }
        checks.push_back(check);
    }
    return checks;
}

RowSumCheck check_row_sums(const Step& probs, bool deviation_expected, float drop_p, double tolerance,
                           const std::vector<std::size_t>* valid_tokens) {
    return check_row_sums(probs.name, sum_last(probs.tensor()), deviation_expected, drop_p, tolerance, valid_tokens);
}

RowSumCheck check_row_sums(std::string step, Tensor sums, bool deviation_expected, float drop_p, double tolerance,
                           const std::vector<std::size_t>* valid_tokens) {
    RowSumCheck r;
    r.step = std::move(step);
    r.tolerance = tolerance;
    r.sums = std::move(sums);  // [B, h, N]
    const Shape s = r.sums.values.shape().size() == 3 ? shape_of(r.sums.values) : Shape{1, 1, r.sums.values.size()};
    const std::size_t heads = s[0] * s[1], rows_per_head = s[2];
    r.rows = 0;
    r.head_max_error.assign(heads, 0.0);
    r.head_failing.assign(heads, 0);
    for (std::size_t bh = 0; bh < heads; ++bh)
        for (std::size_t i = 0; i < rows_per_head; ++i) {
            const std::size_t b = bh / s[1];
            if (valid_tokens && b < valid_tokens->size() && i >= (*valid_tokens)[b]) continue;  // a padding query
            ++r.rows;
            const double err = std::fabs(static_cast<double>(r.sums.values.data()[bh * rows_per_head + i]) - 1.0);
            const bool fails = !(err <= tolerance);  // NaN fails too
            r.head_max_error[bh] = std::isnan(err) ? err : std::max(r.head_max_error[bh], err);
            r.head_failing[bh] += fails;
            r.failing_rows += fails;
            r.max_error = std::isnan(err) || std::isnan(r.max_error) ? NAN : std::max(r.max_error, err);
        }
    r.deviation_expected = deviation_expected;
    char text[512];
    if (deviation_expected) {
        std::snprintf(text, sizeof text,
                      "Expected, not a bug: in training mode dropout zeroes each weight with probability p = %.3g "
                      "and scales the kept ones by 1/(1-p) = %.4g, so a row sums to 1 only on average. "
                      "The softmax output (attn) is the step whose rows must sum to 1.",
                      drop_p, 1.0 / (1.0 - drop_p));
    } else if (r.failing_rows == 0) {
        std::snprintf(text, sizeof text, "All %zu rows sum to 1 (max |sum - 1| = %.3g <= %.0e).", r.rows, r.max_error,
                      tolerance);
    } else {
        r.cause = "softmax was not taken over the last axis, or the values were changed after it.";
        std::snprintf(text, sizeof text, "%zu of %zu rows do not sum to 1 (max |sum - 1| = %.3g > %.0e): %s",
                      r.failing_rows, r.rows, r.max_error, tolerance, r.cause.c_str());
    }
    r.explanation = text;
    return r;
}

NonFiniteCheck find_first_nonfinite(const Steps& steps) {
    NonFiniteCheck check;
    for (const auto& s : steps) {
        if (s.stats.nan_count + s.stats.inf_count == 0) continue;
        if (s.op == Op::mask && s.stats.nan_count == 0) continue;  // -inf on purpose: hidden keys
        check.first_step = s.name;
        check.nan_count = s.stats.nan_count;
        check.inf_count = s.stats.inf_count;
        check.message = "first NaN/Inf at step '" + s.name + "' (" + std::to_string(s.stats.nan_count) + " NaN, " +
                        std::to_string(s.stats.inf_count) + " Inf); every earlier step is finite";
        return check;
    }
    check.message = "no NaN or Inf in any step";
    return check;
}

void finish_checks(Trace& trace, const std::vector<ExpectedShape>& expected, std::vector<RowSumCheck> row_sums) {
    trace.checks.shapes = check_shapes(trace.steps, expected);
    for (RowSumCheck& r : row_sums) trace.checks.row_sums.push_back(std::move(r));
    trace.checks.nonfinite = find_first_nonfinite(trace.steps);
}

std::vector<ExpectedShape> expected_attention_shapes(const AttentionConfig& cfg,
                                                     const std::vector<std::string>& steps) {
    std::vector<ExpectedShape> expected;
    for (const ExpectedShape& e : expected_attention_shapes(cfg))
        if (std::find(steps.begin(), steps.end(), e.step) != steps.end()) expected.push_back(e);
    return expected;
}

}  // namespace attnscope
