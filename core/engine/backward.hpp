// The backward pass of one attention layer over its recorded forward Trace ("check gradient
// flow"). The loss is given by an upstream gradient G on the layer's output:
//
//     loss = sum(y * G)      y = self.proj_drop(self.proj(x)), the step out_drop, [B, N, C]
//
// so dloss/dy = G. By default G ~ N(0, 1), drawn from config.seed (stream kGradOutput): the same
// G on every machine. Every step gets its gradient dloss/d<step> (same shape and axes as the
// step), and the parameters get theirs, exactly as PyTorch's autograd computes them.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "pipeline.hpp"
#include "trace.hpp"

namespace attnscope {

// dloss/d<step> for one recorded step.
struct GradStep {
    std::string step;  // the forward step: "scores"
    std::string name;  // "grad_scores"
    Tensor tensor;     // same shape and axis labels as the step
    double norm = 0.0; // L2 norm, accumulated in double
    Stats stats;
};

// dloss/d<parameter>.
struct ParamGrad {
    std::string name;  // "qkv.weight", "qkv.bias", "proj.weight", "proj.bias" (timm's names)
    Array values;      // the parameter's shape
    double norm = 0.0;
};

struct Gradients {
    std::string grad_output_source;  // "N(0, 1) from seed 0" or the file G came from
    Tensor grad_output;              // G [B, N, C]
    std::vector<GradStep> steps;     // in the forward's order (attention_step_names())
    std::vector<ParamGrad> params;   // qkv.weight, qkv.bias (when there is one), proj.weight, proj.bias
    // Softmax saturation: rows (b, h, n) of attn whose largest weight exceeds 0.99. Such a row
    // passes (almost) no gradient back to its scores.
    std::size_t saturated_rows = 0, attn_rows = 0;
    // ||grad_scaled|| over the saturated rows and over the others: the saturated rows' share
    // of the gradient that reaches the scores is tiny even when they are most rows.
    double saturated_grad_norm = 0.0, other_grad_norm = 0.0;

    const GradStep* find(std::string_view step) const;   // by forward step name; nullptr when absent
    const GradStep* find(StepId step) const { return find(step_name(step)); }
    const ParamGrad* param(std::string_view name) const;  // nullptr when absent
};

// L2 norm of all values, accumulated in double.
double l2_norm(const Array& values);

// The default upstream gradient: N(0, 1) of shape [B, N, C] from config.seed.
Tensor default_grad_output(const AttentionConfig& config);

// Walks the forward steps in reverse, one backward op per step. forward must be a complete trace
// of run_attention with these weights (std::invalid_argument otherwise, e.g. a trace loaded from
// a file); grad_output must have out's shape [B, N, C] (ShapeError naming both shapes otherwise).
// hooks: progress after each gradient, cancel between them.
Gradients run_attention_backward(const Trace& forward, const AttentionWeights& weights, const Tensor& grad_output,
                                 const std::string& grad_output_source = "", const RunHooks& hooks = {});

}  // namespace attnscope
