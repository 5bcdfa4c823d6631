// record_textbook: the reference's ViTAttention.forward, one recorded step per line of PyTorch.
//
//     qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, C // self.num_heads)
//     qkv = qkv.permute(2, 0, 3, 1, 4)
//     q, k, v = qkv.unbind(0)
//     attn = (q @ k.transpose(-2, -1)) * self.scale
//     attn = attn.softmax(dim=-1)
//     attn = self.attn_drop(attn)
//     x = (attn @ v).transpose(1, 2).reshape(B, N, C)
//     x = self.proj(x)
//     x = self.proj_drop(x)
#include "pipeline.hpp"

#include <cmath>
#include <cstdio>
#include <optional>
#include <stdexcept>

#include "checks.hpp"
#include "fused.hpp"
#include "mask.hpp"
#include "ops.hpp"
#include "random.hpp"
#include "recorder.hpp"
#include "torch_layout.hpp"
#include "views.hpp"

namespace attnscope {

namespace {

// Random streams of one seed; fixed numbers so that a seed means the same thing forever.

Array uniform_array(const Shape& shape, float bound, std::uint64_t seed, Stream stream) {
    Array a = make_array(shape);
    Rng rng(seed, stream);
    for (float& v : a) v = rng.uniform(-bound, bound);
    return a;
}

Message expect_shape(const std::string& name, const Shape& actual, const std::string& formula, const Shape& expected,
                     std::size_t dim) {
    if (actual == expected) return {};
    return Message(Msg::weights_wrong_shape, {{"name", name}, {"shape", format_shape(actual)}, {"formula", formula},
                                              {"expected", format_shape(expected)}, {"dim", std::to_string(dim)}});
}

}  // namespace

Message check_attention_weights(const AttentionWeights& w, std::size_t C) {
    Message problem = expect_shape("qkv.weight", shape_of(w.qkv_weight), "[3*C, C]", {3 * C, C}, C);
    if (problem.empty() && w.qkv_bias) problem = expect_shape("qkv.bias", shape_of(*w.qkv_bias), "[3*C]", {3 * C}, C);
    if (problem.empty()) problem = expect_shape("proj.weight", shape_of(w.proj_weight), "[C, C]", {C, C}, C);
    if (problem.empty()) problem = expect_shape("proj.bias", shape_of(w.proj_bias), "[C]", {C}, C);
    return problem;
}

StepText step_text(Reference reference, StepId step, std::string note, std::vector<Operand> weights) {
    const StepInfo* info = step_info(step, reference);
    if (!info) throw std::logic_error("the reference has no step '" + std::string(step_name(step)) + "'");
    StepText text{std::string(info->name), info->op, std::string(info->code), std::string(info->pattern), {},
                  std::move(note), std::move(weights)};
    for (StepId input : {info->inputs.first, info->inputs.second})
        if (input != kNoStep) text.inputs.emplace_back(step_name(input));
    return text;
}

float attention_scale(const AttentionConfig& cfg) {
    return cfg.scaled ? static_cast<float>(std::pow(static_cast<double>(cfg.head_dim()), -0.5)) : 1.0f;
}

AttentionWeights default_weights(const AttentionConfig& cfg) {
    const std::size_t C = cfg.dim;
    AttentionWeights w;
    // nn.Linear(C, n)'s own initialisation (kaiming_uniform_ with a = sqrt(5)): weight and bias
    // uniform(+-1/sqrt(fan_in)), fan_in = C.
    const float bound = static_cast<float>(1.0 / std::sqrt(static_cast<double>(C)));
    if (cfg.reference == Reference::mha) {  // MultiHeadAttention keeps nn.Linear's init for qkv_proj
        w.qkv_weight = uniform_array({3 * C, C}, bound, cfg.seed, kQkvWeight);
        w.qkv_bias = uniform_array({3 * C}, bound, cfg.seed, kQkvBias);
    } else {
        // nn.init.xavier_uniform_(self.qkv.weight): bound = sqrt(6 / (fan_in + fan_out)) = sqrt(6 / (C + 3C))
        w.qkv_weight = uniform_array({3 * C, C}, static_cast<float>(std::sqrt(6.0 / (4.0 * C))), cfg.seed, kQkvWeight);
        // nn.init.zeros_(self.qkv.bias)
        if (cfg.qkv_bias) w.qkv_bias = xt::zeros<float>({3 * C});
    }
    w.proj_weight = uniform_array({C, C}, bound, cfg.seed, kProjWeight);
    w.proj_bias = uniform_array({C}, bound, cfg.seed, kProjBias);
    pack_weights(w);
    return w;
}

void pack_weights(AttentionWeights& w) {
    w.qkv_packed = pack_weight(w.qkv_weight);
    w.proj_packed = pack_weight(w.proj_weight);
}

Tensor seeded_normal_bnc(const AttentionConfig& cfg, Stream stream) {
    Tensor x{make_array({cfg.batch, cfg.tokens, cfg.dim}), {"B", "N", "C"}};
    Rng rng(cfg.seed, stream);
    for (float& v : x.values) v = rng.normal();
    return x;
}

Tensor default_input(const AttentionConfig& cfg) { return seeded_normal_bnc(cfg, kInput); }

void record_textbook(Trace& trace, const AttentionConfig& cfg, const AttentionWeights& w,
                     std::shared_ptr<const Tensor> x_in, const RunHooks& hooks) {
    if (x_in->axes != Axes{"B", "N", "C"}) x_in = std::make_shared<const Tensor>(Tensor{x_in->values, {"B", "N", "C"}});
    const std::size_t B = cfg.batch, N = cfg.tokens, C = cfg.dim;
    trace.config = cfg;
    Recorder rec(trace, hooks, attention_step_count(cfg));

    // x                                                                       [B, N, C]
    const TorchLayout layout = TorchLayout::contiguous({B, N, C});
    const Step& input = rec.add(step_text(cfg.reference, StepId::input, "the input tensor, contiguous"),
                                std::move(x_in), layout, false);
    const QkvSteps qkv = record_qkv_steps(rec, cfg, w, input);
    Array keep;
    if (cfg.masked()) keep = attention_keep_mask(cfg);
    std::optional<Tensor> attn_row_sums;
    const Step& context = record_standard_attention(rec, cfg, qkv, cfg.masked() ? &keep : nullptr,
                                                    mask_code(cfg), mask_note(cfg), &attn_row_sums);
    record_output_steps(rec, cfg, w, context);

    // Checks over the recorded steps.
    const bool attn_dropping = cfg.training && cfg.attn_drop > 0.0f;
    const auto* valid = cfg.valid_tokens.empty() ? nullptr : &cfg.valid_tokens;
    std::vector<RowSumCheck> row_sums;
    row_sums.push_back(attn_row_sums ? check_row_sums("attn", std::move(*attn_row_sums), false, 0.0f, 1e-5, valid)
                                     : check_row_sums(trace.at("attn"), false, 0.0f, 1e-5, valid));
    if (attn_dropping || hooks.edit) {
        row_sums.push_back(check_row_sums(trace.at("attn_drop"), attn_dropping, cfg.attn_drop, 1e-5, valid));
    } else {  // the identity: attn_drop holds attn's values, so its rows sum as attn's do
        row_sums.push_back(row_sums.back());
        row_sums.back().step = "attn_drop";
    }
    rec.finish(expected_attention_shapes(cfg), std::move(row_sums));
}

namespace {

// self.attn_drop / self.proj_drop: in training (p > 0) a new tensor; otherwise the identity, which
// returns its input itself, so the step shares x's values.
const Step& record_dropout(Recorder& rec, StepText text, const Step& x, const TorchLayout& layout, float p,
                           bool training, Rng& rng) {
    if (training && p > 0.0f) return rec.add(std::move(text), dropout(x.tensor(), p, training, rng), layout, false);
    return rec.add(std::move(text), x.view(), layout, true, &x.stats);
}

}  // namespace

QkvSteps record_qkv_steps(Recorder& rec, const AttentionConfig& cfg, const AttentionWeights& w, const Step& input) {
    const std::size_t B = cfg.batch, N = cfg.tokens, C = cfg.dim, h = cfg.heads, c = cfg.head_dim();
    const bool mha = cfg.reference == Reference::mha, hf = cfg.reference == Reference::hf;

    // self.qkv(x)                                                             [B, N, 3C]
    TorchLayout layout = TorchLayout::contiguous({B, N, 3 * C});
    Tensor qkv_values = linear(input.tensor(), w.qkv_weight, w.qkv_bias ? &*w.qkv_bias : nullptr, "3C", "qkv.weight",
                                w.qkv_packed.get());
    std::vector<Stats> qkv_part_stats;  // of q, k and v: the three column blocks of qkv's rows
    const Stats qkv_stats = compute_stats_by_column_blocks(qkv_values.values.data(), B * N, 3, C, qkv_part_stats);
    const char* qkv_weight_name = mha ? "self.qkv_proj.weight" : hf ? "self.query/key/value.weight" : "self.qkv.weight";
    StepText qkv_text = step_text(cfg.reference, StepId::qkv,
                                  std::string(hf ? "new contiguous tensor: query, key and value, three nn.Linear side by "
                                                   "side (one [B, N, 3C] here), each write x @ W^T"
                                                 : "new contiguous tensor: nn.Linear writes x @ W^T") +
                                      (w.qkv_bias ? " + b" : " (no bias)"),
                                  {{qkv_weight_name, shape_of(w.qkv_weight)}});
    qkv_text.inputs = {input.name};  // x, or what a path feeds the attention (its windows)
    const Step& qkv = rec.add(std::move(qkv_text), std::move(qkv_values), layout, false, &qkv_stats);

    // .reshape(B, N, 3, self.num_heads, C // self.num_heads)               [B, N, 3, h, c]
    layout = {{B, N, 3, h, c}, *torch_view_strides(layout, {B, N, 3, h, c})};
    const Step& qkv_split = rec.add(
        step_text(cfg.reference, StepId::qkv_split,
                  "view, no copy: splitting the last axis of a contiguous tensor only needs new strides" + strides_note(layout)),
        reshape_or_copy(qkv.view(), {B, N, 3, h, c}, {"B", "N", "3", "h", "c"}), layout, true, &qkv.stats);

    // .permute(2, 0, 3, 1, 4)                                                 [3, B, h, N, c]
    layout = torch_permute(layout, {2, 0, 3, 1, 4});
    const Step& qkv_heads = rec.add(
        step_text(cfg.reference, StepId::qkv_heads, std::string("view, no copy: permute only reorders the strides") +
                                   (layout.is_contiguous() ? "" : ", so the tensor is no longer contiguous") +
                                   "; the numbers still lie in memory in [B, N, 3, h, c] order" +
                                   (hf ? "; permute(0, 2, 1, 3) on each of query, key and value is this permute of the three" : "") +
                                   strides_note(layout)),
        permute_view(qkv_split.view(), {2, 0, 3, 1, 4}), layout, true, &qkv_split.stats);

    // q, k, v = qkv.unbind(0)                                                 [B, h, N, c] each
    layout = torch_select(layout, 0);
    const std::string unbind_note =
        std::string(mha  ? "view, no copy: qkv[i] indexes one slice of the first axis, the same view unbind(0) gives"
                    : hf ? "view, no copy: query_layer, key_layer and value_layer are the three slices of the first axis"
                         : "view, no copy: unbind(0) picks one slice of the first axis") +
        "; still not contiguous" + strides_note(layout);
    const Step& q = rec.add(step_text(cfg.reference, StepId::q, unbind_note), select_view(qkv_heads.view(), 0, 0), layout, true, &qkv_part_stats[0]);
    // Keys and values are indexed by the attended-to token: that axis is labelled N'.
    TensorView k_values = select_view(qkv_heads.view(), 0, 1), v_values = select_view(qkv_heads.view(), 0, 2);
    k_values.axes = v_values.axes = {"B", "h", "N'", "c"};
    const Step& k = rec.add(step_text(cfg.reference, StepId::k, unbind_note), std::move(k_values), layout, true, &qkv_part_stats[1]);
    const Step& v = rec.add(step_text(cfg.reference, StepId::v, unbind_note), std::move(v_values), layout, true, &qkv_part_stats[2]);
    return {q, k, v, layout};
}

QkvSteps record_input_and_qkv(Recorder& rec, const AttentionConfig& cfg, const AttentionWeights& w, const Tensor& x,
                              std::string input_note) {
    const Step& input = rec.add(step_text(cfg.reference, StepId::input, std::move(input_note)),
                                Tensor{x.values, {"B", "N", "C"}}, TorchLayout::contiguous({cfg.batch, cfg.tokens, cfg.dim}),
                                false);
    return record_qkv_steps(rec, cfg, w, input);
}

const Step& record_standard_attention(Recorder& rec, const AttentionConfig& cfg, const QkvSteps& qkv,
                                      const Array* keep, const std::string& mask_code, const std::string& mask_note,
                                      std::optional<Tensor>* attn_row_sums) {
    const std::size_t B = cfg.batch, N = cfg.tokens, h = cfg.heads, c = cfg.head_dim();
    const float scale_factor = attention_scale(cfg);  // self.scale (1 with --no-scale)
    const Step &q = qkv.q, &k = qkv.k, &v = qkv.v;

    // k.transpose(-2, -1)                                                     [B, h, c, N']
    TorchLayout layout = torch_transpose(qkv.layout, 2, 3);
    const Step& k_t = rec.add(step_text(cfg.reference, StepId::k_t, "view, no copy: transpose swaps the strides of the last two axes" + strides_note(layout)),
                              transpose_view(k.view(), 2, 3), layout, true, &k.stats);

    // q @ k.transpose(-2, -1)                                                 [B, h, N, N']
    layout = TorchLayout::contiguous({B, h, N, N});
    Tensor scores_values = matmul(q.view(), k_t.view(), {"B", "h", "N", "N'"}, "q", "k_t");
    // With nothing between them (no mask, no hook that edits a step), * self.scale and the softmax
    // run as one pass over the rows that also takes the three steps' stats and attn's row sums
    // (core/kernels/fused.hpp); the same values as scale() and softmax_last() one after the other, and
    // scaled is then a lazy step (computed on its first read, like a view is gathered).
    std::optional<ScaledSoftmax> chain;
    if (!keep && !rec.edits_steps()) chain = scaled_softmax(scores_values, scale_factor);
    StepText scores_text = step_text(cfg.reference, StepId::scores, "new contiguous tensor: matmul reads the strided q and k_t directly, no .contiguous() needed");
    const Step& scores =
        rec.add(std::move(scores_text), std::move(scores_values), layout, false, chain ? &chain->scores_stats : nullptr);

    // * self.scale                                                            [B, h, N, N']
    char scale_text[96];
    std::snprintf(scale_text, sizeof scale_text, "b h n m -> b h n m  (x c^-0.5 = %zu^-0.5 = %.6g)", c, scale_factor);
    if (cfg.reference == Reference::hf)  // attention_scores / math.sqrt(self.attention_head_size)
        std::snprintf(scale_text, sizeof scale_text, "b h n m -> b h n m  (/ sqrt(c) = / sqrt(%zu) = / %.6g)", c,
                      std::sqrt(static_cast<double>(c)));
    if (!cfg.scaled) std::snprintf(scale_text, sizeof scale_text, "b h n m -> b h n m  (x 1: scale off)");
    StepText scaled_text = step_text(cfg.reference, StepId::scaled, cfg.scaled ? "new contiguous tensor"
                                                          : "new contiguous tensor; the scale is switched off (--no-scale), so the "
                                                            "scores reach softmax unscaled and grow like sqrt(c)");
    scaled_text.formula = scale_text;
    if (!cfg.scaled) scaled_text.code = "* 1  # scale off (--no-scale)";
    // After the fused pass scaled is computed when someone reads it: the values scale() gives now.
    const Step& scaled =
        chain ? rec.add(std::move(scaled_text),
                        LazyValues{scores.shape(), scores.axes(),
                                   [scores_values = scores.view().base, scale_factor] { return scale(*scores_values, scale_factor); }},
                        layout, false, &chain->scaled_stats)
              : rec.add(std::move(scaled_text), scale(scores.tensor(), scale_factor), layout, false);

    // attn.masked_fill(~keep, float("-inf"))                                   [B, h, N, N']
    const Step* logits = &scaled;
    if (keep) {
        StepText masked_text = step_text(cfg.reference, StepId::masked, mask_note);
        masked_text.code = mask_code;
        logits = &rec.add(std::move(masked_text), mask_fill(scaled.tensor(), *keep), layout, false);
    }

    // attn.softmax(dim=-1)                                                    [B, h, N, N']
    StepText attn_text =
        step_text(cfg.reference, StepId::attn, "new contiguous tensor: every row (b, h, n) is a probability distribution over the N' keys");
    attn_text.inputs = {logits->name};
    const Step& attn = chain ? rec.add(std::move(attn_text), std::move(chain->attn), layout, false, &chain->attn_stats)
                             : rec.add(std::move(attn_text), softmax_last(logits->tensor()), layout, false);
    if (chain && attn_row_sums) *attn_row_sums = std::move(chain->attn_row_sums);

    // self.attn_drop(attn)                                                    [B, h, N, N']
    Rng attn_rng(cfg.seed, kAttnDrop);
    const bool attn_dropping = cfg.training && cfg.attn_drop > 0.0f;
    const Step& attn_drop = record_dropout(
        rec,
        step_text(cfg.reference, StepId::attn_drop,
                  attn_dropping ? "new contiguous tensor: training-mode dropout zeroes weights and rescales the rest by 1/(1-p)"
                                : "identity: dropout does nothing in eval mode (or with p = 0) and returns attn itself"),
        attn, layout, cfg.attn_drop, cfg.training, attn_rng);

    // attn @ v                                                                [B, h, N, c]
    layout = TorchLayout::contiguous({B, h, N, c});
    const Step& context = rec.add(
        step_text(cfg.reference, StepId::context, "new contiguous tensor: each output row is a weighted sum of the rows of v"),
        matmul(attn_drop.view(), v.view(), {"B", "h", "N", "c"}, "attn", "v"), layout, false);
    return context;
}

void record_output_steps(Recorder& rec, const AttentionConfig& cfg, const AttentionWeights& w, const Step& context) {
    const std::size_t B = cfg.batch, N = cfg.tokens, C = cfg.dim;
    const bool mha = cfg.reference == Reference::mha, hf = cfg.reference == Reference::hf;

    // .transpose(1, 2)                                                        [B, N, h, c]
    TorchLayout layout = torch_transpose(TorchLayout::contiguous(context.shape()), 1, 2);
    const Step& context_t = rec.add(
        step_text(cfg.reference, StepId::context_t, (layout.is_contiguous() ? "view, no copy: with these sizes the result is still contiguous"
                                                       : "view, no copy: not contiguous, so .view(B, N, C) here would raise an error") +
                                   strides_note(layout)),
        transpose_view(context.view(), 1, 2), layout, true, &context.stats);

    // .reshape(B, N, C)                                                       [B, N, C]
    const auto merged_view = torch_view_strides(layout, {B, N, C});
    layout = TorchLayout::contiguous({B, N, C});
    const Step& merged = rec.add(
        step_text(cfg.reference, StepId::merged, merged_view ? "view, no copy: the transposed tensor is still laid out contiguously here"
                                           : hf ? "copy: context_t is not contiguous, so .contiguous() copies the heads side by "
                                                  "side into a new contiguous tensor, which .view() can then merge"
                                                : "copy: context_t is not contiguous, so reshape copies the heads side by side into a new "
                                                  "contiguous tensor (this is why the code says reshape, not view)"),
        reshape_or_copy(context_t.view(), {B, N, C}, {"B", "N", "C"}), layout, merged_view.has_value(), &context_t.stats);

    // self.proj(x)                                                            [B, N, C]
    const Step& out = rec.add(step_text(cfg.reference, StepId::out, "new contiguous tensor: nn.Linear writes x @ W^T + b",
                                        {{mha ? "self.out_proj.weight" : hf ? "self.output.dense.weight" : "self.proj.weight",
                                          shape_of(w.proj_weight)}}),
                              linear(merged.tensor(), w.proj_weight, &w.proj_bias, "C", "proj.weight",
                                     w.proj_packed.get()),
                              layout, false);
    if (cfg.reference == Reference::mha) return;  // MultiHeadAttention returns out_proj's output

    // self.proj_drop(x)                                                       [B, N, C]
    Rng proj_rng(cfg.seed, kProjDrop);
    const bool proj_dropping = cfg.training && cfg.proj_drop > 0.0f;
    record_dropout(rec,
                   step_text(cfg.reference, StepId::out_drop, proj_dropping ? "new contiguous tensor: training-mode dropout zeroes outputs and rescales the rest"
                                                       : "identity: dropout does nothing in eval mode (or with p = 0)"),
                   out, layout, cfg.proj_drop, cfg.training, proj_rng);
}

}  // namespace attnscope
