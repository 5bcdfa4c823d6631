// Statistics of a tensor's values: min, max, mean and std over the finite values, and how many are
// NaN or infinite. Summed in float lanes per block and merged in double, in a fixed order, so the
// result does not depend on the number of threads.
#pragma once

#include <cstddef>
#include <limits>
#include <vector>

#include "tensor.hpp"

namespace attnscope {

struct Stats {
    float min = 0.0f;  // over finite values (0 when there are none)
    float max = 0.0f;
    double mean = 0.0;  // over finite values
    double std = 0.0;   // population standard deviation over finite values
    std::size_t nan_count = 0;
    std::size_t inf_count = 0;
};

Stats compute_stats(const Array& values);
Stats compute_stats(const float* values, std::size_t count);

// Stats gathered piece by piece, for an op that sees its output a row at a time (core/kernels/fused.hpp):
// add() runs of values, merge() partial totals in a fixed order (then the result does not depend on
// the number of threads), stats() at the end.
class StatsTotals {
public:
    void add(const float* values, std::size_t count);
    // `count` finite values whose min, max, sum and sum of squares were taken elsewhere (vmath's
    // fused softmax row).
    void add_finite(float lo, float hi, double sum, double sum_sq, std::size_t count);
    void merge(const StatsTotals& other);
    Stats stats() const;

private:
    void add_scalar(const float* d, std::size_t n);
    float lo_ = std::numeric_limits<float>::infinity();
    float hi_ = -std::numeric_limits<float>::infinity();
    double sum_ = 0.0, sum_sq_ = 0.0;
    std::size_t finite_ = 0, nan_count_ = 0, inf_count_ = 0;
};
Stats compute_stats(const TensorView& values);  // without gathering the view
// Stats of x [rows, parts * width] (row-major) and of each of its column blocks [rows, width], in
// one pass: qkv [B*N, 3C] and its q, k and v. Returns x's; per_part gets the blocks', in order.
Stats compute_stats_by_column_blocks(const float* x, std::size_t rows, std::size_t parts, std::size_t width,
                                     std::vector<Stats>& per_part);

}  // namespace attnscope
