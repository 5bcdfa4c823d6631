// vmath's AVX-512 kernels whose math must be inlined to pay: softmax's exp from xsimd's avx512f
// batch. xsimd picks its instructions from the compiler's target flags, so this file alone is
// compiled with AVX-512 enabled (core/CMakeLists.txt); it runs only where vmath::avx512() says the CPU
// can. Nothing else may be compiled here: an inline function emitted in this file could be picked by
// the linker for the rest of the program, which must run without AVX-512 (a test in
// tests/CMakeLists.txt checks that every weak function this object defines belongs to xsimd's AVX types).
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

#include <limits>

namespace attnscope::vmath::avx512_kernels {

namespace {

using batch = xsimd::batch<float, xsimd::avx512f>;

// The first `rem` of 16 lanes (0 < rem < 16).
__mmask16 first_lanes(std::size_t rem) { return static_cast<__mmask16>((1u << rem) - 1); }

float lanes_max(batch v) {
    alignas(64) float lanes[16];
    v.store_aligned(lanes);
    float m = lanes[0];
    for (int i = 1; i < 16; ++i) m = lanes[i] > m ? lanes[i] : m;
    return m;
}

float lanes_sum(batch v) {
    const __m512 x = v;
    const __m256 lo = _mm512_castps512_ps256(x);
    const __m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1));
    return xsimd::hadd(xsimd::batch<float, xsimd::avx2>(lo) + xsimd::batch<float, xsimd::avx2>(hi));
}

}  // namespace

// out = exp(in - max) / sum: the max, then exp and the sum, then the scaling; the partial last vector
// with masked loads and stores (lanes past n read as -inf for the max and add 0 to the sum).
void softmax_row(const float* in, float* out, std::size_t n) {
    const std::size_t whole = n & ~std::size_t(15), rem = n - whole;
    const __mmask16 tail = rem ? first_lanes(rem) : 0;
    const __m512 minus_inf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
    // The row's max (exact in any order). A NaN may or may not survive max; the sum below is NaN anyway.
    batch m0(minus_inf), m1(minus_inf);
    std::size_t j = 0;
    for (; j + 32 <= whole; j += 32) {
        m0 = xsimd::max(m0, batch::load_unaligned(in + j));
        m1 = xsimd::max(m1, batch::load_unaligned(in + j + 16));
    }
    if (j < whole) m0 = xsimd::max(m0, batch::load_unaligned(in + j));
    if (rem) m1 = xsimd::max(m1, batch(_mm512_mask_loadu_ps(minus_inf, tail, in + whole)));
    const batch row_max(lanes_max(xsimd::max(m0, m1)));
    // exp(x - max) and its sum. A row of -inf (fully masked) or +inf makes x - max NaN, as in PyTorch.
    batch sum(0.0f);
    for (j = 0; j < whole; j += 16) {
        const batch e = xsimd::exp(batch::load_unaligned(in + j) - row_max);
        e.store_unaligned(out + j);
        sum += e;
    }
    if (rem) {
        const batch x(_mm512_maskz_loadu_ps(tail, in + whole));
        const batch e(_mm512_maskz_mov_ps(tail, xsimd::exp(x - row_max)));  // lanes past n: 0
        _mm512_mask_storeu_ps(out + whole, tail, e);
        sum += e;
    }
    const batch inv(1.0f / lanes_sum(sum));
    for (j = 0; j < whole; j += 16) (batch::load_unaligned(out + j) * inv).store_unaligned(out + j);
    if (rem) _mm512_mask_storeu_ps(out + whole, tail, batch(_mm512_maskz_loadu_ps(tail, out + whole)) * inv);
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
