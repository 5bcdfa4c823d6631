// attention_cost: one row per step of run_attention, from the config's sizes alone.
#include "cost.hpp"

#include <cstdio>

namespace attnscope {

const StepCost* CostTable::find(const std::string& step) const {
    for (const StepCost& s : steps)
        if (s.step == step) return &s;
    return nullptr;
}

std::string format_count(std::uint64_t n) {
    char text[32];
    const double v = static_cast<double>(n);
    if (n < 10000) std::snprintf(text, sizeof text, "%llu", static_cast<unsigned long long>(n));
    else if (v < 1e6) std::snprintf(text, sizeof text, "%.3g k", v / 1e3);
    else if (v < 1e9) std::snprintf(text, sizeof text, "%.3g M", v / 1e6);
    else if (v < 1e12) std::snprintf(text, sizeof text, "%.3g G", v / 1e9);
    else std::snprintf(text, sizeof text, "%.3g T", v / 1e12);
    return text;
}

CostTable attention_cost(const AttentionConfig& cfg) {
    using u64 = std::uint64_t;
    const u64 B = cfg.batch, N = cfg.tokens, C = cfg.dim, h = cfg.heads, c = cfg.head_dim();
    const bool bias = cfg.qkv_bias;
    const bool dropping_attn = cfg.training && cfg.attn_drop > 0.0f;
    const bool dropping_proj = cfg.training && cfg.proj_drop > 0.0f;
    const u64 BNC = B * N * C, BhNN = B * h * N * N;
    const std::string tokens_bytes = "4 B N C";
    const std::string map_bytes = "4 B h N^2";
    CostTable t;
    t.config = cfg;
    auto add = [&t](StepCost s) { t.steps.push_back(std::move(s)); };

    // x                                           [B, N, C]: given, not allocated by the layer
    add({"input", "", 0, "", 0, tokens_bytes, 4 * BNC, true});
    // self.qkv(x)                                 [B, N, 3C]
    add({"qkv", bias ? "3C^2 + 3C" : "3C^2", 3 * C * C + (bias ? 3 * C : 0),
         bias ? "2 B N C 3C + B N 3C = 6 B N C^2 + 3 B N C" : "2 B N C 3C = 6 B N C^2",
         6 * BNC * C + (bias ? 3 * BNC : 0), "4 B N 3C", 12 * BNC, false});
    // reshape, permute, unbind: views of qkv
    add({"qkv_split", "", 0, "", 0, "4 B N 3 h c = 4 B N 3C", 12 * BNC, true});
    add({"qkv_heads", "", 0, "", 0, "4 3 B h N c = 4 B N 3C", 12 * BNC, true});
    for (const char* s : {"q", "k", "v"}) add({s, "", 0, "", 0, "4 B h N c = 4 B N C", 4 * BNC, true});
    add({"k_t", "", 0, "", 0, "4 B h c N = 4 B N C", 4 * BNC, true});
    // q @ k_t                                     [B, h, N, N']: 2 c FLOPs per score, h c = C
    add({"scores", "", 0, "2 B h N N c = 2 B N^2 C  (any h)", 2 * B * h * N * N * c, map_bytes, 4 * BhNN, false});
    add({"scaled", "", 0, "B h N^2", BhNN, map_bytes, 4 * BhNN, false});
    add({"attn", "", 0, "5 B h N^2", 5 * BhNN, map_bytes, 4 * BhNN, false});
    add({"attn_drop", "", 0, dropping_attn ? "B h N^2" : "0 (eval: identity)", dropping_attn ? BhNN : 0, map_bytes,
         4 * BhNN, !dropping_attn});
    // attn @ v                                    [B, h, N, c]
    add({"context", "", 0, "2 B h N N c = 2 B N^2 C  (any h)", 2 * B * h * N * N * c, "4 B h N c = 4 B N C", 4 * BNC,
         false});
    add({"context_t", "", 0, "", 0, "4 B N h c = 4 B N C", 4 * BNC, true});
    // .reshape(B, N, C) copies unless the transposed tensor is still contiguous (h = 1 or N = 1)
    add({"merged", "", 0, "0 (a copy)", 0, tokens_bytes, 4 * BNC, h == 1 || N == 1});
    // self.proj(x)                                [B, N, C]
    add({"out", "C^2 + C", C * C + C, "2 B N C C + B N C = 2 B N C^2 + B N C", 2 * BNC * C + BNC, tokens_bytes,
         4 * BNC, false});
    add({"out_drop", "", 0, dropping_proj ? "B N C" : "0 (eval: identity)", dropping_proj ? BNC : 0, tokens_bytes,
         4 * BNC, !dropping_proj});

    for (const StepCost& s : t.steps) {
        t.params += s.params;
        t.flops += s.flops;
        t.new_bytes += s.new_bytes();
        t.all_bytes += s.bytes;
    }
    t.params_formula = bias ? "4C^2 + 4C  (qkv 3C^2 + 3C, proj C^2 + C)" : "4C^2 + C  (qkv 3C^2, proj C^2 + C)";
    t.flops_formula = std::string("8 B N C^2 + 4 B N^2 C + 6 B h N^2") + (bias ? " + 4 B N C" : " + B N C") +
                      (dropping_attn ? " + B h N^2" : "") + (dropping_proj ? " + B N C" : "");
    return t;
}

std::string format_cost_table(const CostTable& t) {
    const AttentionConfig& cfg = t.config;
    std::string out;
    char line[512];
    std::snprintf(line, sizeof line, "cost of one attention layer: B=%zu N=%zu C=%zu h=%zu (c=%zu)%s\n\n", cfg.batch,
                  cfg.tokens, cfg.dim, cfg.heads, cfg.head_dim(), cfg.qkv_bias ? ", qkv bias" : "");
    out += line;
    std::snprintf(line, sizeof line, "%-10s %-12s %10s  %-40s %10s  %-22s %10s\n", "step", "params", "", "FLOPs", "",
                  "memory (float32)", "");
    out += line;
    for (const StepCost& s : t.steps) {
        std::snprintf(line, sizeof line, "%-10s %-12s %10s  %-40s %10s  %-22s %10s%s\n", s.step.c_str(),
                      s.params_formula.c_str(), s.params ? format_count(s.params).c_str() : "",
                      s.flops_formula.c_str(), s.flops ? format_count(s.flops).c_str() : "", s.bytes_formula.c_str(),
                      format_bytes(s.bytes).c_str(),
                      s.step == "input" ? "  (the layer's input)" : s.view ? "  (view: no new memory)" : "");
        out += line;
    }
    std::snprintf(line, sizeof line,
                  "\nlayer: params %s = %s (%llu), FLOPs %s = %s, new memory %s (every step stored: %s)\n",
                  t.params_formula.c_str(), format_count(t.params).c_str(), static_cast<unsigned long long>(t.params),
                  t.flops_formula.c_str(), format_count(t.flops).c_str(), format_bytes(t.new_bytes).c_str(),
                  format_bytes(t.all_bytes).c_str());
    out += line;
    out += "\nThe parameter count does not depend on h: the heads split the same C columns of qkv and the same C\n"
           "rows of proj, so with C fixed, more heads means smaller heads (c = C / h), not more weights.\n"
           "QK^T costs 2 B h N^2 c = 2 B N^2 C FLOPs for any h, since h c = C; only the softmax and the scaling\n"
           "(B h N^2 elements) grow with h.\n";
    return out;
}

}  // namespace attnscope
