#include "memory_budget.hpp"

#include <atomic>
#include <cctype>
#include <cmath>
#include <limits>

#include "step_table.hpp"

namespace attnscope {

namespace {

std::atomic<std::uint64_t> g_budget{0};  // 0: the default

constexpr std::uint64_t kSaturated = std::numeric_limits<std::uint64_t>::max();

std::uint64_t mul(std::uint64_t a, std::uint64_t b) { return a != 0 && b > kSaturated / a ? kSaturated : a * b; }
std::uint64_t add(std::uint64_t a, std::uint64_t b) { return a > kSaturated - b ? kSaturated : a + b; }

}  // namespace

std::uint64_t memory_budget() {
    const std::uint64_t set = g_budget.load();
    return set ? set : default_memory_budget();
}

void set_memory_budget(std::uint64_t bytes) { g_budget.store(bytes); }

std::optional<std::uint64_t> parse_byte_size(const std::string& text, Message* error) {
    auto fail = [&](Message why) -> std::optional<std::uint64_t> {
        if (error) *error = Message(Msg::budget_problem, {{"text", text}}).with("problem", std::move(why));
        return std::nullopt;
    };
    std::size_t i = 0;
    while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
    if (i == 0 || i > 24) return fail(Message(Msg::budget_not_a_size));
    char* end = nullptr;
    const std::string number = text.substr(0, i);
    const double value = std::strtod(number.c_str(), &end);
    if (end != number.c_str() + number.size() || !std::isfinite(value))
        return fail(Message(Msg::budget_not_a_size));
    std::string unit = text.substr(i);
    for (char& ch : unit) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    double scale = 1.0;
    if (unit == "" || unit == "B") scale = 1.0;
    else if (unit == "K" || unit == "KB" || unit == "KIB") scale = 1024.0;
    else if (unit == "M" || unit == "MB" || unit == "MIB") scale = 1024.0 * 1024;
    else if (unit == "G" || unit == "GB" || unit == "GIB") scale = 1024.0 * 1024 * 1024;
    else if (unit == "T" || unit == "TB" || unit == "TIB") scale = 1024.0 * 1024 * 1024 * 1024;
    else return fail(Message(Msg::budget_unit, {{"unit", text.substr(i)}}));
    const double bytes = value * scale;
    if (bytes < 1024.0 * 1024) return fail(Message(Msg::budget_too_small));
    if (bytes >= 1.8e19) return fail(Message(Msg::budget_too_large));
    return static_cast<std::uint64_t>(bytes);
}

std::vector<StepBytes> step_bytes(const AttentionConfig& c) {
    const std::uint64_t f = sizeof(float);
    const std::uint64_t bhn = mul(mul(mul(c.batch, c.heads), c.tokens), f);  // [B, h, N] row sums
    std::vector<StepBytes> steps;
    for (const StepInfo& step : attention_steps(c.reference)) {
        if (step.only_masked && !c.masked()) continue;
        std::uint64_t bytes = f;
        for (std::uint64_t n : step_shape(step, c)) bytes = mul(bytes, n);
        // The row sums of the steps whose rows must sum to 1 (the checks) count with their steps.
        if (step.distribution) bytes = add(bytes, bhn);
        steps.push_back({std::string(step.name), bytes});
    }
    const std::uint64_t weights = mul(mul(mul(4, c.dim), c.dim), f);  // qkv [3C, C], proj [C, C]
    const std::uint64_t biases = mul(mul(4, c.dim), f);               // qkv [3C] (counted with or without), proj [C]
    steps.push_back({"weights", add(weights, biases)});
    return steps;
}

std::uint64_t textbook_trace_bytes(const AttentionConfig& c) {
    std::uint64_t bytes = 0;
    for (const StepBytes& s : step_bytes(c)) bytes = add(bytes, s.bytes);
    return bytes;
}

}  // namespace attnscope
