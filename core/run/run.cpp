#include "run.hpp"

#include <stdexcept>
#include <utility>

#include "backward.hpp"
#include "beyond.hpp"
#include "memory_budget.hpp"

namespace attnscope {

std::vector<Message> validate(const AttentionConfig& c, std::uint64_t memory_budget_bytes) {
    std::vector<Message> problems = validate_layer(c);
    if (problems.empty()) validate_beyond(c, problems);
    if (problems.empty()) {
        const std::uint64_t need = trace_bytes(c);
        if (need > memory_budget_bytes) problems.push_back(over_budget_problem(c, need, memory_budget_bytes));
    }
    return problems;
}

std::uint64_t trace_bytes(const AttentionConfig& c) {
    return c.path == AttentionPath::standard ? textbook_trace_bytes(c) : beyond_trace_bytes(c);
}

namespace {

void check_run_inputs(const AttentionConfig& cfg, const AttentionWeights& w, const Tensor& x) {
    const auto problems = validate(cfg, UINT64_MAX);
    if (!problems.empty()) throw ConfigError(problems.front());
    const Shape xs = shape_of(x.values);
    if (xs != Shape{cfg.batch, cfg.tokens, cfg.dim})
        throw ShapeError(Message(Msg::run_input_shape,
                                 {{"shape", format_shape(xs)}, {"expected", format_shape({cfg.batch, cfg.tokens, cfg.dim})}}));
    const Message weights_problem = check_attention_weights(w, cfg.dim);
    if (!weights_problem.empty()) throw ShapeError(weights_problem);
}

}  // namespace

void record_attention(Trace& trace, const AttentionConfig& cfg, const AttentionWeights& w,
                      std::shared_ptr<const Tensor> x_in, const RunHooks& hooks) {
    check_run_inputs(cfg, w, *x_in);
    if (cfg.path == AttentionPath::standard) record_textbook(trace, cfg, w, std::move(x_in), hooks);
    else trace = run_beyond(cfg, w, *x_in, hooks);
}

void record_attention(Trace& trace, const AttentionConfig& cfg, const AttentionWeights& w, const Tensor& x_in,
                      const RunHooks& hooks) {
    record_attention(trace, cfg, w, std::make_shared<const Tensor>(Tensor{x_in.values, {"B", "N", "C"}}), hooks);
}

Trace run_attention(const AttentionConfig& cfg, const AttentionWeights& w, std::shared_ptr<const Tensor> x_in,
                    const RunHooks& hooks) {
    Trace trace;
    record_attention(trace, cfg, w, std::move(x_in), hooks);
    return trace;
}

Trace run_attention(const AttentionConfig& cfg, const AttentionWeights& w, const Tensor& x_in, const RunHooks& hooks) {
    Trace trace;
    record_attention(trace, cfg, w, x_in, hooks);
    return trace;
}

Trace run_attention(const AttentionConfig& cfg, const RunHooks& hooks) {
    return run_attention(cfg, default_weights(cfg), default_input(cfg), hooks);
}

Trace run_attention_with_gradients(const AttentionConfig& cfg, const RunHooks& hooks) {
    const AttentionWeights weights = default_weights(cfg);
    const Tensor input = default_input(cfg);
    // Progress: the forward is the first half, the backward the second.
    RunHooks half = hooks;
    if (hooks.progress)
        half.progress = [&](std::size_t done, std::size_t total) { hooks.progress(done, 2 * total); };
    Trace trace = run_attention(cfg, weights, input, half);
    if (cfg.path != AttentionPath::standard) return trace;  // flash, KV cache, windows: no backward
    if (hooks.progress)
        half.progress = [&](std::size_t done, std::size_t total) { hooks.progress(total + done, 2 * total); };
    trace.gradients = std::make_shared<const Gradients>(run_attention_backward(
        trace, weights, default_grad_output(cfg), "N(0, 1) from seed " + std::to_string(cfg.seed), half));
    return trace;
}

}  // namespace attnscope
