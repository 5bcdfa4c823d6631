// The vector kernels of core/kernels/vmath.cpp against plain double-precision loops: every length
// from 0 to 40 (the partial last vector of each kernel), NaN and infinities where the ops meet them,
// and compute_stats (core/engine/trace.cpp) on its parallel path.
#include <doctest/doctest.h>

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "random.hpp"
#include "trace.hpp"
#include "vmath.hpp"

using namespace attnscope;

namespace {

const float kInf = std::numeric_limits<float>::infinity();

std::vector<float> normal_values(std::size_t n, float sigma, std::uint64_t seed) {
    Rng rng(seed, 0);
    std::vector<float> v(n);
    for (float& x : v) x = sigma * rng.normal();
    return v;
}

// Lengths that end in every possible partial vector, and two the pipeline uses (197 tokens, 1025).
std::vector<std::size_t> lengths() {
    std::vector<std::size_t> n;
    for (std::size_t i = 1; i <= 40; ++i) n.push_back(i);
    n.push_back(197);
    n.push_back(1025);
    return n;
}

}  // namespace

TEST_CASE("softmax_row matches the double-precision softmax on every row length") {
    INFO("AVX2 + libmvec path: " << vmath::avx2() << ", 16 lanes (AVX-512): " << vmath::avx512());
    for (std::size_t n : lengths()) {
        CAPTURE(n);
        const auto x = normal_values(n, 3.0f, n);
        std::vector<float> y(n + 1, 123.0f);  // y[n] must stay untouched
        vmath::softmax_row(x.data(), y.data(), n);
        double max = -1e300, sum = 0.0, row = 0.0, worst = 0.0;
        for (float v : x) max = std::max(max, double(v));
        for (float v : x) sum += std::exp(v - max);
        for (std::size_t j = 0; j < n; ++j) {
            const double ref = std::exp(x[j] - max) / sum;
            worst = std::max(worst, std::fabs(y[j] - ref) / ref);
            row += y[j];
        }
        CHECK(worst < 1e-5);
        CHECK(std::fabs(row - 1.0) < 1e-5);
        CHECK(y[n] == 123.0f);
    }
}

TEST_CASE("exp_shifted matches exp(x - shift) * mul in double, its sum too, and masked keys give 0") {
    INFO("AVX2 + libmvec path: " << vmath::avx2() << ", 16 lanes (AVX-512): " << vmath::avx512());
    for (std::size_t n : lengths()) {
        CAPTURE(n);
        auto x = normal_values(n, 3.0f, n + 7);
        if (n > 3) x[n / 2] = -kInf;  // a key a mask hides
        const float shift = 2.5f, mul = 0.125f;
        std::vector<float> y(n + 1, 123.0f);  // y[n] must stay untouched
        const float sum = vmath::exp_shifted(x.data(), shift, mul, y.data(), n);
        double ref_sum = 0.0, worst = 0.0;
        for (std::size_t j = 0; j < n; ++j) {
            const double e = std::exp(double(x[j]) - shift);
            ref_sum += e;
            if (e == 0.0) CHECK(y[j] == 0.0f);
            else worst = std::max(worst, std::fabs(y[j] - e * mul) / (e * mul));
        }
        CHECK(worst < 1e-5);
        CHECK(std::fabs(sum - ref_sum) <= 1e-5 * ref_sum);
        CHECK(y[n] == 123.0f);
        // In place, as the flash path and the map call it.
        std::vector<float> z = x;
        CHECK(vmath::exp_shifted(z.data(), shift, mul, z.data(), n) == sum);
        CHECK(z == std::vector<float>(y.begin(), y.begin() + static_cast<long>(n)));
    }
    float none = 1.0f;
    CHECK(vmath::exp_shifted(&none, 0.0f, 1.0f, &none, 0) == 0.0f);
    CHECK(none == 1.0f);
}

TEST_CASE("softmax_row gives hidden keys exactly 0 and NaN rows where PyTorch does") {
    const std::vector<float> masked = {1.0f, -kInf, 2.0f, -kInf, 0.0f, 3.0f, -kInf, 1.0f, -kInf, 0.5f, -kInf};
    std::vector<float> y(masked.size());
    vmath::softmax_row(masked.data(), y.data(), masked.size());
    double row = 0.0;
    for (std::size_t j = 0; j < masked.size(); ++j) {
        if (std::isinf(masked[j])) CHECK(y[j] == 0.0f);
        else CHECK(y[j] > 0.0f);
        row += y[j];
    }
    CHECK(row == doctest::Approx(1.0).epsilon(1e-6));

    const std::vector<float> hidden(11, -kInf);  // a fully masked row
    vmath::softmax_row(hidden.data(), y.data(), hidden.size());
    for (float v : y) CHECK(std::isnan(v));

    std::vector<float> with_nan = normal_values(13, 1.0f, 5);
    with_nan[9] = std::numeric_limits<float>::quiet_NaN();
    y.assign(13, 0.0f);
    vmath::softmax_row(with_nan.data(), y.data(), 13);
    for (float v : y) CHECK(std::isnan(v));
}

TEST_CASE("scaled_softmax_row gives scale then softmax_row bit for bit and the totals of a double loop") {
    if (!vmath::has_scaled_softmax_row()) {
        MESSAGE("no AVX-512 here: core/kernels/fused.cpp takes scale, softmax_row and StatsTotals instead");
        return;
    }
    auto lens = lengths();
    lens.push_back(4097);  // past the kernel's 1024-value float blocks
    for (std::size_t n : lens) {
        CAPTURE(n);
        const auto x = normal_values(n, 6.0f, 7 * n);
        std::vector<float> scaled(n), expected(n), y(n + 1, 123.0f);
        vmath::scale(x.data(), 0.125f, scaled.data(), n);
        vmath::softmax_row(scaled.data(), expected.data(), n);
        vmath::RowTotals in{kInf, -kInf, 0.0, 0.0}, out{kInf, -kInf, 0.0, 0.0};
        const auto [in_ok, out_ok] = vmath::scaled_softmax_row(x.data(), 0.125f, y.data(), n, in, out);
        REQUIRE(in_ok);
        REQUIRE(out_ok);
        CHECK(std::equal(expected.begin(), expected.end(), y.begin()));
        CHECK(y[n] == 123.0f);
        const std::vector<std::pair<const std::vector<float>*, vmath::RowTotals>> cases = {{&x, in}, {&y, out}};
        for (const auto& [values, t] : cases) {
            double sum = 0.0, sum_sq = 0.0;
            float lo = kInf, hi = -kInf;
            for (std::size_t j = 0; j < n; ++j) {
                const float v = (*values)[j];
                sum += v;
                sum_sq += double(v) * v;
                lo = std::min(lo, v);
                hi = std::max(hi, v);
            }
            CHECK(t.lo == lo);
            CHECK(t.hi == hi);
            CHECK(std::fabs(t.sum - sum) <= 1e-6 * (1.0 + sum_sq));
            CHECK(std::fabs(t.sum_sq - sum_sq) <= 1e-6 * sum_sq);
        }
    }
    // A NaN or an infinity in the scores: their totals are refused (the caller counts value by
    // value); attn, NaN on those rows, is refused too; -inf (a masked key) leaves attn's finite.
    const std::size_t n = 37;
    for (std::size_t at : {std::size_t(0), std::size_t(20), std::size_t(36)})
        for (float bad : {std::numeric_limits<float>::quiet_NaN(), kInf, -kInf}) {
            CAPTURE(at);
            CAPTURE(bad);
            auto x = normal_values(n, 1.0f, 9);
            x[at] = bad;
            std::vector<float> y(n);
            vmath::RowTotals in{1.0f, 2.0f, 3.0, 4.0}, out{1.0f, 2.0f, 3.0, 4.0};
            const auto [in_ok, out_ok] = vmath::scaled_softmax_row(x.data(), 0.125f, y.data(), n, in, out);
            CHECK_FALSE(in_ok);
            CHECK((in.lo == 1.0f && in.hi == 2.0f && in.sum == 3.0 && in.sum_sq == 4.0));  // untouched
            CHECK(out_ok == (bad == -kInf));
            if (bad == -kInf) CHECK(y[at] == 0.0f);
        }
}

TEST_CASE("gelu matches the double-precision erf form") {
    std::vector<float> x;
    for (float v = -12.0f; v <= 12.0f; v += 0.001953125f) x.push_back(v);
    x.push_back(0.0f);
    std::vector<float> y(x.size());
    vmath::gelu(x.data(), y.data(), x.size());
    double worst_abs = 0.0;
    for (std::size_t i = 0; i < x.size(); ++i) {
        const double v = x[i], ref = 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
        worst_abs = std::max(worst_abs, std::fabs(y[i] - ref));
    }
    CHECK(worst_abs < 1e-6);
    // Relative error against 0.5 x erfc(-x / sqrt 2) in double (no cancellation), down to x = -8, where
    // 1 + erf in double (and the kernel, on purpose) flushes to 0.
    double worst_rel_above = 0.0;
    for (std::size_t i = 0; i < x.size(); ++i) {
        const double v = x[i], ref = 0.5 * v * std::erfc(-v / std::sqrt(2.0));
        if (v > -8.0 && std::fabs(ref) > 1e-30) worst_rel_above = std::max(worst_rel_above, std::fabs(y[i] - ref) / std::fabs(ref));
    }
    CHECK(worst_rel_above < 1e-5);

    const std::vector<float> special = {-10.0f, -30.0f, kInf, -kInf, std::numeric_limits<float>::quiet_NaN()};
    std::vector<float> s(special.size());
    vmath::gelu(special.data(), s.data(), special.size());
    CHECK(s[0] == 0.0f);
    CHECK(std::signbit(s[0]));  // -0, as PyTorch
    CHECK(s[1] == 0.0f);
    CHECK(s[2] == kInf);
    CHECK(std::isnan(s[3]));  // -inf * 0, as 0.5 * x * (1 + erf(x / sqrt 2)) in double
    CHECK(std::isnan(s[4]));
}

TEST_CASE("scale add and sum cover every element of every length") {
    for (std::size_t n = 0; n <= 70; ++n) {
        CAPTURE(n);
        const auto a = normal_values(n, 1.0f, 2 * n + 1), b = normal_values(n, 1.0f, 2 * n + 2);
        std::vector<float> scaled(n + 1, 7.0f), sum(n + 1, 7.0f);
        vmath::scale(a.data(), 0.125f, scaled.data(), n);
        vmath::add(a.data(), b.data(), sum.data(), n);
        long double exact = 0.0L;
        for (std::size_t i = 0; i < n; ++i) {
            CHECK(scaled[i] == a[i] * 0.125f);
            CHECK(sum[i] == a[i] + b[i]);
            exact += a[i];
        }
        CHECK(scaled[n] == 7.0f);
        CHECK(sum[n] == 7.0f);
        CHECK(std::fabs(vmath::sum(a.data(), n) - static_cast<double>(exact)) <= 1e-12 * (1.0 + n));
    }
}

TEST_CASE("layer_norm_row matches the double-precision LayerNorm") {
    for (std::size_t n : lengths()) {
        CAPTURE(n);
        auto x = normal_values(n, 2.0f, 3 * n);
        for (float& v : x) v += 5.0f;  // a mean far from 0
        const auto w = normal_values(n, 1.0f, 3 * n + 1), b = normal_values(n, 1.0f, 3 * n + 2);
        std::vector<float> y(n);
        vmath::layer_norm_row(x.data(), w.data(), b.data(), 1e-6f, y.data(), n);
        double mean = 0.0, var = 0.0;
        for (float v : x) mean += v;
        mean /= double(n);
        for (float v : x) var += (v - mean) * (v - mean);
        const double inv_std = 1.0 / std::sqrt(var / double(n) + 1e-6f);
        for (std::size_t j = 0; j < n; ++j)
            CHECK(y[j] == doctest::Approx((x[j] - mean) * inv_std * w[j] + b[j]).epsilon(1e-6).scale(1.0));
    }
}

TEST_CASE("finite_block_stats refuses a block with a NaN or an infinity anywhere") {
    const auto x = normal_values(1024, 1.0f, 11);
    float lo = kInf, hi = -kInf;
    double sum = 0.0, sum_sq = 0.0;
    REQUIRE(vmath::finite_block_stats(x.data(), x.size(), lo, hi, sum, sum_sq));
    double exact = 0.0, exact_sq = 0.0;
    float exact_lo = kInf, exact_hi = -kInf;
    for (float v : x) {
        exact += v;
        exact_sq += double(v) * v;
        exact_lo = std::min(exact_lo, v);
        exact_hi = std::max(exact_hi, v);
    }
    CHECK(lo == exact_lo);
    CHECK(hi == exact_hi);
    CHECK(sum == doctest::Approx(exact).epsilon(1e-5));
    CHECK(sum_sq == doctest::Approx(exact_sq).epsilon(1e-5));
    for (std::size_t at : {std::size_t(0), std::size_t(13), std::size_t(31), std::size_t(1023)})
        for (float bad : {std::numeric_limits<float>::quiet_NaN(), kInf, -kInf}) {
            CAPTURE(at);
            CAPTURE(bad);
            auto y = x;
            y[at] = bad;
            float l = 1.0f, h = 2.0f;
            double s = 3.0, q = 4.0;
            CHECK_FALSE(vmath::finite_block_stats(y.data(), y.size(), l, h, s, q));
            CHECK((l == 1.0f && h == 2.0f && s == 3.0 && q == 4.0));  // untouched
        }
}

TEST_CASE("compute_stats on the parallel path equals a double loop and does not depend on the threads") {
    // 5 chunks of 64K values and a partial one, plus a scalar tail: the team path of compute_stats.
    Array a = make_array({5 * 65536 + 40000 + 77});
    Rng rng(3, 9);
    for (float& v : a) v = -1.0f + 4.0f * rng.normal();
    a(70000) = std::numeric_limits<float>::quiet_NaN();
    a(300001) = kInf;
    a(a.size() - 1) = -kInf;
    double sum = 0, sq = 0;
    float lo = kInf, hi = -kInf;
    std::size_t finite = 0;
    for (float v : a)
        if (std::isfinite(v)) {
            sum += v;
            sq += double(v) * v;
            lo = std::min(lo, v);
            hi = std::max(hi, v);
            ++finite;
        }
    const double mean = sum / double(finite);
    const int saved = omp_get_max_threads();
    omp_set_num_threads(1);
    const Stats one = compute_stats(a);
    omp_set_num_threads(2);
    const Stats two = compute_stats(a);
    omp_set_num_threads(saved);
    for (const Stats& s : {one, two}) {
        CHECK(s.nan_count == 1);
        CHECK(s.inf_count == 2);
        CHECK(s.min == lo);
        CHECK(s.max == hi);
        CHECK(s.mean == doctest::Approx(mean).epsilon(1e-6));
        CHECK(s.std == doctest::Approx(std::sqrt(sq / double(finite) - mean * mean)).epsilon(1e-5));
    }
    CHECK(one.mean == two.mean);  // the same chunks, merged in the same order
    CHECK(one.std == two.std);
}
