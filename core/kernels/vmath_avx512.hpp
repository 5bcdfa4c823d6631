// The kernels of core/kernels/vmath_avx512.cpp, the one file compiled for AVX-512. Call them only through
// core/kernels/vmath.hpp, which checks the CPU first.
#pragma once

#include <cstddef>
#include <utility>

#include "vmath.hpp"

namespace attnscope::vmath::avx512_kernels {

// vmath::softmax_row on 16 lanes, exp inlined (xsimd).
void softmax_row(const float* in, float* out, std::size_t n);

// vmath::scaled_softmax_row (its body).
std::pair<bool, bool> scaled_softmax_row(const float* in, float scale, float* out, std::size_t n, RowTotals& in_totals,
                                         RowTotals& out_totals);

// vmath::exp_shifted on 16 lanes, exp inlined (xsimd).
float exp_shifted(const float* x, float shift, float mul, float* out, std::size_t n);

// vmath::gelu on 16 lanes, erfc inlined (xsimd).
void gelu(const float* x, float* out, std::size_t n);

}  // namespace attnscope::vmath::avx512_kernels
