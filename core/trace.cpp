#include "trace.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "vmath.hpp"

namespace attnscope {

namespace {

// Running totals of the finite values seen so far.
struct StatsAccumulator {
    float lo = std::numeric_limits<float>::infinity();
    float hi = -std::numeric_limits<float>::infinity();
    double sum = 0.0, sum_sq = 0.0;
    std::size_t finite = 0, nan_count = 0, inf_count = 0;

    void add_scalar(const float* d, std::size_t n) {
        for (std::size_t i = 0; i < n; ++i) {
            const float v = d[i];
            if (std::isnan(v)) {
                ++nan_count;
            } else if (std::isinf(v)) {
                ++inf_count;
            } else {
                lo = std::min(lo, v);
                hi = std::max(hi, v);
                sum += v;
                sum_sq += static_cast<double>(v) * v;
                ++finite;
            }
        }
    }

    // A block of whole SIMD batches (core/vmath.cpp: float lanes within the block, short enough to
    // keep float sums accurate, then one double add per block). A block holding a NaN or an infinity
    // is counted value by value.
    void add_block(const float* d, std::size_t n) {
        if (vmath::finite_block_stats(d, n, lo, hi, sum, sum_sq))
            finite += n;
        else
            add_scalar(d, n);
    }
};

}  // namespace

Stats compute_stats(const Array& values) {
    constexpr std::size_t kBlock = 1024;         // a multiple of every SIMD width
    constexpr std::size_t kChunk = 64 * kBlock;  // one task; the same cuts for any number of threads
    const float* d = values.data();
    const std::size_t n = values.size(), whole = n - n % kBlock;
    // Both cores: each chunk of whole blocks gets its own totals, merged in chunk order afterwards,
    // so the result does not depend on the number of threads.
    const std::size_t chunks = (whole + kChunk - 1) / kChunk;
    std::vector<StatsAccumulator> parts(chunks);
    const std::ptrdiff_t chunk_count = static_cast<std::ptrdiff_t>(chunks);
    // With two or three chunks one thread often gets most of the work (131K of a [197, 768] step's
    // 151K values) for the cost of waking the other: the team starts from four chunks (192K+ values).
#pragma omp parallel for schedule(static) if (chunks >= 4)
    for (std::ptrdiff_t c = 0; c < chunk_count; ++c) {
        const std::size_t begin = static_cast<std::size_t>(c) * kChunk, end = std::min(whole, begin + kChunk);
        for (std::size_t i = begin; i < end; i += kBlock) parts[static_cast<std::size_t>(c)].add_block(d + i, kBlock);
    }
    StatsAccumulator acc;
    for (const auto& p : parts) {
        acc.lo = std::min(acc.lo, p.lo);
        acc.hi = std::max(acc.hi, p.hi);
        acc.sum += p.sum;
        acc.sum_sq += p.sum_sq;
        acc.finite += p.finite;
        acc.nan_count += p.nan_count;
        acc.inf_count += p.inf_count;
    }
    acc.add_scalar(d + whole, n - whole);

    Stats s;
    s.nan_count = acc.nan_count;
    s.inf_count = acc.inf_count;
    if (acc.finite) {
        s.min = acc.lo;
        s.max = acc.hi;
        s.mean = acc.sum / static_cast<double>(acc.finite);
        s.std = std::sqrt(std::max(0.0, acc.sum_sq / static_cast<double>(acc.finite) - s.mean * s.mean));
    }
    return s;
}

bool Checks::shapes_ok() const {
    for (const auto& s : shapes)
        if (!s.ok) return false;
    return true;
}

const RowSumCheck* Checks::row_sum(std::string_view step) const {
    for (const auto& r : row_sums)
        if (r.step == step) return &r;
    return nullptr;
}

bool Checks::all_ok() const {
    for (const auto& r : row_sums)
        if (!r.ok()) return false;
    return shapes_ok() && nonfinite.ok();
}

const StepDifference* Trace::difference(std::string_view step) const {
    for (const auto& d : differences)
        if (d.step == step) return &d;
    return nullptr;
}

const Step* Trace::find(std::string_view name) const {
    for (const auto& s : steps)
        if (s.name == name) return &s;
    return nullptr;
}

const Step& Trace::at(std::string_view name) const {
    if (const Step* s = find(name)) return *s;
    throw std::out_of_range("trace has no step named '" + std::string(name) + "'");
}

const std::vector<std::string>& attention_step_names() {
    static const std::vector<std::string> names = {
        "input", "qkv",  "qkv_split", "qkv_heads", "q",       "k",         "v",      "k_t", "scores",
        "scaled", "attn", "attn_drop", "context",  "context_t", "merged", "out", "out_drop"};
    return names;
}

}  // namespace attnscope
