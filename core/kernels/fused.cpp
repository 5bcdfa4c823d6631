#include "fused.hpp"

#include <algorithm>
#include <limits>
#include <vector>

#include "vmath.hpp"

namespace attnscope {

namespace {

// The stats of x * s from those of x, for 0 < s <= 1: no product overflows and none of x's NaN or
// infinities changes kind, and fl(x * s) keeps the order of x, so min and max are exact.
Stats scaled_stats_of(const Stats& x, float s) {
    Stats y = x;
    y.min = x.min * s;
    y.max = x.max * s;
    y.mean = x.mean * s;
    y.std = x.std * s;
    return y;
}

}  // namespace

ScaledSoftmax scaled_softmax(const Tensor& scores, float scale) {
    const Shape xs = shape_of(scores.values);
    if (xs.empty()) throw ShapeError(Message(Msg::op_scalar_input, {{"op", "softmax"}}));
    const std::size_t n = xs.back();
    Axes row_axes = scores.axes;
    if (!row_axes.empty()) row_axes.pop_back();
    ScaledSoftmax r{
        Tensor{make_array(xs), scores.axes}, Tensor{make_array(Shape(xs.begin(), xs.end() - 1)), row_axes}, {}, {}, {}};
    const std::size_t rows = n ? scores.values.size() / n : 0;
    const bool derive_scaled = scale > 0.0f && scale <= 1.0f;
    const bool one_call = derive_scaled && vmath::has_scaled_softmax_row();  // scaled's stats are not needed

    // Rows in chunks of about 64K values, each chunk with its own totals, merged in chunk order: the
    // same stats for any number of threads.
    const std::size_t rows_per_chunk = std::max<std::size_t>(1, (std::size_t(1) << 16) / std::max<std::size_t>(n, 1));
    const std::size_t chunks = (rows + rows_per_chunk - 1) / rows_per_chunk;
    struct Totals {
        StatsTotals scores, scaled, attn;
    };
    std::vector<Totals> parts(chunks);
    const float* in = scores.values.data();
    float *attn = r.attn.values.data(), *sums = r.attn_row_sums.values.data();
    const std::ptrdiff_t chunk_count = static_cast<std::ptrdiff_t>(chunks);
#pragma omp parallel for schedule(static) if (chunks >= 2 && rows * n >= (std::size_t(1) << 15))
    for (std::ptrdiff_t c = 0; c < chunk_count; ++c) {
        Totals& t = parts[static_cast<std::size_t>(c)];
        std::vector<float> scaled(one_call ? 0 : n);  // one row of scaled, in L1
        const std::size_t begin = static_cast<std::size_t>(c) * rows_per_chunk,
                          end = std::min(rows, begin + rows_per_chunk);
        // On AVX-512 one call per row scales, softmaxes and takes the scores' and attn's totals
        // (rows of finite values; a row with a NaN or an infinity is counted value by value).
        const float inf = std::numeric_limits<float>::infinity();
        vmath::RowTotals scores_rows{inf, -inf, 0.0, 0.0}, attn_rows{inf, -inf, 0.0, 0.0};
        std::size_t scores_finite = 0, attn_finite = 0;
        for (std::size_t row = begin; row < end; ++row) {
            const std::size_t at = row * n;
            if (one_call) {
                const auto [scores_ok, attn_ok] =
                    vmath::scaled_softmax_row(in + at, scale, attn + at, n, scores_rows, attn_rows);
                scores_ok ? void(scores_finite += n) : t.scores.add(in + at, n);
                attn_ok ? void(attn_finite += n) : t.attn.add(attn + at, n);
            } else {
                vmath::scale(in + at, scale, scaled.data(), n);   // * self.scale
                vmath::softmax_row(scaled.data(), attn + at, n);  // .softmax(dim=-1)
                t.scores.add(in + at, n);
                if (!derive_scaled) t.scaled.add(scaled.data(), n);
                t.attn.add(attn + at, n);
            }
            sums[row] = static_cast<float>(vmath::sum(attn + at, n));
        }
        t.scores.add_finite(scores_rows.lo, scores_rows.hi, scores_rows.sum, scores_rows.sum_sq, scores_finite);
        t.attn.add_finite(attn_rows.lo, attn_rows.hi, attn_rows.sum, attn_rows.sum_sq, attn_finite);
    }
    StatsTotals scores_all, scaled_all, attn_all;
    for (const Totals& t : parts) {
        scores_all.merge(t.scores);
        scaled_all.merge(t.scaled);
        attn_all.merge(t.attn);
    }
    r.scores_stats = scores_all.stats();
    r.scaled_stats = derive_scaled ? scaled_stats_of(r.scores_stats, scale) : scaled_all.stats();
    r.attn_stats = attn_all.stats();
    return r;
}

}  // namespace attnscope
