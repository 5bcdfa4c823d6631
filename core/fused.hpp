// Ops that a recording runs back to back, done in one pass over their rows instead of one pass per
// op: the values are those of the separate ops (every element goes through the same arithmetic),
// and the stats and checks a recording needs are taken while each row is still in the cache.
#pragma once

#include "trace.hpp"

namespace attnscope {

// attn = (scores * scale).softmax(dim=-1), the two steps of the textbook between q @ k^T and dropout.
//   scores [..., N'] -> scaled [..., N'], attn [..., N'], attn_row_sums [...]
// Per row: scaled = scores * scale (ops.hpp scale), attn = softmax(scaled) (ops.hpp softmax_last),
// the row's sum of attn in double (ops.hpp sum_last), and the row added to each step's StatsTotals.
struct ScaledSoftmax {
    Tensor scaled;
    Tensor attn;
    Tensor attn_row_sums;
    Stats scores_stats, scaled_stats, attn_stats;
};
ScaledSoftmax scaled_softmax(const Tensor& scores, float scale);

}  // namespace attnscope
