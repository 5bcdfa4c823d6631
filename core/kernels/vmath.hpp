// Vector kernels for the ops' elementwise and row loops: exp and erfc from glibc's vector
// math library libmvec (_ZGVdN8v_expf, _ZGVdN8v_erfcf: 8 floats per call, AVX2), softmax and GELU 16
// lanes wide with AVX-512 and xsimd's exp and erfc inlined (core/kernels/vmath_avx512.cpp), and AVX2 + FMA
// loops for sums, scaling and the stats. The CPU is checked once at run time; without AVX2 and FMA
// every function takes its portable path (std::exp, std::erf, plain loops), with the same results
// up to float rounding.
//
// NaN and +-inf behave as in the scalar functions: exp(-inf) = 0, exp(NaN) = NaN, and so on
// (libmvec handles these lanes with the scalar routine). One difference: the 16-lane softmax's exp
// (xsimd's) gives 0 where exp(x - max) would be a denormal, below e^-87.3 (a weight under 1e-38).
// No -ffast-math anywhere.
#pragma once

#include <cstddef>
#include <utility>

namespace attnscope::vmath {

// True when this CPU runs the AVX2 + FMA kernels below (checked once; ATTNSCOPE_VMATH_PORTABLE=1 in
// the environment forces the portable path, to test it).
bool avx2();

// True when this CPU runs AVX-512F and ATTNSCOPE_NO_AVX512 is not set in the environment (checked
// once). The switch for every AVX-512 kernel: this file's and the linear tile's (packed_linear).
bool avx512f();

// True when softmax_row and gelu run 16 lanes wide, and scaled_softmax_row runs at all
// (core/kernels/vmath_avx512.cpp): avx2() and avx512f().
bool avx512();

// One softmax row: out[j] = exp(in[j] - max) / sum_j exp(in[j] - max).   in, out [n], n > 0
// A row holding NaN, or -inf everywhere, gives NaN everywhere (as PyTorch).
void softmax_row(const float* in, float* out, std::size_t n);

// Running totals of finite values: min, max, sum, sum of squares (StatsTotals' fields).
struct RowTotals {
    float lo, hi;
    double sum, sum_sq;
};

// True when scaled_softmax_row below runs on this CPU: avx512().
bool has_scaled_softmax_row();

// One row of the fused * scale + softmax pass (core/kernels/fused.cpp), in one call: out = softmax_row(in *
// scale) with the values of scale() then softmax_row(), while the values of in and of out are
// folded into in_totals and out_totals (float lanes, then double). Returns, for in and for out,
// whether they were folded in: false, with those totals untouched, when the row holds a NaN or an
// infinity (or its float sums overflow); the caller then counts that row value by value. Only where
// has_scaled_softmax_row().
std::pair<bool, bool> scaled_softmax_row(const float* in, float scale, float* out, std::size_t n, RowTotals& in_totals,
                                         RowTotals& out_totals);

// out[j] = exp(x[j] - shift) * mul for j < n; returns the sum of the exp(x[j] - shift) (in float
// lanes, then across them). x[j] = -inf gives 0; out may be x. The flash path's P = exp(S - m_new)
// and l, and the attention map's tiles, exp(S - m) / l.
float exp_shifted(const float* x, float shift, float mul, float* out, std::size_t n);

// out[i] = x[i] * s
void scale(const float* x, float s, float* out, std::size_t n);

// out[i] = a[i] + b[i]
void add(const float* a, const float* b, float* out, std::size_t n);

// The exact GELU, 0.5 * x * (1 + erf(x / sqrt(2))), with 1 + erf(z) taken as erfc(-z) (no
// cancellation for negative x; xsimd's erfc on AVX-512, libmvec's erfcf on AVX2, erfc in double
// otherwise), flushed to 0 where 1 + erf in double is 0 (erfc < 2^-53, x < -8.3): gelu(-10) is -0,
// as PyTorch's.
void gelu(const float* x, float* out, std::size_t n);

// sum_i x[i], accumulated in double.
double sum(const float* x, std::size_t n);

// LayerNorm of one row, in double as before: (x - mean) / sqrt(var + eps) * weight + bias, with the
// biased variance.   x, weight, bias, out [n], n > 0
void layer_norm_row(const float* x, const float* weight, const float* bias, float eps, float* out, std::size_t n);

// Folds a block of n floats into running totals: lo = min, hi = max, sum and sum_sq += the block's
// sum and sum of squares (n a multiple of 32, at most a few thousand: the block's sums are kept in
// float lanes). Returns false, with the totals untouched, when the block holds a NaN or an infinity
// or its float sums overflow: the caller then counts value by value.
bool finite_block_stats(const float* x, std::size_t n, float& lo, float& hi, double& sum, double& sum_sq);

}  // namespace attnscope::vmath
