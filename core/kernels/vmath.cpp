// [SECTION] the CPU check and libmvec
// [SECTION] AVX2 + FMA kernels (compiled for that target only, called after the check)
// [SECTION] portable kernels (any x86-64 or other CPU)
// [SECTION] the entry points
//
// The AVX2 kernels are functions with __attribute__((target(...))) in this file, written with
// intrinsics (always inlined): the rest of the program stays baseline x86-64, and nothing compiled for
// AVX2 can be picked by the linker for a caller on an older CPU. The 16-lane softmax rows and GELU
// are in core/kernels/vmath_avx512.cpp, the one file compiled for AVX-512 (exp and erfc are xsimd's, inlined).
#include "vmath.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <stdexcept>

#include <xsimd/xsimd.hpp>

#if defined(__x86_64__) && defined(__GNUC__) && defined(__linux__)
#define ATTNSCOPE_AVX2 1
#include <immintrin.h>

#include "vmath_avx512.hpp"
#else
#define ATTNSCOPE_AVX2 0
#endif

namespace attnscope::vmath {

// ---- [SECTION] the CPU check and libmvec -----------------------------------------------------
#if ATTNSCOPE_AVX2
#define AVX2_FMA __attribute__((target("avx2,fma")))

// glibc's libmvec (linked through libm), x86_64 vector ABI, AVX2 variant ('d'), 8 lanes ('N8'),
// one vector argument ('v'). Accuracy (glibc's manual, libm-test-ulps): a few ulp, as the scalar
// expf and erfcf; special inputs (NaN, +-inf, overflow, underflow) go through the scalar routine.
extern "C" {
AVX2_FMA __m256 _ZGVdN8v_expf(__m256 x);
AVX2_FMA __m256 _ZGVdN8v_erfcf(__m256 x);
}

// ATTNSCOPE_VMATH_PORTABLE=1 in the environment takes the portable path (to test it on this machine).
bool avx2() {
    static const bool ok = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                           !std::getenv("ATTNSCOPE_VMATH_PORTABLE");
    return ok;
}
bool avx512() { return avx2() && avx512f(); }
#else
bool avx2() { return false; }
bool avx512() { return false; }
#endif

// The one place that reads ATTNSCOPE_NO_AVX512: softmax's 16-lane row and the linear tile.
bool avx512f() {
#if defined(__x86_64__) && defined(__GNUC__)
    static const bool ok = __builtin_cpu_supports("avx512f") && !std::getenv("ATTNSCOPE_NO_AVX512");
    return ok;
#else
    return false;
#endif
}

namespace {

#if ATTNSCOPE_AVX2
// ---- [SECTION] AVX2 + FMA kernels -----------------------------------------------------------

// The first `rem` lanes set (0 < rem < 8): maskload/maskstore of a row's last partial vector.
AVX2_FMA inline __m256i first_lanes(std::size_t rem) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(rem)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// The 8 lanes folded into one: the two halves with `ps` (4 lanes), then lanes 2-3 onto 0-1 with
// `ps`, then lane 1 onto lane 0 with `ss` (the scalar form of the same operation).
template <class Ps, class Ss>
AVX2_FMA inline float lanes_fold(__m256 v, Ps ps, Ss ss) {
    __m128 m = ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = ps(m, _mm_movehl_ps(m, m));
    m = ss(m, _mm_shuffle_ps(m, m, 1));
    return _mm_cvtss_f32(m);
}

AVX2_FMA inline float lanes_max(__m256 v) {
    return lanes_fold(
        v, [](__m128 a, __m128 b) { return _mm_max_ps(a, b); }, [](__m128 a, __m128 b) { return _mm_max_ss(a, b); });
}

AVX2_FMA inline float lanes_min(__m256 v) {
    return lanes_fold(
        v, [](__m128 a, __m128 b) { return _mm_min_ps(a, b); }, [](__m128 a, __m128 b) { return _mm_min_ss(a, b); });
}

AVX2_FMA inline float lanes_sum(__m256 v) {
    return lanes_fold(
        v, [](__m128 a, __m128 b) { return _mm_add_ps(a, b); }, [](__m128 a, __m128 b) { return _mm_add_ss(a, b); });
}

AVX2_FMA inline double lanes_sum(__m256d v) {
    __m128d s = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
    s = _mm_add_sd(s, _mm_unpackhi_pd(s, s));
    return _mm_cvtsd_f64(s);
}

AVX2_FMA void softmax_row_avx2(const float* in, float* out, std::size_t n) {
    const std::size_t whole = n & ~std::size_t(7), rem = n - whole;
    const __m256i tail = first_lanes(rem);
    const __m256 minus_inf = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
    // The row's max (exact in any order). A NaN may or may not survive max; the sum below is NaN anyway.
    __m256 m0 = minus_inf, m1 = minus_inf;
    std::size_t j = 0;
    for (; j + 16 <= whole; j += 16) {
        m0 = _mm256_max_ps(m0, _mm256_loadu_ps(in + j));
        m1 = _mm256_max_ps(m1, _mm256_loadu_ps(in + j + 8));
    }
    if (j < whole) m0 = _mm256_max_ps(m0, _mm256_loadu_ps(in + j));
    if (rem) m0 = _mm256_max_ps(m0, _mm256_blendv_ps(minus_inf, _mm256_maskload_ps(in + whole, tail),
                                                     _mm256_castsi256_ps(tail)));
    const __m256 row_max = _mm256_set1_ps(lanes_max(_mm256_max_ps(m0, m1)));
    // exp(x - max) and its sum. A row of -inf (fully masked) or +inf makes x - max NaN; PyTorch gives NaN there too.
    __m256 sum = _mm256_setzero_ps();
    for (j = 0; j < whole; j += 8) {
        const __m256 e = _ZGVdN8v_expf(_mm256_sub_ps(_mm256_loadu_ps(in + j), row_max));
        _mm256_storeu_ps(out + j, e);
        sum = _mm256_add_ps(sum, e);
    }
    if (rem) {
        const __m256 e = _mm256_and_ps(_ZGVdN8v_expf(_mm256_sub_ps(_mm256_maskload_ps(in + whole, tail), row_max)),
                                       _mm256_castsi256_ps(tail));
        _mm256_maskstore_ps(out + whole, tail, e);
        sum = _mm256_add_ps(sum, e);
    }
    const __m256 inv = _mm256_set1_ps(1.0f / lanes_sum(sum));
    for (j = 0; j < whole; j += 8) _mm256_storeu_ps(out + j, _mm256_mul_ps(_mm256_loadu_ps(out + j), inv));
    if (rem) _mm256_maskstore_ps(out + whole, tail, _mm256_mul_ps(_mm256_maskload_ps(out + whole, tail), inv));
}

AVX2_FMA float exp_shifted_avx2(const float* x, float shift, float mul, float* out, std::size_t n) {
    const std::size_t whole = n & ~std::size_t(7), rem = n - whole;
    const __m256 s = _mm256_set1_ps(shift), m = _mm256_set1_ps(mul);
    __m256 sum = _mm256_setzero_ps();
    for (std::size_t j = 0; j < whole; j += 8) {
        const __m256 e = _ZGVdN8v_expf(_mm256_sub_ps(_mm256_loadu_ps(x + j), s));
        _mm256_storeu_ps(out + j, _mm256_mul_ps(e, m));
        sum = _mm256_add_ps(sum, e);
    }
    if (rem) {
        const __m256i tail = first_lanes(rem);
        const __m256 e = _mm256_and_ps(_ZGVdN8v_expf(_mm256_sub_ps(_mm256_maskload_ps(x + whole, tail), s)),
                                       _mm256_castsi256_ps(tail));  // lanes past n: 0
        _mm256_maskstore_ps(out + whole, tail, _mm256_mul_ps(e, m));
        sum = _mm256_add_ps(sum, e);
    }
    return lanes_sum(sum);
}

AVX2_FMA void scale_avx2(const float* x, float s, float* out, std::size_t n) {
    const __m256 vs = _mm256_set1_ps(s);
    std::size_t i = 0;
    for (; i + 32 <= n; i += 32)
        for (std::size_t k = 0; k < 32; k += 8) _mm256_storeu_ps(out + i + k, _mm256_mul_ps(_mm256_loadu_ps(x + i + k), vs));
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), vs));
    if (i < n) {
        const __m256i tail = first_lanes(n - i);
        _mm256_maskstore_ps(out + i, tail, _mm256_mul_ps(_mm256_maskload_ps(x + i, tail), vs));
    }
}

AVX2_FMA void add_avx2(const float* a, const float* b, float* out, std::size_t n) {
    std::size_t i = 0;
    for (; i + 32 <= n; i += 32)
        for (std::size_t k = 0; k < 32; k += 8)
            _mm256_storeu_ps(out + i + k, _mm256_add_ps(_mm256_loadu_ps(a + i + k), _mm256_loadu_ps(b + i + k)));
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, _mm256_add_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
    if (i < n) {
        const __m256i tail = first_lanes(n - i);
        _mm256_maskstore_ps(out + i, tail, _mm256_add_ps(_mm256_maskload_ps(a + i, tail), _mm256_maskload_ps(b + i, tail)));
    }
}

// 0.5 * x * erfc(-x / sqrt(2)): 0.5 * x is exact, then one rounding. Where erfc < 2^-53, 1 + erf in
// double (the portable path) and in PyTorch's float is exactly 0: flushed to 0 here as well, so that
// gelu(-10) is -0 everywhere.
AVX2_FMA inline __m256 gelu8(__m256 x) {
    const __m256 e = _ZGVdN8v_erfcf(_mm256_mul_ps(x, _mm256_set1_ps(-0.70710678118654752f)));
    const __m256 one_plus_erf = _mm256_and_ps(e, _mm256_cmp_ps(e, _mm256_set1_ps(0x1p-53f), _CMP_GE_OQ));
    return _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.5f), x), one_plus_erf);
}

AVX2_FMA void gelu_avx2(const float* x, float* out, std::size_t n) {
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, gelu8(_mm256_loadu_ps(x + i)));
    if (i < n) {
        const __m256i tail = first_lanes(n - i);
        _mm256_maskstore_ps(out + i, tail, gelu8(_mm256_maskload_ps(x + i, tail)));
    }
}

// Four double accumulators of four lanes each (the row's end in vectors too: rows are short).
AVX2_FMA double sum_avx2(const float* x, std::size_t n) {
    __m256d s0 = _mm256_setzero_pd(), s1 = s0, s2 = s0, s3 = s0;
    std::size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        s0 = _mm256_add_pd(s0, _mm256_cvtps_pd(_mm_loadu_ps(x + i)));
        s1 = _mm256_add_pd(s1, _mm256_cvtps_pd(_mm_loadu_ps(x + i + 4)));
        s2 = _mm256_add_pd(s2, _mm256_cvtps_pd(_mm_loadu_ps(x + i + 8)));
        s3 = _mm256_add_pd(s3, _mm256_cvtps_pd(_mm_loadu_ps(x + i + 12)));
    }
    for (; i + 4 <= n; i += 4) s0 = _mm256_add_pd(s0, _mm256_cvtps_pd(_mm_loadu_ps(x + i)));
    if (i < n) {  // the last 1 to 3 values; the other lanes load 0
        const __m128i tail = _mm_cmpgt_epi32(_mm_set1_epi32(static_cast<int>(n - i)), _mm_setr_epi32(0, 1, 2, 3));
        s1 = _mm256_add_pd(s1, _mm256_cvtps_pd(_mm_maskload_ps(x + i, tail)));
    }
    return lanes_sum(_mm256_add_pd(_mm256_add_pd(s0, s1), _mm256_add_pd(s2, s3)));
}

AVX2_FMA void layer_norm_row_avx2(const float* x, const float* weight, const float* bias, float eps, float* out,
                                  std::size_t n) {
    const double mean = sum_avx2(x, n) / static_cast<double>(n);
    const __m256d vmean = _mm256_set1_pd(mean);
    __m256d v0 = _mm256_setzero_pd(), v1 = v0;
    std::size_t j = 0;
    for (; j + 8 <= n; j += 8) {
        const __m256d d0 = _mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(x + j)), vmean);
        const __m256d d1 = _mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(x + j + 4)), vmean);
        v0 = _mm256_add_pd(v0, _mm256_mul_pd(d0, d0));
        v1 = _mm256_add_pd(v1, _mm256_mul_pd(d1, d1));
    }
    double var = lanes_sum(_mm256_add_pd(v0, v1));
    for (; j < n; ++j) var += (x[j] - mean) * (x[j] - mean);
    const double inv_std = 1.0 / std::sqrt(var / static_cast<double>(n) + eps);  // biased variance, as torch
    // (x - mean) * inv_std * weight + bias in double, in that order: the scalar loop's rounding.
    const __m256d vinv = _mm256_set1_pd(inv_std);
    for (j = 0; j + 4 <= n; j += 4) {
        const __m256d t = _mm256_mul_pd(_mm256_mul_pd(_mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(x + j)), vmean), vinv),
                                        _mm256_cvtps_pd(_mm_loadu_ps(weight + j)));
        _mm_storeu_ps(out + j, _mm256_cvtpd_ps(_mm256_add_pd(t, _mm256_cvtps_pd(_mm_loadu_ps(bias + j)))));
    }
    for (; j < n; ++j) out[j] = static_cast<float>((x[j] - mean) * inv_std * weight[j] + bias[j]);
}

// Two min and two max accumulators (each fed the min/max of two loads), two sums, four sums of squares:
// no accumulator waits on the previous iteration's add more than once per 32 values.
AVX2_FMA bool finite_block_stats_avx2(const float* x, std::size_t n, float& lo, float& hi, double& sum,
                                      double& sum_sq) {
    __m256 lo0 = _mm256_set1_ps(std::numeric_limits<float>::infinity()), lo1 = lo0;
    __m256 hi0 = _mm256_set1_ps(-std::numeric_limits<float>::infinity()), hi1 = hi0;
    __m256 s0 = _mm256_setzero_ps(), s1 = s0, q0 = s0, q1 = s0, q2 = s0, q3 = s0;
    for (std::size_t i = 0; i < n; i += 32) {
        const __m256 b0 = _mm256_loadu_ps(x + i), b1 = _mm256_loadu_ps(x + i + 8);
        const __m256 b2 = _mm256_loadu_ps(x + i + 16), b3 = _mm256_loadu_ps(x + i + 24);
        lo0 = _mm256_min_ps(lo0, _mm256_min_ps(b0, b1));
        lo1 = _mm256_min_ps(lo1, _mm256_min_ps(b2, b3));
        hi0 = _mm256_max_ps(hi0, _mm256_max_ps(b0, b1));
        hi1 = _mm256_max_ps(hi1, _mm256_max_ps(b2, b3));
        s0 = _mm256_add_ps(s0, _mm256_add_ps(b0, b1));
        s1 = _mm256_add_ps(s1, _mm256_add_ps(b2, b3));
        q0 = _mm256_fmadd_ps(b0, b0, q0);
        q1 = _mm256_fmadd_ps(b1, b1, q1);
        q2 = _mm256_fmadd_ps(b2, b2, q2);
        q3 = _mm256_fmadd_ps(b3, b3, q3);
    }
    // A NaN or an infinity makes its lane's sum NaN or infinite for good (inf + finite = inf,
    // inf - inf = NaN), and so the total: then the caller counts value by value. min/max cannot
    // tell (they drop NaN), so they are only used when the sums are finite.
    const float block_sum = lanes_sum(_mm256_add_ps(s0, s1));
    const float block_sq = lanes_sum(_mm256_add_ps(_mm256_add_ps(q0, q1), _mm256_add_ps(q2, q3)));
    if (!std::isfinite(block_sum) || !std::isfinite(block_sq)) return false;
    lo = std::min(lo, lanes_min(_mm256_min_ps(lo0, lo1)));
    hi = std::max(hi, lanes_max(_mm256_max_ps(hi0, hi1)));
    sum += block_sum;
    sum_sq += block_sq;
    return true;
}
#endif

// ---- [SECTION] portable kernels -------------------------------------------------------------
using batch = xsimd::batch<float>;  // the compiler's baseline SIMD (SSE2 on x86-64)
constexpr std::size_t kLanes = batch::size;

void softmax_row_portable(const float* in, float* out, std::size_t n) {
    float row_max = in[0];
    std::size_t m = 0;
    if (n >= kLanes) {  // lane-wise max, then across the lanes (max is exact in any order)
        batch max_of_lanes = batch::load_unaligned(in);
        for (m = kLanes; m + kLanes <= n; m += kLanes) max_of_lanes = xsimd::max(max_of_lanes, batch::load_unaligned(in + m));
        alignas(64) float lane[kLanes];
        max_of_lanes.store_aligned(lane);
        for (float l : lane) row_max = std::max(row_max, l);
    }
    for (; m < n; ++m) row_max = std::max(row_max, in[m]);
    std::size_t j = 0;
    batch sum_lanes(0.0f);
    const batch max_lanes(row_max);
    for (; j + kLanes <= n; j += kLanes) {
        batch e = xsimd::exp(batch::load_unaligned(in + j) - max_lanes);
        e.store_unaligned(out + j);
        sum_lanes += e;
    }
    float sum = xsimd::hadd(sum_lanes);
    for (; j < n; ++j) {
        out[j] = std::exp(in[j] - row_max);
        sum += out[j];
    }
    const float inv = 1.0f / sum;
    for (j = 0; j < n; ++j) out[j] *= inv;
}

float exp_shifted_portable(const float* x, float shift, float mul, float* out, std::size_t n) {
    std::size_t j = 0;
    batch sum_lanes(0.0f);
    const batch s(shift), m(mul);
    for (; j + kLanes <= n; j += kLanes) {
        const batch e = xsimd::exp(batch::load_unaligned(x + j) - s);
        (e * m).store_unaligned(out + j);
        sum_lanes += e;
    }
    float sum = xsimd::hadd(sum_lanes);
    for (; j < n; ++j) {
        const float e = std::exp(x[j] - shift);
        out[j] = e * mul;
        sum += e;
    }
    return sum;
}

double sum_portable(const float* x, std::size_t n) {
    // Four running sums in double, so the adds do not wait on each other; then one.
    double part[4] = {0.0, 0.0, 0.0, 0.0};
    std::size_t j = 0;
    for (; j + 4 <= n; j += 4)
        for (std::size_t l = 0; l < 4; ++l) part[l] += x[j + l];
    double sum = (part[0] + part[1]) + (part[2] + part[3]);
    for (; j < n; ++j) sum += x[j];
    return sum;
}

void layer_norm_row_portable(const float* x, const float* weight, const float* bias, float eps, float* out,
                             std::size_t n) {
    const double mean = sum_portable(x, n) / static_cast<double>(n);
    double var = 0.0;
    for (std::size_t j = 0; j < n; ++j) var += (x[j] - mean) * (x[j] - mean);
    const double inv_std = 1.0 / std::sqrt(var / static_cast<double>(n) + eps);  // biased variance, as torch
    for (std::size_t j = 0; j < n; ++j) out[j] = static_cast<float>((x[j] - mean) * inv_std * weight[j] + bias[j]);
}

bool finite_block_stats_portable(const float* x, std::size_t n, float& lo, float& hi, double& sum, double& sum_sq) {
    batch vlo(lo), vhi(hi), vsum(0.0f), vsq(0.0f), poison(0.0f);
    for (std::size_t i = 0; i < n; i += kLanes) {
        const batch b = batch::load_unaligned(x + i);
        poison += b - b;  // x - x is 0 for finite x and NaN otherwise
        vlo = xsimd::min(vlo, b);
        vhi = xsimd::max(vhi, b);
        vsum += b;
        vsq = xsimd::fma(b, b, vsq);
    }
    if (!(xsimd::hadd(poison) == 0.0f)) return false;  // NaN compares unequal too
    const float block_sum = xsimd::hadd(vsum), block_sq = xsimd::hadd(vsq);
    if (!std::isfinite(block_sum) || !std::isfinite(block_sq)) return false;
    alignas(64) float lanes[kLanes];
    vlo.store_aligned(lanes);
    for (float v : lanes) lo = std::min(lo, v);
    vhi.store_aligned(lanes);
    for (float v : lanes) hi = std::max(hi, v);
    sum += block_sum;
    sum_sq += block_sq;
    return true;
}

}  // namespace

// ---- [SECTION] the entry points -------------------------------------------------------------
#if ATTNSCOPE_AVX2
#define VMATH_DISPATCH(avx2_call) \
    if (avx2()) return avx2_call
#else
#define VMATH_DISPATCH(avx2_call)
#endif

void softmax_row(const float* in, float* out, std::size_t n) {
#if ATTNSCOPE_AVX2
    if (avx512()) return avx512_kernels::softmax_row(in, out, n);
#endif
    VMATH_DISPATCH(softmax_row_avx2(in, out, n));
    softmax_row_portable(in, out, n);
}

bool has_scaled_softmax_row() { return avx512(); }

std::pair<bool, bool> scaled_softmax_row(const float* in, float scale, float* out, std::size_t n, RowTotals& in_totals,
                                         RowTotals& out_totals) {
#if ATTNSCOPE_AVX2
    if (avx512()) return avx512_kernels::scaled_softmax_row(in, scale, out, n, in_totals, out_totals);
#endif
    (void)in, (void)scale, (void)out, (void)n, (void)in_totals, (void)out_totals;
    throw std::logic_error("vmath::scaled_softmax_row: this CPU has no such kernel (check has_scaled_softmax_row)");
}

float exp_shifted(const float* x, float shift, float mul, float* out, std::size_t n) {
#if ATTNSCOPE_AVX2
    if (avx512()) return avx512_kernels::exp_shifted(x, shift, mul, out, n);
#endif
    VMATH_DISPATCH(exp_shifted_avx2(x, shift, mul, out, n));
    return exp_shifted_portable(x, shift, mul, out, n);
}

void scale(const float* x, float s, float* out, std::size_t n) {
    VMATH_DISPATCH(scale_avx2(x, s, out, n));
    for (std::size_t i = 0; i < n; ++i) out[i] = x[i] * s;
}

void add(const float* a, const float* b, float* out, std::size_t n) {
    VMATH_DISPATCH(add_avx2(a, b, out, n));
    for (std::size_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

void gelu(const float* x, float* out, std::size_t n) {
#if ATTNSCOPE_AVX2
    if (avx512()) return avx512_kernels::gelu(x, out, n);
#endif
    VMATH_DISPATCH(gelu_avx2(x, out, n));
    for (std::size_t i = 0; i < n; ++i) {  // as gelu8: 1 + erf(z) as erfc(-z), 0 below 2^-53
        const double one_plus_erf = std::erfc(x[i] * -0.70710678118654752);
        out[i] = static_cast<float>(0.5 * x[i] * (one_plus_erf >= 0x1p-53 ? one_plus_erf : 0.0));
    }
}

double sum(const float* x, std::size_t n) {
    VMATH_DISPATCH(sum_avx2(x, n));
    return sum_portable(x, n);
}

void layer_norm_row(const float* x, const float* weight, const float* bias, float eps, float* out, std::size_t n) {
    VMATH_DISPATCH(layer_norm_row_avx2(x, weight, bias, eps, out, n));
    layer_norm_row_portable(x, weight, bias, eps, out, n);
}

bool finite_block_stats(const float* x, std::size_t n, float& lo, float& hi, double& sum, double& sum_sq) {
    VMATH_DISPATCH(finite_block_stats_avx2(x, n, lo, hi, sum, sum_sq));
    return finite_block_stats_portable(x, n, lo, hi, sum, sum_sq);
}

}  // namespace attnscope::vmath
