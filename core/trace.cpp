#include "trace.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>

namespace attnscope {

Stats compute_stats(const Array& values) {
    Stats s;
    const float* d = values.data();
    float lo = std::numeric_limits<float>::infinity(), hi = -lo;
    double sum = 0.0, sum_sq = 0.0;
    std::size_t finite = 0;
    for (std::size_t i = 0, n = values.size(); i < n; ++i) {
        const float v = d[i];
        if (std::isnan(v)) {
            ++s.nan_count;
        } else if (std::isinf(v)) {
            ++s.inf_count;
        } else {
            lo = std::min(lo, v);
            hi = std::max(hi, v);
            sum += v;
            sum_sq += static_cast<double>(v) * v;
            ++finite;
        }
    }
    if (finite) {
        s.min = lo;
        s.max = hi;
        s.mean = sum / static_cast<double>(finite);
        s.std = std::sqrt(std::max(0.0, sum_sq / static_cast<double>(finite) - s.mean * s.mean));
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
