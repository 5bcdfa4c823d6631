// run_attention_backward: the reference's ViTAttention.forward read bottom to top, one backward
// op (core/engine/ops.hpp, right under its forward) per recorded step.
//
//     dy = G                                            out_drop     [B, N, C]
//     d out      = proj_drop backward (same mask)       out          [B, N, C]
//     d merged, d proj.weight, d proj.bias = proj backward          merged       [B, N, C]
//     d context_t = reshape back, d context = transpose back         [B, N, h, c], [B, h, N, c]
//     d attn_drop, d v = (attn @ v) backward                          [B, h, N, N'], [B, h, N', c]
//     d attn     = attn_drop backward (same mask)
//     d scaled   = softmax backward: attn * (d attn - rowsum(d attn * attn))
//     d scores   = d scaled * scale
//     d q, d k_t = (q @ k_t) backward;  d k = transpose back
//     d qkv_heads = the three slices d q, d k, d v stacked back (unbind backward)
//     d qkv_split = permute back, d qkv = reshape back                [B, N, 3, h, c], [B, N, 3C]
//     d input, d qkv.weight, d qkv.bias = qkv backward                [B, N, C]
#include "backward.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <stdexcept>

#include "ops.hpp"
#include "random.hpp"

namespace attnscope {

double l2_norm(const Array& values) {
    double sum = 0.0;
    for (const float v : values) sum += static_cast<double>(v) * v;
    return std::sqrt(sum);
}

const GradStep* Gradients::find(std::string_view step) const {
    for (const auto& g : steps)
        if (g.step == step) return &g;
    return nullptr;
}

const ParamGrad* Gradients::param(std::string_view name) const {
    for (const auto& p : params)
        if (p.name == name) return &p;
    return nullptr;
}

Tensor default_grad_output(const AttentionConfig& cfg) { return seeded_normal_bnc(cfg, kGradOutput); }

Gradients run_attention_backward(const Trace& forward, const AttentionWeights& w, const Tensor& grad_output,
                                 const std::string& grad_output_source, const RunHooks& hooks) {
    if (forward.config.path != AttentionPath::standard)
        throw ConfigError(Message(Msg::backward_path));
    std::vector<std::string> names;
    for (const StepInfo& s : attention_steps(forward.config.reference))
        if (!s.only_masked || forward.find(StepId::masked)) names.emplace_back(s.name);
    for (const auto& name : names) {
        const Step* s = forward.find(name);
        if (!s || s->origin != StepOrigin::Computed)
            throw ConfigError(Message(Msg::backward_missing_step, {{"step", name}}));
    }
    const AttentionConfig& cfg = forward.config;
    const bool has_out_drop = forward.find(StepId::out_drop) != nullptr;  // MultiHeadAttention ends at out
    const Shape out_shape = forward.at(has_out_drop ? StepId::out_drop : StepId::out).shape();
    if (shape_of(grad_output.values) != out_shape)
        throw ShapeError(Message(Msg::backward_grad_output,
                                 {{"shape", format_shape(shape_of(grad_output.values))}, {"expected", format_shape(out_shape)}}));
    auto T = [&](StepId step) -> const Tensor& { return forward.at(step).tensor(); };

    Gradients g;
    g.grad_output_source = grad_output_source;
    g.grad_output = Tensor{grad_output.values, {"B", "N", "C"}};
    // Filled from out_drop back to input. A deque, as the forward's Steps: the references record()
    // hands out stay valid while later gradients are added.
    std::deque<GradStep> reversed;
    auto record = [&](StepId step, Tensor grad) -> const Tensor& {
        if (hooks.cancel && hooks.cancel->load()) throw Cancelled();
        GradStep gs;
        gs.step = step_name(step);
        gs.name = "grad_" + gs.step;
        grad.axes = forward.at(step).axes();  // the gradient lives on the step's axes
        gs.tensor = std::move(grad);
        gs.norm = l2_norm(gs.tensor.values);
        gs.stats = compute_stats(gs.tensor.values);
        reversed.push_back(std::move(gs));
        if (hooks.progress) hooks.progress(reversed.size(), names.size());
        return reversed.back().tensor;
    };
    auto param = [&](const char* name, Array values) {
        const double norm = l2_norm(values);
        g.params.push_back({name, std::move(values), norm});
    };

    // loss = sum(out_drop * G), or sum(out * G) without an output dropout   [B, N, C]
    const Tensor* d_out = nullptr;
    if (has_out_drop) {
        const Tensor& d_out_drop = record(StepId::out_drop, g.grad_output);
        // self.proj_drop(x): the forward's mask, drawn again from its stream  [B, N, C]
        Rng proj_rng(cfg.seed, kProjDrop);
        d_out = &record(StepId::out, dropout_backward(d_out_drop, cfg.proj_drop, cfg.training, proj_rng));
    } else {
        d_out = &record(StepId::out, g.grad_output);
    }
    // self.proj(x)                                                            [B, N, C]
    LinearGrads proj = linear_backward(T(StepId::merged), w.proj_weight, true, *d_out);
    const Tensor& d_merged = record(StepId::merged, std::move(proj.x));
    // .reshape(B, N, C)                                                       [B, N, h, c]
    const Tensor& d_context_t = record(StepId::context_t, reshape_backward(d_merged, T(StepId::context_t)));
    // .transpose(1, 2)                                                        [B, h, N, c]
    const Tensor& d_context = record(StepId::context, transpose_backward(d_context_t, 1, 2));
    // attn @ v                                                  [B, h, N, N'], [B, h, N', c]
    MatmulGrads av = matmul_backward(T(StepId::attn_drop), T(StepId::v), d_context);
    const Tensor& d_attn_drop = record(StepId::attn_drop, std::move(av.a));
    // self.attn_drop(attn)                                                    [B, h, N, N']
    Rng attn_rng(cfg.seed, kAttnDrop);
    const Tensor& d_attn = record(StepId::attn, dropout_backward(d_attn_drop, cfg.attn_drop, cfg.training, attn_rng));
    // attn.softmax(dim=-1)                                                    [B, h, N, N']
    const Tensor* d_logits = &record(forward.find(StepId::masked) ? StepId::masked : StepId::scaled,
                                     softmax_last_backward(T(StepId::attn), d_attn));
    // attn.masked_fill(~keep, -inf): hidden scores get no gradient; softmax already gave them 0
    // (their weight is 0), so the gradient passes through unchanged           [B, h, N, N']
    if (forward.find(StepId::masked)) d_logits = &record(StepId::scaled, Tensor{d_logits->values, {}});
    const Tensor& d_scaled = *d_logits;
    // * self.scale                                                            [B, h, N, N']
    const Tensor& d_scores = record(StepId::scores, scale_backward(d_scaled, attention_scale(cfg)));
    // q @ k.transpose(-2, -1)                                     [B, h, N, c], [B, h, c, N']
    MatmulGrads qk = matmul_backward(T(StepId::q), T(StepId::k_t), d_scores);
    const Tensor& d_k_t = record(StepId::k_t, std::move(qk.b));
    // k.transpose(-2, -1)                                                     [B, h, N', c]
    Tensor d_k_values = transpose_backward(d_k_t, 2, 3);
    // q, k, v = qkv.unbind(0): each slice's gradient goes back into its slot  [3, B, h, N, c]
    const Tensor& d_v = record(StepId::v, std::move(av.b));
    const Tensor& d_k = record(StepId::k, std::move(d_k_values));
    const Tensor& d_q = record(StepId::q, std::move(qk.a));
    const Tensor& qkv_heads = T(StepId::qkv_heads);
    Tensor d_heads = select_backward(d_q, qkv_heads, 0, 0);
    d_heads.values += select_backward(d_k, qkv_heads, 0, 1).values;
    d_heads.values += select_backward(d_v, qkv_heads, 0, 2).values;
    const Tensor& d_qkv_heads = record(StepId::qkv_heads, std::move(d_heads));
    // .permute(2, 0, 3, 1, 4)                                                 [B, N, 3, h, c]
    const Tensor& d_qkv_split = record(StepId::qkv_split, permute_backward(d_qkv_heads, {2, 0, 3, 1, 4}));
    // .reshape(B, N, 3, h, c)                                                 [B, N, 3C]
    const Tensor& d_qkv = record(StepId::qkv, reshape_backward(d_qkv_split, T(StepId::qkv)));
    // self.qkv(x)                                                             [B, N, C]
    LinearGrads qkv = linear_backward(T(StepId::input), w.qkv_weight, w.qkv_bias.has_value(), d_qkv);
    record(StepId::input, std::move(qkv.x));

    param("qkv.weight", std::move(qkv.weight));
    if (w.qkv_bias) param("qkv.bias", std::move(qkv.bias));
    param("proj.weight", std::move(proj.weight));
    param("proj.bias", std::move(proj.bias));

    const Array& attn = T(StepId::attn).values;  // [B, h, N, N']
    const std::size_t keys = attn.dimension() ? attn.shape().back() : 0;
    g.attn_rows = keys ? attn.size() / keys : 0;
    const float* d_scaled_values = d_scaled.values.data();
    double saturated_sq = 0.0, other_sq = 0.0;
    for (std::size_t r = 0; r < g.attn_rows; ++r) {
        const bool saturated = *std::max_element(attn.data() + r * keys, attn.data() + (r + 1) * keys) > 0.99f;
        g.saturated_rows += saturated;
        double sq = 0.0;
        for (std::size_t j = 0; j < keys; ++j) sq += double(d_scaled_values[r * keys + j]) * d_scaled_values[r * keys + j];
        (saturated ? saturated_sq : other_sq) += sq;
    }
    g.saturated_grad_norm = std::sqrt(saturated_sq);
    g.other_grad_norm = std::sqrt(other_sq);

    // Forward order, like the trace.
    for (const auto& name : names)
        for (auto& r : reversed)
            if (r.step == name) g.steps.push_back(std::move(r));
    return g;
}

}  // namespace attnscope
