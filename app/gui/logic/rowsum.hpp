// Row-sum summaries for the row-sum panel: read from the engine's RowSumCheck, never recomputed.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "trace.hpp"

namespace attnscope::ui {

struct HeadRowSums {
    std::size_t batch = 0;
    std::size_t head = 0;
    double max_error = 0.0;   // max |row sum - 1| of this (batch, head)
    std::size_t failing = 0;  // rows over the tolerance
};

struct RowSumSummary {
    std::size_t batch = 0, heads = 0, rows_per_head = 0;  // B, h, N of the sums tensor
    double tolerance = 0.0;
    double max_error = 0.0;
    std::size_t failing_rows = 0;
    std::size_t rows = 0;
    bool deviation_expected = false;
    std::vector<HeadRowSums> per_head;  // B * h entries, (b, head) row-major
    std::size_t worst = 0;              // index into per_head of the largest max_error
    std::string headline;               // one line: "all 256 rows sum to 1 within 1e-05"
};

RowSumSummary summarize(const RowSumCheck& check);

// The N row sums of one (batch, head), from check.sums [B, h, N]. Empty when out of range.
std::vector<float> head_row_sums(const RowSumCheck& check, std::size_t batch, std::size_t head);

// Which of those rows are over the tolerance.
std::vector<bool> failing_rows(const RowSumCheck& check, std::size_t batch, std::size_t head);

// A y-range for plotting row sums: always includes 1 +- 2 * tolerance and every finite sum.
void plot_range(const std::vector<float>& sums, double tolerance, float* lo, float* hi);

}  // namespace attnscope::ui
