// The backward pass of a whole Vision Transformer over its recorded forward (run_vit, vit.hpp): the
// gradient of one class's logit per image with respect to every recorded step, as PyTorch's
// autograd computes it.
//
//     loss = sum over images b of logits[b, class_b]     class_b: the prediction, or the one asked for
//
// Every step of the embedding (pixels, the CNN stem's layers, patches, patch_embed, tokens, embed),
// of every block (norm1, attn_out, ls1, drop_path1, residual1, norm2, fc1, gelu, fc2, ls2,
// drop_path2, residual2, and the 17 steps of its attention) and of the head (norm, cls_out, logits)
// gets grad_<step> of the step's shape and axes. probs has none: it is computed from the logits, so
// the logit does not depend on it (autograd leaves its .grad None). DropPath uses the forward's
// masks (all ones in eval), LayerScale its gamma; BatchNorm is in eval (running statistics).
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

#include "backward.hpp"
#include "vit.hpp"

namespace attnscope {

// Gradient flow through one block ("check gradient flow"): L2 norms of the gradient, in double,
// where it enters and leaves each branch and along the residual stream. The backward pass runs from
// the block's output down, so a branch's gradient enters at its output and leaves at its input.
struct VitBlockFlow {
    double residual_out = 0.0;  // ||grad_residual2||: what reaches the block from above
    double residual_mid = 0.0;  // ||grad_residual1||: between the two branches
    double residual_in = 0.0;   // ||grad of the block's input||: what the block passes down
    double mlp_out = 0.0;       // ||grad_fc2||: entering the MLP (after LayerScale and DropPath, when present)
    double mlp_in = 0.0;        // ||norm2's backward||: what the MLP adds to the residual1 gradient
    double attn_out = 0.0;      // ||grad_attn_out||: entering the attention
    double attn_in = 0.0;       // ||norm1's backward||: what the attention adds to the input's gradient
};

struct VitBlockGradients {
    std::vector<GradStep> steps;  // the block's steps in forward order (vit_block_step_names(config))
    Gradients attention;          // the 17 steps of its attention and their parameters (backward.hpp)
    VitBlockFlow flow;

    const GradStep* find(std::string_view step) const;  // by forward step name; nullptr when absent
};

struct VitGradients {
    std::vector<std::size_t> classes;  // per image: the class whose logit was differentiated
    bool predicted = true;             // the classes are the predictions (else one class was asked for)
    std::vector<GradStep> embed;       // pixels, (stem<i>.conv, .bn, .relu,) patches, patch_embed, tokens, embed
    std::vector<VitBlockGradients> blocks;
    std::vector<GradStep> head;  // norm, cls_out, logits

    const GradStep* find(std::string_view step) const;  // an embedding or head step; nullptr when absent
};

// The class of each image whose logit the backward differentiates: target_class for every image, or
// each image's prediction (the largest logit, the lower index on ties). Throws ConfigError when the
// model has no classifier or target_class is not one of its classes.
std::vector<std::size_t> backward_classes(const VitTrace& forward, std::optional<std::size_t> target_class);

// Walks the recorded forward from the head down, one backward op (core/engine/ops.hpp, core/vit/
// stem.hpp, each right under its forward) per step. forward must be run_vit(model, ...) of this model.
// hooks.cancel is checked between blocks.
VitGradients run_vit_backward(const VitModel& model, const VitTrace& forward,
                              std::optional<std::size_t> target_class = std::nullopt, const RunHooks& hooks = {});

}  // namespace attnscope
