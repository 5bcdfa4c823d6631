// Ops that a recording runs back to back, done in one pass over their rows instead of one pass per
// op: the values are those of the separate ops (every element goes through the same arithmetic),
// and the stats and checks a recording needs are taken while each row is still in the cache.
#pragma once

#include "stats.hpp"

namespace attnscope {

// attn = (scores * scale).softmax(dim=-1), the two steps of the textbook between q @ k^T and dropout.
//   scores [..., N'] -> attn [..., N'], attn_row_sums [...]
// Per row: scaled = scores * scale (ops.hpp scale) into a row buffer, attn = softmax(scaled)
// (ops.hpp softmax_last), the row's sum of attn in double (ops.hpp sum_last), and the row added
// to each step's StatsTotals. scaled itself is not kept: the pipeline records it as a lazy step
// that runs scale() when someone reads it. Its stats: for 0 < scale <= 1 (self.scale is
// c^-0.5; 1 with --no-scale) those of scores times scale (min and max exactly, since rounding
// keeps the order; mean and std within float rounding), else taken from the row buffer. On
// AVX-512, for 0 < scale <= 1, one call per row does the scaling (in registers, no row buffer),
// the softmax and the totals of scores and attn (vmath::scaled_softmax_row); the same attn.
struct ScaledSoftmax {
    Tensor attn;
    Tensor attn_row_sums;
    Stats scores_stats, scaled_stats, attn_stats;
};
ScaledSoftmax scaled_softmax(const Tensor& scores, float scale);

}  // namespace attnscope
