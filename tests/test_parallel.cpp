// All threads give the same numbers as one. With OpenBLAS's Prescott kernels they agree bit
// for bit; its Haswell kernels sum a narrower block of output features in another order, so the
// two runs may differ by float32 rounding: 1e-6 of the step's largest value.
#include <doctest/doctest.h>

#include <omp.h>

#include <algorithm>
#include <cmath>

#include "beyond.hpp"
#include "blas_kernels.hpp"
#include "pipeline.hpp"
#include "run.hpp"

using namespace attnscope;

namespace {

// Large enough that every op takes its parallel path (more than 32768 elements per step).
AttentionConfig parallel_config() {
    AttentionConfig cfg;
    cfg.batch = 2;
    cfg.tokens = 72;
    cfg.dim = 256;
    cfg.heads = 4;
    cfg.qkv_bias = true;
    cfg.seed = 7;
    return cfg;
}

Trace run_on(int threads, const AttentionConfig& cfg = parallel_config()) {
    const int saved = omp_get_max_threads();
    omp_set_num_threads(threads);
    Trace t = run_attention(cfg);
    omp_set_num_threads(saved);
    return t;
}

}  // namespace

TEST_CASE("every step agrees on one thread and on two within float32 rounding") {
    const Trace one = run_on(1), two = run_on(2);
    REQUIRE(one.steps.size() == two.steps.size());
    auto close = [](double x, double y, double scale) { return std::fabs(x - y) <= 1e-6 * std::max(1.0, scale); };
    for (std::size_t i = 0; i < one.steps.size(); ++i) {
        const Step &a = one.steps[i], &b = two.steps[i];
        CAPTURE(a.name);
        REQUIRE(a.shape() == b.shape());
        const double scale = std::max(std::fabs(double(b.stats.min)), std::fabs(double(b.stats.max)));
        std::size_t differing = 0;
        for (std::size_t j = 0; j < a.tensor().values.size(); ++j)
            differing += !close(a.tensor().values.data()[j], b.tensor().values.data()[j], scale);
        CHECK(differing == 0);
        CHECK(close(a.stats.min, b.stats.min, scale));
        CHECK(close(a.stats.max, b.stats.max, scale));
        CHECK(close(a.stats.mean, b.stats.mean, scale));
        CHECK(close(a.stats.std, b.stats.std, scale));
    }
    REQUIRE(one.checks.row_sums.size() == two.checks.row_sums.size());
    for (std::size_t i = 0; i < one.checks.row_sums.size(); ++i)
        CHECK(close(one.checks.row_sums[i].max_error, two.checks.row_sums[i].max_error, 1.0));
}

TEST_CASE("the flash path's (b, head) pairs on two threads give the numbers of one, bit for bit") {
    AttentionConfig cfg = parallel_config();  // both threads busy at once: 16 (b, head) pairs of 300 tokens
    cfg.tokens = 300, cfg.dim = 128, cfg.heads = 8;
    cfg.path = AttentionPath::flash;
    cfg.causal = true;
    cfg.valid_tokens = {300, 210};
    cfg.tile_rows = 16, cfg.tile_cols = 24;
    const Trace one = run_on(1, cfg), two = run_on(2, cfg);
    const auto& x = one.at("context").tensor().values;
    const auto& y = two.at("context").tensor().values;
    REQUIRE(x.size() == y.size());
    CHECK(std::equal(x.begin(), x.end(), y.begin()));
    const FlashRecord &a = *one.beyond->flash, &b = *two.beyond->flash;
    CHECK(a.row_max == b.row_max);
    CHECK(a.row_sum == b.row_sum);
    CHECK(a.tiles_total == b.tiles_total);
    CHECK(a.tiles_skipped == b.tiles_skipped);
    CHECK(a.tiles_total == 2 * 8 * 19 * 13);  // B h, 19 row blocks of 16, 13 key blocks of 24
    CHECK(a.tiles_skipped > 0);
    CHECK(a.tiles.size() == b.tiles.size());
}

TEST_CASE("the layout steps hold the values of the steps they view") {
    const Trace t = run_on(2);
    const auto& qkv = t.at("qkv").tensor().values;            // [B, N, 3C]
    const auto& q = t.at("q").tensor().values;                // [B, h, N, c]
    const auto& v = t.at("v").tensor().values;
    const auto& k_t = t.at("k_t").tensor().values;            // [B, h, c, N']
    const auto& context = t.at("context").tensor().values;    // [B, h, N, c]
    const auto& merged = t.at("merged").tensor().values;      // [B, N, C]
    const AttentionConfig cfg = parallel_config();
    const std::size_t N = cfg.tokens, C = cfg.dim, h = cfg.heads, c = cfg.head_dim();
    for (std::size_t b = 0; b < cfg.batch; ++b)
        for (std::size_t hd = 0; hd < h; ++hd)
            for (std::size_t n = 0; n < N; ++n)
                for (std::size_t j = 0; j < c; ++j) {
                    const float* row = qkv.data() + (b * N + n) * 3 * C;
                    REQUIRE(q(b, hd, n, j) == row[0 * C + hd * c + j]);
                    REQUIRE(k_t(b, hd, j, n) == row[1 * C + hd * c + j]);
                    REQUIRE(v(b, hd, n, j) == row[2 * C + hd * c + j]);
                    REQUIRE(merged(b, n, hd * c + j) == context(b, hd, n, j));
                }
}

namespace {

// A fake environment for sleeping_worker_settings().
std::vector<std::pair<std::string, std::string>> g_env;
const char* fake_getenv(const char* name) {
    for (const auto& [k, v] : g_env)
        if (k == name) return v.c_str();
    return nullptr;
}

}  // namespace

TEST_CASE("the desktop app's idle workers sleep, unless the user chose how they wait") {
    using Settings = std::vector<std::pair<std::string, std::string>>;
    g_env = {};
    CHECK(sleeping_worker_settings(fake_getenv) ==
          Settings{{"OMP_WAIT_POLICY", "passive"}, {"OPENBLAS_THREAD_TIMEOUT", "4"}});
    g_env = {{"OMP_WAIT_POLICY", "active"}};
    CHECK(sleeping_worker_settings(fake_getenv) == Settings{{"OPENBLAS_THREAD_TIMEOUT", "4"}});
    g_env = {{"OMP_WAIT_POLICY", "active"}, {"OPENBLAS_THREAD_TIMEOUT", "20"}};
    CHECK(sleeping_worker_settings(fake_getenv).empty());
    g_env = {{"ATTNSCOPE_WORKERS_CHOSEN", "1"}};  // the restarted program: never again
    CHECK(sleeping_worker_settings(fake_getenv).empty());
}
