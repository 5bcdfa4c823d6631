// vmath's AVX-512 kernels whose math must be inlined to pay: softmax's exp and GELU's erfc from
// xsimd's avx512f batch, and the fused pass's softmax row that also takes the stats of its input
// and output (core/kernels/fused.cpp). xsimd picks its instructions from the compiler's target flags, so
// this file alone is compiled with AVX-512 enabled (core/CMakeLists.txt); it runs only where
// vmath::avx512() says the CPU can. Nothing else may be compiled here: an inline function emitted
// in this file could be picked by the linker for the rest of the program, which must run without
// AVX-512 (a test in tests/CMakeLists.txt checks that every weak function this object defines
// belongs to xsimd's AVX types).
#include "vmath_avx512.hpp"

#if defined(__AVX512F__)  // x86-64 (core/CMakeLists.txt); elsewhere this file is empty
#include <xsimd/xsimd.hpp>

// GCC 12's AVX-512 intrinsics, which xsimd's avx512f batch uses, warn of uninitialized values inside
// the header (GCC bug 105593; the values are the "undefined" upper lanes of a cast). The warnings are
// off for this file only.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <cmath>
#include <limits>

namespace attnscope::vmath::avx512_kernels {

namespace {

using batch = xsimd::batch<float, xsimd::avx512f>;

// The first `rem` of 16 lanes (0 < rem < 16).
__mmask16 first_lanes(std::size_t rem) { return static_cast<__mmask16>((1u << rem) - 1); }

// The lane that `first(a, b)` (a comparison) puts ahead of all others: the largest or the smallest.
template <typename First>
float lanes_pick(batch v, First first) {
    alignas(64) float lanes[16];
    v.store_aligned(lanes);
    float m = lanes[0];
    for (int i = 1; i < 16; ++i) m = first(lanes[i], m) ? lanes[i] : m;
    return m;
}
float lanes_max(batch v) {
    return lanes_pick(v, [](float a, float b) { return a > b; });
}
float lanes_min(batch v) {
    return lanes_pick(v, [](float a, float b) { return a < b; });
}

float lanes_sum(batch v) {
    const __m512 x = v;
    const __m256 lo = _mm512_castps512_ps256(x);
    const __m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1));
    return xsimd::hadd(xsimd::batch<float, xsimd::avx2>(lo) + xsimd::batch<float, xsimd::avx2>(hi));
}

// Min, max, sum and sum of squares of the values a row's loop adds, 16 lanes wide: min and max per
// lane, the sums in float lanes for at most kFlushVectors adds a lane (then into double, as
// vmath::finite_block_stats keeps blocks short enough for float sums).
class LaneStats {
public:
    void add(batch v) {
        lo_ = xsimd::min(lo_, v);
        hi_ = xsimd::max(hi_, v);
        fold(v);
    }
    // Lanes outside `lanes` are ignored (v must be 0 there).
    void add(batch v, __mmask16 lanes) {
        lo_ = _mm512_mask_min_ps(lo_, lanes, lo_, v);
        hi_ = _mm512_mask_max_ps(hi_, lanes, hi_, v);
        fold(v);
    }
    // Adds the totals to `t`; false, leaving `t` as it was, when a value was NaN or infinite (a
    // lane's sum is then NaN or infinite for good) or the float sums overflowed.
    bool finish(RowTotals& t) {
        flush();
        if (!std::isfinite(sum_) || !std::isfinite(sum_sq_)) return false;
        const float lo = lanes_min(lo_), hi = lanes_max(hi_);
        t.lo = lo < t.lo ? lo : t.lo;
        t.hi = hi > t.hi ? hi : t.hi;
        t.sum += sum_;
        t.sum_sq += sum_sq_;
        return true;
    }

private:
    static constexpr int kFlushVectors = 64;  // 1024 values
    void fold(batch v) {
        s_ += v;
        q_ = xsimd::fma(v, v, q_);
        if (++adds_ == kFlushVectors) flush();
    }
    void flush() {
        sum_ += lanes_sum(s_);
        sum_sq_ += lanes_sum(q_);
        s_ = q_ = batch(0.0f);
        adds_ = 0;
    }
    batch lo_ = batch(std::numeric_limits<float>::infinity()), hi_ = batch(-std::numeric_limits<float>::infinity());
    batch s_ = batch(0.0f), q_ = batch(0.0f);
    int adds_ = 0;
    double sum_ = 0.0, sum_sq_ = 0.0;
};

// out = exp(x - max) / sum with x = in * scale when Scaled, in itself otherwise: the max, then exp
// and the sum, then the scaling; the partial last vector with masked loads and stores (lanes past
// n read as -inf for the max and add 0 to the sum). With stats, pass 1 also folds in's values into
// in_stats and pass 3 out's into out_stats.
template <bool Scaled, bool WithStats>
void softmax_row_impl(const float* in, float scale, float* out, std::size_t n, LaneStats* in_stats,
                      LaneStats* out_stats) {
    const std::size_t whole = n & ~std::size_t(15), rem = n - whole;
    const __mmask16 tail = rem ? first_lanes(rem) : 0;
    const batch s(scale), minus_inf(-std::numeric_limits<float>::infinity());
    const auto x_of = [&](batch v) { return Scaled ? v * s : v; };  // fl(in * scale), as vmath::scale
    // The row's max (exact in any order). A NaN may or may not survive max; the sum below is NaN anyway.
    batch m0 = minus_inf, m1 = minus_inf;
    std::size_t j = 0;
    for (; j + 32 <= whole; j += 32) {
        const batch a = batch::load_unaligned(in + j), b = batch::load_unaligned(in + j + 16);
        m0 = xsimd::max(m0, x_of(a));
        m1 = xsimd::max(m1, x_of(b));
        if (WithStats) in_stats->add(a), in_stats->add(b);
    }
    if (j < whole) {
        const batch a = batch::load_unaligned(in + j);
        m0 = xsimd::max(m0, x_of(a));
        if (WithStats) in_stats->add(a);
    }
    if (rem) {
        const batch a(_mm512_maskz_loadu_ps(tail, in + whole));
        m1 = _mm512_mask_max_ps(m1, tail, m1, x_of(a));
        if (WithStats) in_stats->add(a, tail);
    }
    const batch row_max(lanes_max(xsimd::max(m0, m1)));
    // exp(x - max) and its sum. A row of -inf (fully masked) or +inf makes x - max NaN, as in PyTorch.
    batch sum(0.0f);
    for (j = 0; j < whole; j += 16) {
        const batch e = xsimd::exp(x_of(batch::load_unaligned(in + j)) - row_max);
        e.store_unaligned(out + j);
        sum += e;
    }
    if (rem) {
        const batch x = x_of(batch(_mm512_maskz_loadu_ps(tail, in + whole)));
        const batch e(_mm512_maskz_mov_ps(tail, xsimd::exp(x - row_max)));  // lanes past n: 0
        _mm512_mask_storeu_ps(out + whole, tail, e);
        sum += e;
    }
    const batch inv(1.0f / lanes_sum(sum));
    for (j = 0; j < whole; j += 16) {
        const batch y = batch::load_unaligned(out + j) * inv;
        y.store_unaligned(out + j);
        if (WithStats) out_stats->add(y);
    }
    if (rem) {
        const batch y = batch(_mm512_maskz_loadu_ps(tail, out + whole)) * inv;
        _mm512_mask_storeu_ps(out + whole, tail, y);
        if (WithStats) out_stats->add(y, tail);
    }
}

}  // namespace

void softmax_row(const float* in, float* out, std::size_t n) {
    softmax_row_impl<false, false>(in, 1.0f, out, n, nullptr, nullptr);
}

std::pair<bool, bool> scaled_softmax_row(const float* in, float scale, float* out, std::size_t n, RowTotals& in_totals,
                                         RowTotals& out_totals) {
    LaneStats in_stats, out_stats;
    softmax_row_impl<true, true>(in, scale, out, n, &in_stats, &out_stats);
    return {in_stats.finish(in_totals), out_stats.finish(out_totals)};
}

float exp_shifted(const float* x, float shift, float mul, float* out, std::size_t n) {
    const std::size_t whole = n & ~std::size_t(15), rem = n - whole;
    const batch s(shift), m(mul);
    batch sum(0.0f);
    for (std::size_t j = 0; j < whole; j += 16) {
        const batch e = xsimd::exp(batch::load_unaligned(x + j) - s);
        (e * m).store_unaligned(out + j);
        sum += e;
    }
    if (rem) {
        const __mmask16 tail = first_lanes(rem);
        const batch e(
            _mm512_maskz_mov_ps(tail, xsimd::exp(batch(_mm512_maskz_loadu_ps(tail, x + whole)) - s)));  // past n: 0
        _mm512_mask_storeu_ps(out + whole, tail, e * m);
        sum += e;
    }
    return lanes_sum(sum);
}

// 0.5 * x * erfc(-x / sqrt(2)), flushed to 0 where erfc < 2^-53: vmath.cpp's gelu8 on 16 lanes with
// xsimd's erfc.
void gelu(const float* x, float* out, std::size_t n) {
    const auto gelu16 = [](batch v) {
        const batch e = xsimd::erfc(v * batch(-0.70710678118654752f));
        const batch one_plus_erf = xsimd::select(e >= batch(0x1p-53f), e, batch(0.0f));
        return batch(0.5f) * v * one_plus_erf;
    };
    std::size_t i = 0;
    for (; i + 16 <= n; i += 16) gelu16(batch::load_unaligned(x + i)).store_unaligned(out + i);
    if (i < n) {
        const __mmask16 tail = first_lanes(n - i);
        _mm512_mask_storeu_ps(out + i, tail, gelu16(batch(_mm512_maskz_loadu_ps(tail, x + i))));
    }
}

}  // namespace attnscope::vmath::avx512_kernels
#endif
