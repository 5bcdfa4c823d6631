// run_vit_backward: run_vit (vit.cpp) read bottom to top, one backward op per recorded step.
//
//     d logits  = one-hot of each image's class                          [B, K]
//     d cls_out = head backward (DeiT distilled: half of it, and half through head_dist on x[:, 1])  [B, D]
//     d norm    = the class token's row (select backward)                [B, N, D]
//     d x       = norm backward                                          [B, N, D]
//     per block, last to first (x = the block's input):
//       d residual2 = d x;  d fc2 = d residual2 through drop_path2 and ls2 (when recorded)
//       d gelu = fc2 backward, d fc1 = gelu backward, d norm2 = fc1 backward
//       d residual1 = d residual2 + norm2 backward                        (the MLP's branch joins)
//       d attn_out = d residual1 through drop_path1 and ls1; the attention's 17 steps (backward.cpp)
//       d norm1 = the attention's d input;  d x = d residual1 + norm1 backward
//     d embed = d x, d tokens = d embed (the position embedding is added), d patch_embed = the
//     patches' rows of d tokens (cat backward), d patches = patch_embed backward, d pixels =
//     patchify backward; a CNN stem: the rows back to channels, then per stage, last to first,
//     relu, BatchNorm (eval) and conv backward.
#include "vit_backward.hpp"

#include <deque>
#include <stdexcept>
#include <string>

#include "ops.hpp"
#include "stem.hpp"

namespace attnscope {

namespace {

// The gradients of one part of the trace, recorded from its last step to its first. A deque: the
// references record() hands out stay valid while later gradients are added.
class GradRecorder {
public:
    explicit GradRecorder(const RunHooks& hooks) : hooks_(hooks) {}

    const Tensor& record(const Step& step, Tensor grad) {
        if (hooks_.cancel && hooks_.cancel->load()) throw Cancelled();
        GradStep g;
        g.step = step.name;
        g.name = "grad_" + step.name;
        grad.axes = step.axes();  // the gradient lives on the step's axes
        g.tensor = std::move(grad);
        g.norm = l2_norm(g.tensor.values);
        g.stats = compute_stats(g.tensor.values);
        reversed_.push_back(std::move(g));
        return reversed_.back().tensor;
    }

    // The gradients in the order of the forward's steps.
    std::vector<GradStep> in_order_of(const Steps& steps) {
        std::vector<GradStep> out;
        for (const Step& s : steps)
            for (GradStep& g : reversed_)
                if (g.step == s.name) out.push_back(std::move(g));
        return out;
    }

private:
    const RunHooks& hooks_;
    std::deque<GradStep> reversed_;
};

const DropPathRecord& drop_path_of(const VitBlockTrace& blk, VitStep step) {
    const std::string name = vit_step_name(step);
    for (const DropPathRecord& r : blk.drop_paths)
        if (r.step == name) return r;
    throw std::out_of_range("the block recorded no " + name);
}

// One branch's end, backward: grad_end (of the step the residual adds) through [drop_path<k>] and
// [ls<k>] down to the branch's own output `branch`. Returns the gradient of `branch`'s tensor.
Tensor branch_end_backward(GradRecorder& rec, const VitConfig& cfg, const VitBlockTrace& blk, int k,
                           const Array& gamma, const Step& branch, Tensor grad_end) {
    const VitStep ls = k == 1 ? VitStep::ls1 : VitStep::ls2, dp = k == 1 ? VitStep::drop_path1 : VitStep::drop_path2;
    Tensor g = std::move(grad_end);
    if (cfg.records_drop_path()) {
        // self.drop_path<k>(x): the forward's mask (all ones in eval)          [B, N, D]
        const Tensor& d_dp = rec.record(blk.at(dp), std::move(g));
        g = drop_path_backward(d_dp, drop_path_of(blk, dp).mask);
    }
    if (cfg.layer_scale) {
        // self.ls<k>(x) = x * gamma                                             [B, N, D]
        const Tensor& d_ls = rec.record(blk.at(ls), std::move(g));
        g = layer_scale_backward(branch.tensor(), gamma, d_ls).x;
    }
    return g;
}

// One block, backward: grad_out is the gradient of its output (residual2); returns the gradient of
// its input x.
Tensor block_backward(const VitConfig& cfg, const VitBlockWeights& w, const VitBlockTrace& blk, const Tensor& x,
                      const Tensor& grad_out, VitBlockGradients& out, const RunHooks& hooks) {
    GradRecorder rec(hooks);
    const float eps = cfg.layer_norm_eps();
    const Step &attn_out = blk.at(VitStep::attn_out), &residual1 = blk.at(VitStep::residual1);
    const Step &norm2 = blk.at(VitStep::norm2), &fc1 = blk.at(VitStep::fc1), &gelu_step = blk.at(VitStep::gelu);
    const Step& fc2 = blk.at(VitStep::fc2);

    // x = x + self.mlp(self.norm2(x))                                         [B, N, D]
    const Tensor& d_residual2 = rec.record(blk.at(VitStep::residual2), grad_out);
    // [self.drop_path2], [self.ls2]                                           [B, N, D]
    const Tensor& d_fc2 = rec.record(fc2, branch_end_backward(rec, cfg, blk, 2, w.ls2_gamma, fc2, d_residual2));
    // self.mlp.fc2(x)                                                         [B, N, M]
    const Tensor& d_gelu = rec.record(gelu_step, linear_backward(gelu_step.tensor(), w.fc2_weight, true, d_fc2).x);
    // self.mlp.act(x)                                                         [B, N, M]
    const Tensor& d_fc1 = rec.record(fc1, gelu_backward(fc1.tensor(), d_gelu));
    // self.mlp.fc1(x)                                                         [B, N, D]
    const Tensor& d_norm2 = rec.record(norm2, linear_backward(norm2.tensor(), w.fc1_weight, true, d_fc1).x);
    // self.norm2(x): the MLP's share of residual1's gradient                  [B, N, D]
    const Tensor mlp_in = layer_norm_backward(residual1.tensor(), w.norm2_weight, eps, d_norm2).x;

    // x = x + self.attn(self.norm1(x)): the residual's gradient plus the MLP's  [B, N, D]
    const Tensor& d_residual1 = rec.record(residual1, add(d_residual2, mlp_in, "grad_residual2", "mlp"));
    // [self.drop_path1], [self.ls1]                                           [B, N, D]
    const Tensor& d_attn_out =
        rec.record(attn_out, branch_end_backward(rec, cfg, blk, 1, w.ls1_gamma, attn_out, d_residual1));
    // self.attn(x): its 17 steps, out_drop (attn_out's values) down to input (norm1's)   [B, N, D]
    out.attention = run_attention_backward(blk.attention, w.attn, d_attn_out, "grad_attn_out", RunHooks{{}, hooks.cancel, {}});
    const Tensor& d_norm1 = rec.record(blk.at(VitStep::norm1), out.attention.find(StepId::input)->tensor);
    // self.norm1(x): the attention's share of the input's gradient            [B, N, D]
    const Tensor attn_in = layer_norm_backward(x, w.norm1_weight, eps, d_norm1).x;
    Tensor d_x = add(d_residual1, attn_in, "grad_residual1", "attn");

    out.flow = {l2_norm(d_residual2.values), l2_norm(d_residual1.values), l2_norm(d_x.values), l2_norm(d_fc2.values),
                l2_norm(mlp_in.values),      l2_norm(d_attn_out.values),  l2_norm(attn_in.values)};
    out.steps = rec.in_order_of(blk.steps);
    return d_x;
}

// The CNN stem, backward: grad_features of the last ReLU's map; records every stage's steps and
// returns the gradient of the pixels.                                       [B, 3, H, W]
Tensor stem_backward(GradRecorder& rec, const VitConfig& cfg, const VitWeights& w, const VitTrace& t,
                     Tensor grad_features) {
    const std::size_t k = cfg.stem_kernel;
    Tensor g = std::move(grad_features);
    for (std::size_t i = cfg.stem_channels.size(); i-- > 0;) {
        const StemStageWeights& st = w.stem[i];
        const Step& relu_step = t.at(vit_step_name(VitStep::stem_relu, i));
        const Step& bn = t.at(vit_step_name(VitStep::stem_bn, i));
        const Step& conv = t.at(vit_step_name(VitStep::stem_conv, i));
        const Step& input = i == 0 ? t.at(VitStep::pixels) : t.at(vit_step_name(VitStep::stem_relu, i - 1));
        // nn.ReLU()                                                           [B, C, h, w]
        const Tensor& d_relu = rec.record(relu_step, std::move(g));
        // nn.BatchNorm2d(C) in eval                                           [B, C, h, w]
        const Tensor& d_bn = rec.record(bn, relu_backward(relu_step.tensor(), d_relu));
        // nn.Conv2d(C_in, C, k, stride=2, padding=k/2)                        [B, C, h, w]
        const Tensor& d_conv = rec.record(conv, batch_norm_eval_backward(st.bn_weight, st.bn_var, 1e-5f, d_bn));
        g = conv2d_backward(input.tensor(), st.conv_weight, cfg.stem_conv_bias, k, 2, k / 2, d_conv).x;
    }
    return g;
}

}  // namespace

const GradStep* VitBlockGradients::find(std::string_view step) const {
    for (const GradStep& g : steps)
        if (g.step == step) return &g;
    return nullptr;
}

const GradStep* VitGradients::find(std::string_view step) const {
    for (const auto* part : {&embed, &head})
        for (const GradStep& g : *part)
            if (g.step == step) return &g;
    return nullptr;
}

std::vector<std::size_t> backward_classes(const VitTrace& forward, std::optional<std::size_t> target_class) {
    if (!forward.has_head()) throw ConfigError(Message(Msg::vit_backward_no_head));
    const Array& logits = forward.logits();  // [B, K]
    const std::size_t B = logits.shape()[0], K = logits.shape()[1];
    if (target_class && *target_class >= K)
        throw ConfigError(Message(Msg::vit_backward_class, {{"class", std::to_string(*target_class)},
                                                            {"classes", std::to_string(K)},
                                                            {"last", std::to_string(K - 1)}}));
    std::vector<std::size_t> classes(B, target_class.value_or(0));
    if (!target_class)
        for (std::size_t b = 0; b < B; ++b)
            for (std::size_t j = 1; j < K; ++j)
                if (logits(b, j) > logits(b, classes[b])) classes[b] = j;
    return classes;
}

VitGradients run_vit_backward(const VitModel& model, const VitTrace& t, std::optional<std::size_t> target_class,
                              const RunHooks& hooks) {
    const VitConfig& cfg = model.config;
    const VitWeights& w = model.weights;
    VitGradients out;
    out.classes = backward_classes(t, target_class);
    out.predicted = !target_class;
    const bool distilled = cfg.family == VitFamily::TimmDistilled;
    const float eps = cfg.layer_norm_eps();
    const Step &norm = t.at(VitStep::norm), &cls_out = t.at(VitStep::cls_out), &logits = t.at(VitStep::logits);
    const std::size_t B = t.batch, K = cfg.classes;

    // loss = sum_b logits[b, class_b]                                         [B, K]
    GradRecorder head(hooks);
    Tensor one_hot{make_array({B, K}), {}};
    one_hot.values.fill(0.0f);
    for (std::size_t b = 0; b < B; ++b) one_hot.values(b, out.classes[b]) = 1.0f;
    const Tensor& d_logits = head.record(logits, std::move(one_hot));
    // self.head(x) (DeiT distilled: (self.head(x[:, 0]) + self.head_dist(x[:, 1])) / 2)   [B, D]
    Tensor d_cls = linear_backward(cls_out.tensor(), w.head_weight, true, d_logits).x;
    if (distilled) d_cls = scale(d_cls, 0.5f);
    const Tensor& d_cls_out = head.record(cls_out, std::move(d_cls));
    // x[:, 0] (and DeiT's x[:, 1])                                            [B, N, D]
    Tensor d_norm = select_backward(d_cls_out, norm.tensor(), 1, 0);
    if (distilled) {
        const Tensor dist = scale(linear_backward(select(norm.tensor(), 1, 1), w.head_dist_weight, true, d_logits).x, 0.5f);
        d_norm.values += select_backward(dist, norm.tensor(), 1, 1).values;
    }
    const Tensor& d_norm_ref = head.record(norm, std::move(d_norm));
    // self.norm(x)                                                            [B, N, D]
    const Tensor& last = cfg.depth ? t.blocks.back().at(VitStep::residual2).tensor() : t.at(VitStep::embed).tensor();
    Tensor d_x = layer_norm_backward(last, w.norm_weight, eps, d_norm_ref).x;
    out.head = head.in_order_of(t.head);

    // for blk in reversed(self.blocks)                                        [B, N, D]
    out.blocks.resize(cfg.depth);
    for (std::size_t i = cfg.depth; i-- > 0;) {
        const Tensor& x = i == 0 ? t.at(VitStep::embed).tensor() : t.blocks[i - 1].at(VitStep::residual2).tensor();
        d_x = block_backward(cfg, w.blocks[i], t.blocks[i], x, d_x, out.blocks[i], hooks);
    }

    GradRecorder embed(hooks);
    // x = x + self.pos_embed                                                  [B, N, D]
    const Tensor& d_embed = embed.record(t.at(VitStep::embed), std::move(d_x));
    const Tensor& d_tokens = embed.record(t.at(VitStep::tokens), d_embed);
    // torch.cat((self.cls_token.expand(B, -1, -1), x), dim=1): the patches' rows   [B, P, D]
    const Step& patch_embed = t.at(VitStep::patch_embed);
    const Tensor& d_patch_embed =
        embed.record(patch_embed, concat_backward(d_tokens, 1, cfg.prefix_tokens()).b);
    // self.patch_embed.proj as a linear over the patches (or the stem's channels)   [B, P, 3*p*p] or [B, P, C]
    const Step& patches = t.at(VitStep::patches);
    const Tensor& d_patches =
        embed.record(patches, linear_backward(patches.tensor(), w.patch_weight, true, d_patch_embed).x);
    const Step& pixels = t.at(VitStep::pixels);
    if (cfg.has_stem()) {
        // x.flatten(2).transpose(1, 2), then the stem's stages                [B, 3, H, W]
        const Step& features = t.at(vit_step_name(VitStep::stem_relu, cfg.stem_channels.size() - 1));
        embed.record(pixels, stem_backward(embed, cfg, w, t, channels_to_tokens_backward(d_patches, features.shape())));
    } else {
        // x.unfold(...).permute(...).reshape(B, P, 3*p*p)                     [B, 3, H, W]
        embed.record(pixels, patchify_backward(d_patches, pixels.shape(), cfg.patch_size));
    }
    out.embed = embed.in_order_of(t.embed);
    return out;
}

}  // namespace attnscope
