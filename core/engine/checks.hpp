// Checks run over a recorded trace: shapes against their formulas, softmax row sums, and the
// first step where a NaN or Inf appeared.
#pragma once

#include <string>
#include <vector>

#include "trace.hpp"

namespace attnscope {

// The shape every pinned step must have for this config, with its formula ("[B, N, 3*C]").
struct ExpectedShape {
    std::string step;
    std::string formula;
    Shape shape;
};
std::vector<ExpectedShape> expected_attention_shapes(const AttentionConfig& config);

// The shapes of the textbook steps that a path records (those named in `steps`), e.g. flash keeps
// input .. v and context .. out_drop.
std::vector<ExpectedShape> expected_attention_shapes(const AttentionConfig& config,
                                                     const std::vector<std::string>& steps);

std::vector<ShapeCheck> check_shapes(const Steps& steps, const std::vector<ExpectedShape>& expected);

// probs [B, h, N, N']: every row should sum to 1. deviation_expected marks training-mode dropout.
// valid_tokens (per batch item, or null): only the rows of valid queries are checked (the rows of
// padding queries are discarded downstream; see core/paths/beyond.hpp for the masking convention).
RowSumCheck check_row_sums(const Step& probs, bool deviation_expected, float drop_p, double tolerance = 1e-5,
                           const std::vector<std::size_t>* valid_tokens = nullptr);
// The same check from sums [B, h, N] already taken (core/kernels/fused.hpp) of the step named `step`.
RowSumCheck check_row_sums(std::string step, Tensor sums, bool deviation_expected, float drop_p,
                           double tolerance = 1e-5, const std::vector<std::size_t>* valid_tokens = nullptr);

// The -inf a mask step writes on purpose are not reported (NaN there still is).
NonFiniteCheck find_first_nonfinite(const Steps& steps);

// The checks a run ends with, over the steps it recorded: every step's shape against `expected`,
// the row sums its softmax steps took (added to those already there), and the first NaN or Inf.
void finish_checks(Trace& trace, const std::vector<ExpectedShape>& expected, std::vector<RowSumCheck> row_sums = {});

}  // namespace attnscope
