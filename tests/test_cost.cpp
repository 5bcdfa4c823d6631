// Tests of core/teach/cost: the formulas against a count over the ops the recorded pipeline actually ran.
//
// The count reads only what run_attention recorded (each step's op kind, its operands' shapes,
// its tensor, whether it is a view) and the weights' array sizes; it shares no code with the
// formulas.
#include <doctest/doctest.h>

#include "cost.hpp"
#include "pipeline.hpp"
#include "run.hpp"

using namespace attnscope;

namespace {

std::uint64_t numel(const Shape& s) {
    std::uint64_t n = 1;
    for (std::size_t d : s) n *= d;
    return n;
}

// FLOPs of one recorded step from its op and operand shapes.
std::uint64_t counted_flops(const Step& step, bool bias) {
    const std::uint64_t out = numel(step.shape());
    if (step.op == "linear") {  // x [..., in] @ W^T [in, out]: 2 in per output (+ 1 for the bias)
        const Shape& w = step.operands.at(1).shape;
        return 2 * out * w[1] + (bias ? out : 0);
    }
    if (step.op == "matmul") {  // a [..., n, k] @ b [..., k, m]
        const Shape& a = step.operands.at(0).shape;
        return 2 * out * a.back();
    }
    if (step.op == "scale") return out;
    if (step.op == "softmax") return 5 * out;
    if (step.op == "dropout") return step.is_view ? 0 : out;
    return 0;  // input, reshape, permute, unbind, transpose
}

AttentionConfig config(std::size_t B, std::size_t N, std::size_t C, std::size_t h, bool bias) {
    AttentionConfig cfg;
    cfg.batch = B;
    cfg.tokens = N;
    cfg.dim = C;
    cfg.heads = h;
    cfg.qkv_bias = bias;
    return cfg;
}

}  // namespace

TEST_CASE("every step's FLOPs and bytes and views match a count over the recorded run") {
    for (AttentionConfig cfg : {config(2, 5, 24, 4, false), config(1, 9, 32, 8, true), config(3, 4, 12, 1, true),
                                config(2, 7, 16, 2, false)}) {
        for (bool training : {false, true}) {
            cfg.training = training;
            cfg.attn_drop = cfg.proj_drop = training ? 0.25f : 0.0f;
            CAPTURE(cfg.heads);
            CAPTURE(training);
            const Trace trace = run_attention(cfg);
            const CostTable table = attention_cost(cfg);
            REQUIRE(table.steps.size() == trace.steps.size());
            std::uint64_t flops = 0, new_bytes = 0;
            for (std::size_t i = 0; i < trace.steps.size(); ++i) {
                const Step& s = trace.steps[i];
                const StepCost& c = table.steps[i];
                CAPTURE(s.name);
                REQUIRE(c.step == s.name);
                const bool bias = s.name == "out" || (s.name == "qkv" && cfg.qkv_bias);
                CHECK(c.flops == counted_flops(s, bias));
                CHECK(c.bytes == 4 * s.tensor().values.size());
                if (s.name != "input") CHECK(c.view == s.is_view);
                flops += counted_flops(s, bias);
                new_bytes += s.is_view || s.name == "input" ? 0 : 4 * s.tensor().values.size();
            }
            CHECK(table.flops == flops);
            CHECK(table.new_bytes == new_bytes);
            const AttentionWeights w = default_weights(cfg);
            const std::uint64_t params =
                w.qkv_weight.size() + (w.qkv_bias ? w.qkv_bias->size() : 0) + w.proj_weight.size() + w.proj_bias.size();
            CHECK(table.params == params);
        }
    }
}

TEST_CASE("with C fixed the parameters do not change with h and QK^T costs 2 B N^2 C for any h") {
    const std::uint64_t B = 2, N = 10, C = 48;
    for (std::size_t h : {1, 2, 3, 4, 6, 8, 12, 16, 24, 48}) {
        CAPTURE(h);
        const CostTable t = attention_cost(config(B, N, C, h, true));
        CHECK(t.params == 4 * C * C + 4 * C);
        CHECK(t.find("scores")->flops == 2 * B * N * N * C);
        CHECK(t.find("context")->flops == 2 * B * N * N * C);
        CHECK(t.find("scores")->bytes == 4 * B * h * N * N);  // the maps do grow with h
    }
    CHECK(attention_cost(config(1, 197, 768, 12, true)).params == 2362368);  // timm ViT-B attn: 4 * 768^2 + 4 * 768
}

TEST_CASE("the table text names every step and the h-independence") {
    const std::string text = format_cost_table(attention_cost(config(2, 16, 768, 8, false)));
    for (const char* step : {"qkv", "qkv_heads", "scores", "attn", "merged", "out"})
        CHECK(text.find(step) != std::string::npos);
    CHECK(text.find("does not depend on h") != std::string::npos);
    CHECK(text.find("2 B N^2 C") != std::string::npos);
    CHECK(format_count(2362368) == "2.36 M");
}
