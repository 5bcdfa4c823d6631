// attention_cost: one row per step of run_attention, from the config's sizes alone.
#include "cost.hpp"

#include <cstdio>

#include "step_table.hpp"

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

namespace {

std::uint64_t numel(const Shape& shape) {
    std::uint64_t n = 1;
    for (std::size_t d : shape) n *= d;
    return n;
}

// PyTorch returns a view (no new memory) from a layout op, unless a reshape meets a permuted
// tensor that is no longer contiguous (the merge after .transpose(1, 2) copies unless h = 1 or
// N = 1); eval-mode dropout returns its input itself.
bool allocates_nothing(const StepInfo& step, const AttentionConfig& cfg, bool dropping) {
    switch (op_kind(step.op)) {
        case OpKind::input: return true;  // given, not allocated by the layer
        case OpKind::layout: {
            if (step.op != Op::reshape) return true;
            const StepInfo& from = *step_info(step.inputs.first);
            if (from.op != Op::permute && from.op != Op::transpose) return true;
            // A permuted contiguous tensor stays contiguous when its axes longer than 1 keep their order.
            const Shape shape = step_shape(from, cfg);
            int last = -1;
            for (std::size_t i = 0; i < shape.size(); ++i) {
                if (shape[i] == 1) continue;
                if (from.dims[i] < last) return false;
                last = from.dims[i];
            }
            return true;
        }
        default: return step.op == Op::dropout && !dropping;
    }
}

}  // namespace

CostTable attention_cost(const AttentionConfig& cfg) {
    CostTable t;
    t.config = cfg;
    for (const StepInfo& step : attention_steps(cfg.reference)) {
        if (step.only_masked) continue;  // the cost of the textbook layer
        const Shape shape = step_shape(step, cfg);
        const std::uint64_t out = numel(shape);
        // The dropout after the softmax is attn_drop's, the one after the projection proj_drop's.
        const float p = step.attention_map ? cfg.attn_drop : cfg.proj_drop;
        const bool dropping = cfg.training && p > 0.0f;
        const bool alt = step.cost.alt == CostAlt::qkv_bias ? cfg.qkv_bias : step.cost.alt == CostAlt::dropping && dropping;
        StepCost c;
        c.step = std::string(step.name);
        c.params_formula = std::string(alt ? step.cost.params_alt : step.cost.params);
        c.flops_formula = std::string(alt ? step.cost.flops_alt : step.cost.flops);
        c.bytes_formula = std::string(step.cost.bytes);
        c.bytes = 4 * out;
        c.view = allocates_nothing(step, cfg, dropping);
        switch (step.op) {
            case Op::linear: {  // x [..., in] @ W^T + b: 2 in FLOPs per output, 1 more with the bias
                const std::uint64_t in = step_shape(*step_info(step.inputs.first), cfg).back(), features = shape.back();
                const bool bias = step.cost.alt != CostAlt::qkv_bias || cfg.qkv_bias;  // proj always has one
                c.params = in * features + (bias ? features : 0);
                c.flops = 2 * out * in + (bias ? out : 0);
                break;
            }
            case Op::matmul:  // a [..., n, k] @ b [..., k, m]: 2 k FLOPs per output
                c.flops = 2 * out * step_shape(*step_info(step.inputs.first), cfg).back();
                break;
            case Op::scale: c.flops = out; break;
            case Op::softmax: c.flops = 5 * out; break;  // max, subtract, exp, sum, divide
            case Op::dropout: c.flops = dropping ? out : 0; break;
            default: break;
        }
        t.steps.push_back(std::move(c));
    }

    for (const StepCost& s : t.steps) {
        t.params += s.params;
        t.flops += s.flops;
        t.new_bytes += s.new_bytes();
        t.all_bytes += s.bytes;
    }
    const bool bias = cfg.qkv_bias;
    const bool dropping_attn = cfg.training && cfg.attn_drop > 0.0f;
    const bool dropping_proj = cfg.training && cfg.proj_drop > 0.0f;
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
