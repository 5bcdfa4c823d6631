#include "rowsum.hpp"
#include "i18n.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace attnscope::ui {

RowSumSummary summarize(const RowSumCheck& check) {
    RowSumSummary s;
    const auto& shape = check.sums.values.shape();
    if (shape.size() == 3) {
        s.batch = shape[0];
        s.heads = shape[1];
        s.rows_per_head = shape[2];
    }
    s.tolerance = check.tolerance;
    s.max_error = check.max_error;
    s.failing_rows = check.failing_rows;
    s.rows = check.rows;
    s.deviation_expected = check.deviation_expected;
    const std::size_t n = std::min(check.head_max_error.size(), check.head_failing.size());
    for (std::size_t i = 0; i < n; ++i) {
        HeadRowSums h;
        h.batch = s.heads ? i / s.heads : 0;
        h.head = s.heads ? i % s.heads : i;
        h.max_error = check.head_max_error[i];
        h.failing = check.head_failing[i];
        s.per_head.push_back(h);
        if (h.max_error > s.per_head[s.worst].max_error) s.worst = s.per_head.size() - 1;
    }
    char buf[256];  // the Chinese text is longer in bytes
    if (check.failing_rows == 0)
        std::snprintf(buf, sizeof buf, _("all %zu rows sum to 1 within %.0e (max |sum-1| = %.2e)"), check.rows,
                      check.tolerance, check.max_error);
    else if (check.deviation_expected)
        std::snprintf(buf, sizeof buf, _("%zu of %zu rows differ from 1 - expected with training-mode dropout"),
                      check.failing_rows, check.rows);
    else
        std::snprintf(buf, sizeof buf, _("%zu of %zu rows do NOT sum to 1 (max |sum-1| = %.2e > %.0e)"),
                      check.failing_rows, check.rows, check.max_error, check.tolerance);
    s.headline = buf;
    return s;
}

std::vector<float> head_row_sums(const RowSumCheck& check, std::size_t batch, std::size_t head) {
    const auto& shape = check.sums.values.shape();
    if (shape.size() != 3 || batch >= shape[0] || head >= shape[1]) return {};
    const std::size_t n = shape[2];
    const float* p = check.sums.values.data() + (batch * shape[1] + head) * n;
    return std::vector<float>(p, p + n);
}

std::vector<bool> failing_rows(const RowSumCheck& check, std::size_t batch, std::size_t head) {
    const std::vector<float> sums = head_row_sums(check, batch, head);
    std::vector<bool> out(sums.size());
    for (std::size_t i = 0; i < sums.size(); ++i)
        out[i] = !(std::fabs(static_cast<double>(sums[i]) - 1.0) <= check.tolerance);  // NaN fails
    return out;
}

void plot_range(const std::vector<float>& sums, double tolerance, float* lo, float* hi) {
    float a = static_cast<float>(1.0 - 2.0 * tolerance), b = static_cast<float>(1.0 + 2.0 * tolerance);
    for (float v : sums)
        if (std::isfinite(v)) {
            a = std::min(a, v);
            b = std::max(b, v);
        }
    const float pad = (b - a) * 0.08f;
    *lo = a - pad;
    *hi = b + pad;
}

}  // namespace attnscope::ui
