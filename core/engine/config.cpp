#include "config.hpp"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

namespace attnscope {

namespace {

constexpr std::uint64_t kSaturated = std::numeric_limits<std::uint64_t>::max();

// Saturating arithmetic: a size that does not fit is "too big", never a wrapped small number.
std::uint64_t mul(std::uint64_t a, std::uint64_t b) {
    if (a != 0 && b > kSaturated / a) return kSaturated;
    return a * b;
}

}  // namespace

const char* path_name(AttentionPath path) {
    switch (path) {
        case AttentionPath::standard: return "standard";
        case AttentionPath::flash: return "flash";
        case AttentionPath::kv_cache: return "kv-cache";
        case AttentionPath::windowed: return "windowed";
    }
    return "?";
}

std::uint64_t default_memory_budget() {
    const long pages = sysconf(_SC_PHYS_PAGES);
    const long page_size = sysconf(_SC_PAGE_SIZE);
    if (pages <= 0 || page_size <= 0) return 4ull << 30;  // unknown machine: 4 GiB
    return static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page_size) / 2;
}

std::string format_bytes(std::uint64_t bytes) {
    if (bytes == kSaturated) return "more than 16 EiB";
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double value = static_cast<double>(bytes);
    int unit = 0;
    while (value >= 1024.0 && unit < 6) {
        value /= 1024.0;
        ++unit;
    }
    char text[32];
    std::snprintf(text, sizeof text, unit == 0 ? "%.0f %s" : "%.1f %s", value, units[unit]);
    return text;
}

std::vector<Message> validate_layer(const AttentionConfig& c) {
    std::vector<Message> problems;
    auto at_least_one = [&](std::size_t n, const char* option) {
        if (n == 0) problems.push_back(Message(Msg::config_at_least_one, {{"option", option}}));
    };
    at_least_one(c.batch, "--batch");
    at_least_one(c.tokens, "--tokens");
    at_least_one(c.dim, "--dim");
    at_least_one(c.heads, "--heads");
    if (c.heads != 0 && c.dim != 0 && c.dim % c.heads != 0)
        problems.push_back(Message(Msg::config_dim_heads, {{"dim", std::to_string(c.dim)}, {"heads", std::to_string(c.heads)}}));
    auto check_p = [&](float p, const char* option) {
        if (!(p >= 0.0f && p < 1.0f))
            problems.push_back(Message(Msg::config_rate, {{"option", option}, {"value", std::to_string(p)}}));
    };
    check_p(c.attn_drop, "--attn-drop");
    check_p(c.proj_drop, "--proj-drop");
    if (c.reference == Reference::mha) {
        if (c.path != AttentionPath::standard)
            problems.push_back(Message(Msg::config_mha_path, {{"path", path_name(c.path)}}));
        if (c.proj_drop != 0.0f) problems.push_back(Message(Msg::config_mha_proj_drop));
        if (!c.qkv_bias) problems.push_back(Message(Msg::config_mha_bias));
    }
    return problems;
}

Message over_budget_problem(const AttentionConfig& c, std::uint64_t need, std::uint64_t memory_budget_bytes) {
    const std::string sizes = "B=" + std::to_string(c.batch) + " N=" + std::to_string(c.tokens) +
                              " C=" + std::to_string(c.dim) + " h=" + std::to_string(c.heads);
    if (c.path != AttentionPath::standard)
        return Message(Msg::config_over_budget_path, {{"sizes", sizes}, {"needs", format_bytes(need)}, {"path", path_name(c.path)},
                                                      {"budget", format_bytes(memory_budget_bytes)}});
    const std::uint64_t scores =
        mul(mul(mul(mul(c.batch, c.heads), c.tokens), c.tokens), (4 + c.masked()) * sizeof(float));
    return Message(Msg::config_over_budget, {{"sizes", sizes}, {"needs", format_bytes(need)},
                                             {"count", std::to_string(4 + c.masked())}, {"scores", format_bytes(scores)},
                                             {"budget", format_bytes(memory_budget_bytes)}});
}

}  // namespace attnscope
