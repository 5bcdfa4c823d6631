#include "stats.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "views.hpp"
#include "vmath.hpp"

namespace attnscope {

namespace {

constexpr std::size_t kBlock = 1024;  // values per block: float lane sums, then one double add
constexpr std::size_t kVmathBlock = 32;  // vmath::finite_block_stats takes whole multiples of this

// Parts merged in their order, so the result does not depend on the number of threads.
Stats finish(const std::vector<StatsTotals>& parts) {
    StatsTotals all;
    for (const auto& p : parts) all.merge(p);
    return all.stats();
}

// rows runs of `run` contiguous values; run r starts at d + offset_of(r). All threads: each chunk
// of about kChunk values gets its own totals (the same cuts for any number of threads).
template <typename OffsetOf>
std::vector<StatsTotals> stats_of_runs(const float* d, std::size_t rows, std::size_t run, OffsetOf offset_of) {
    constexpr std::size_t kChunk = 64 * kBlock;
    const std::size_t rows_per_chunk = std::max<std::size_t>(1, kChunk / std::max<std::size_t>(run, 1));
    const std::size_t chunks = (rows + rows_per_chunk - 1) / rows_per_chunk;
    std::vector<StatsTotals> parts(chunks);
    const std::ptrdiff_t chunk_count = static_cast<std::ptrdiff_t>(chunks);
    // With two or three chunks one thread often gets most of the work (131K of a [197, 768] step's
    // 151K values) for the cost of waking the other: the team starts from four chunks (192K+ values).
#pragma omp parallel for schedule(static) if (chunks >= 4)
    for (std::ptrdiff_t c = 0; c < chunk_count; ++c) {
        const std::size_t begin = static_cast<std::size_t>(c) * rows_per_chunk;
        const std::size_t end = std::min(rows, begin + rows_per_chunk);
        for (std::size_t r = begin; r < end; ++r) parts[static_cast<std::size_t>(c)].add(d + offset_of(r), run);
    }
    return parts;
}

Stats stats_of(const float* d, std::size_t n) {
    const std::size_t whole = n / kBlock;
    auto parts = stats_of_runs(d, whole, kBlock, [](std::size_t r) { return r * kBlock; });
    parts.emplace_back();
    parts.back().add(d + whole * kBlock, n - whole * kBlock);
    return finish(parts);
}

// The same elements as x in the longest contiguous runs: stats do not depend on the order of the
// values, so the axes are sorted by stride and neighbours that lie back to back are merged. q of
// qkv [B, h, N, c] (strides N*3C, c, 3C, 1) becomes [B, N, C] with runs of C = h*c values.
TensorView longest_runs(const TensorView& x) {
    std::vector<std::size_t> order;
    for (std::size_t a = 0; a < x.shape.size(); ++a)
        if (x.shape[a] != 1) order.push_back(a);
    std::stable_sort(order.begin(), order.end(), [&](std::size_t i, std::size_t j) { return x.strides[i] > x.strides[j]; });
    TensorView y = x;
    y.shape.clear();
    y.strides.clear();
    for (std::size_t a : order) {
        if (!y.shape.empty() && y.strides.back() == x.strides[a] * static_cast<std::ptrdiff_t>(x.shape[a])) {
            y.shape.back() *= x.shape[a];  // the previous axis steps over exactly this one: one axis
            y.strides.back() = x.strides[a];
        } else {
            y.shape.push_back(x.shape[a]);
            y.strides.push_back(x.strides[a]);
        }
    }
    y.axes.assign(y.shape.size(), "");
    return y;
}

}  // namespace

void StatsTotals::add_scalar(const float* d, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
        const float v = d[i];
        if (std::isnan(v)) {
            ++nan_count_;
        } else if (std::isinf(v)) {
            ++inf_count_;
        } else {
            lo_ = std::min(lo_, v);
            hi_ = std::max(hi_, v);
            sum_ += v;
            sum_sq_ += static_cast<double>(v) * v;
            ++finite_;
        }
    }
}

// Whole SIMD blocks of at most kBlock values (core/kernels/vmath.cpp: float lanes within the block, short
// enough to keep float sums accurate, then one double add per block), then the rest one by one. A
// block holding a NaN or an infinity is counted value by value.
void StatsTotals::add(const float* d, std::size_t n) {
    for (std::size_t i = 0; i < n;) {
        const std::size_t block = std::min(kBlock, (n - i) / kVmathBlock * kVmathBlock);
        if (block == 0) {
            add_scalar(d + i, n - i);
            break;
        }
        if (vmath::finite_block_stats(d + i, block, lo_, hi_, sum_, sum_sq_))
            finite_ += block;
        else
            add_scalar(d + i, block);
        i += block;
    }
}

void StatsTotals::add_finite(float lo, float hi, double sum, double sum_sq, std::size_t count) {
    if (count == 0) return;
    lo_ = std::min(lo_, lo);
    hi_ = std::max(hi_, hi);
    sum_ += sum;
    sum_sq_ += sum_sq;
    finite_ += count;
}

void StatsTotals::merge(const StatsTotals& o) {
    lo_ = std::min(lo_, o.lo_);
    hi_ = std::max(hi_, o.hi_);
    sum_ += o.sum_;
    sum_sq_ += o.sum_sq_;
    finite_ += o.finite_;
    nan_count_ += o.nan_count_;
    inf_count_ += o.inf_count_;
}

Stats StatsTotals::stats() const {
    Stats s;
    s.nan_count = nan_count_;
    s.inf_count = inf_count_;
    if (finite_) {
        s.min = lo_;
        s.max = hi_;
        s.mean = sum_ / static_cast<double>(finite_);
        s.std = std::sqrt(std::max(0.0, sum_sq_ / static_cast<double>(finite_) - s.mean * s.mean));
    }
    return s;
}

Stats compute_stats(const Array& values) { return stats_of(values.data(), values.size()); }

Stats compute_stats(const float* values, std::size_t count) { return stats_of(values, count); }

Stats compute_stats_by_column_blocks(const float* x, std::size_t rows, std::size_t parts, std::size_t width,
                                     std::vector<Stats>& per_part) {
    // Chunks of rows with their own totals per block, merged in chunk order: the same stats for
    // any number of threads.
    const std::size_t row_len = parts * width;
    const std::size_t rows_per_chunk = std::max<std::size_t>(1, 64 * kBlock / std::max<std::size_t>(row_len, 1));
    const std::size_t chunks = (rows + rows_per_chunk - 1) / rows_per_chunk;
    std::vector<StatsTotals> totals(chunks * parts);  // [chunk, part]
    const std::ptrdiff_t chunk_count = static_cast<std::ptrdiff_t>(chunks);
#pragma omp parallel for schedule(static) if (chunks >= 4)
    for (std::ptrdiff_t c = 0; c < chunk_count; ++c) {
        const std::size_t begin = static_cast<std::size_t>(c) * rows_per_chunk, end = std::min(rows, begin + rows_per_chunk);
        for (std::size_t r = begin; r < end; ++r)
            for (std::size_t p = 0; p < parts; ++p)
                totals[static_cast<std::size_t>(c) * parts + p].add(x + r * row_len + p * width, width);
    }
    StatsTotals whole;
    per_part.clear();
    for (std::size_t p = 0; p < parts; ++p) {
        StatsTotals part;
        for (std::size_t c = 0; c < chunks; ++c) part.merge(totals[c * parts + p]);
        per_part.push_back(part.stats());
        whole.merge(part);
    }
    return whole.stats();
}

Stats compute_stats(const TensorView& view) {
    if (view.shape.empty() || element_count(view.shape) == 0 || is_contiguous(view))
        return stats_of(view.data(), element_count(view.shape));
    const TensorView x = longest_runs(view);
    const std::size_t rank = x.shape.size();
    if (x.strides[rank - 1] != 1) return compute_stats(gather(x).values);
    // Runs of the last axis (q, k and v: rows of C values inside qkv's rows of 3C).
    const std::size_t run = x.shape[rank - 1], rows = element_count(x.shape) / run;
    return finish(stats_of_runs(x.data(), rows, run, [&](std::size_t r) {
        std::ptrdiff_t offset = 0;
        for (std::size_t a = rank - 1; a-- > 0;) {
            offset += x.strides[a] * static_cast<std::ptrdiff_t>(r % x.shape[a]);
            r /= x.shape[a];
        }
        return offset;
    }));
}

}  // namespace attnscope
