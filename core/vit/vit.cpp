// run_vit: timm's VisionTransformer.forward, one recorded step per line of PyTorch; every block's
// attention is run_attention itself. Also: a fresh model (checkpoints: core/files/vit_checkpoint).
#include "vit.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iterator>
#include <limits>
#include <numeric>
#include <stdexcept>

#include "checks.hpp"
#include "io.hpp"
#include "ops.hpp"
#include "random.hpp"
#include "recorder.hpp"
#include "run.hpp"
#include "stem.hpp"
#include "tensor_source.hpp"
#include "torch_layout.hpp"
#include "views.hpp"

namespace attnscope {

namespace {

std::uint64_t saturating_mul(std::uint64_t a, std::uint64_t b) {
    return a != 0 && b > std::numeric_limits<std::uint64_t>::max() / a ? std::numeric_limits<std::uint64_t>::max()
                                                                        : a * b;
}
std::uint64_t saturating_add(std::uint64_t a, std::uint64_t b) {
    return a > std::numeric_limits<std::uint64_t>::max() - b ? std::numeric_limits<std::uint64_t>::max() : a + b;
}

// A rate as a person writes it: "0.1", "0.25", "0.0333".
std::string format_rate(float p) {
    char text[32];
    std::snprintf(text, sizeof text, "%.4g", static_cast<double>(p));
    return text;
}

// ---- recording ------------------------------------------------------------------------------
// The words of one step. `operands` are what the PyTorch line reads, with shapes.
struct VitStepText {
    VitStep step;
    std::string code;
    std::string formula;
    std::vector<std::string> inputs;
    std::vector<Operand> operands;
    std::string note;
    std::size_t stage = 0;  // a stem layer's
    Op op = Op::count;      // the row's, unless given
};

// Records a step. PyTorch's tensor is a view with `view_layout` when one is given, else a new
// contiguous tensor.
const Step& record(Recorder& rec, VitStepText text, StepValues values,
                   std::optional<TorchLayout> view_layout = std::nullopt) {
    const Shape shape = std::holds_alternative<TensorView>(values)
                            ? std::get<TensorView>(values).shape
                            : shape_of(std::get<std::shared_ptr<const Tensor>>(values)->values);
    const bool is_view = view_layout.has_value();
    const Op op = text.op == Op::count ? vit_step_info(text.step).op : text.op;
    return rec.add({vit_step_name(text.step, text.stage), op, std::move(text.code), std::move(text.formula), std::move(text.inputs),
                    std::move(text.note), {}, std::move(text.operands)},
                   std::move(values), is_view ? *view_layout : TorchLayout::contiguous(shape), is_view);
}

const Step& record(Recorder& rec, VitStepText text, Tensor tensor, std::optional<TorchLayout> view_layout = std::nullopt) {
    return record(rec, std::move(text), std::make_shared<const Tensor>(std::move(tensor)), std::move(view_layout));
}

Operand operand(const std::string& expr, const Array& a) { return {expr, shape_of(a)}; }

const Step& find_step(const Steps& steps, std::string_view name, const char* where) {
    for (const Step& s : steps)
        if (s.name == name) return s;
    throw std::out_of_range(std::string(where) + " has no step named '" + std::string(name) + "'");
}

// The lines of each family's forward() that a ViT step names as an operand (the numbers are the
// same in every family), one row per line: timm, timm DeiT (distilled), torchvision, Hugging Face. A row's place is checked against its name at compile
// time, so a row out of place does not build.
enum class VitLine {
    patch_weight, cls, pos,                                       // the embedding
    norm1_weight, residual1_branch,                               // a block's attention branch
    norm2_weight, fc1_weight, fc2_weight, residual2_branch,       // its MLP branch
    norm_weight, head_weight,                                     // the head
    count
};

struct VitLineRow {
    VitLine line;
    std::array<const char*, 4> code;  // by family: timm, distilled, torchvision, Hugging Face
};

constexpr VitLineRow kVitLines[] = {
    {VitLine::patch_weight,  // the conv's weight, as the code names it
     {"self.patch_embed.proj.weight",
      "self.patch_embed.proj.weight",
      "self.conv_proj.weight",
      "self.patch_embeddings.projection.weight"}},
    {VitLine::cls,
     {"self.cls_token",
      "self.cls_token",
      "self.class_token",
      "self.cls_token"}},
    {VitLine::pos,
     {"self.pos_embed",
      "self.pos_embed",
      "self.encoder.pos_embedding",
      "self.position_embeddings"}},
    {VitLine::norm1_weight,
     {"self.norm1.weight",
      "self.norm1.weight",
      "self.ln_1.weight",
      "self.layernorm_before.weight"}},
    {VitLine::residual1_branch,  // the second operand of residual1
     {"self.attn(self.norm1(x))",
      "self.attn(self.norm1(x))",
      "self.self_attention(x, x, x)",
      "attention_output"}},
    {VitLine::norm2_weight,
     {"self.norm2.weight",
      "self.norm2.weight",
      "self.ln_2.weight",
      "self.layernorm_after.weight"}},
    {VitLine::fc1_weight,
     {"self.mlp.fc1.weight",
      "self.mlp.fc1.weight",
      "self.mlp[0].weight",
      "self.intermediate.dense.weight"}},
    {VitLine::fc2_weight,
     {"self.mlp.fc2.weight",
      "self.mlp.fc2.weight",
      "self.mlp[3].weight",
      "self.output.dense.weight"}},
    {VitLine::residual2_branch,
     {"self.mlp(self.norm2(x))",
      "self.mlp(self.norm2(x))",
      "y = self.mlp(y)",
      "self.output.dense(...)"}},
    {VitLine::norm_weight,
     {"self.norm.weight",
      "self.norm.weight",
      "self.encoder.ln.weight",
      "self.layernorm.weight"}},
    {VitLine::head_weight,
     {"self.head.weight",
      "self.head.weight",
      "self.heads.head.weight",
      "self.classifier.weight"}},
};
static_assert(std::size(kVitLines) == static_cast<std::size_t>(VitLine::count), "one row per VitLine");

constexpr bool rows_in_place() {
    for (std::size_t i = 0; i < std::size(kVitLines); ++i)
        if (kVitLines[i].line != static_cast<VitLine>(i)) return false;
    return true;
}
static_assert(rows_in_place(), "kVitLines: every row at the place of its VitLine");

// The steps, one row each (VitStep).
// clang-format off
constexpr VitStepInfo kVitSteps[] = {
    // id                    name          op               part            optional
    //  code: the line it records, by family (timm, DeiT distilled, torchvision, Hugging Face)
    {VitStep::pixels,      "pixels",      Op::input,       VitPart::embed, false, {}},
    {VitStep::stem_conv,   "stem.conv",   Op::conv2d,      VitPart::stem,  false, {}},
    {VitStep::stem_bn,     "stem.bn",     Op::batchnorm,   VitPart::stem,  false, {}},
    {VitStep::stem_relu,   "stem.relu",   Op::relu,        VitPart::stem,  false, {}},
    {VitStep::patches,     "patches",     Op::patchify,    VitPart::embed, false, {}},
    {VitStep::patch_embed, "patch_embed", Op::linear,      VitPart::embed, false,
     {"self.patch_embed.proj(x).flatten(2).transpose(1, 2)",
      "self.patch_embed.proj(x).flatten(2).transpose(1, 2)",
      "self.conv_proj(x).reshape(n, self.hidden_dim, n_h * n_w).permute(0, 2, 1)",
      "self.patch_embeddings(pixel_values)"}},
    {VitStep::tokens,      "tokens",      Op::cat,         VitPart::embed, false,
     {"torch.cat((self.cls_token.expand(B, -1, -1), x), dim=1)",
      "torch.cat((self.cls_token.expand(B, -1, -1), self.dist_token.expand(B, -1, -1), x), dim=1)",
      "torch.cat([self.class_token.expand(n, -1, -1), x], dim=1)",
      "torch.cat((self.cls_token.expand(batch_size, -1, -1), embeddings), dim=1)"}},
    {VitStep::embed,       "embed",       Op::add,         VitPart::embed, false,
     {"x = x + self.pos_embed",
      "x = x + self.pos_embed",
      "input = input + self.pos_embedding",
      "embeddings = embeddings + self.position_embeddings"}},
    {VitStep::norm1,       "norm1",       Op::layernorm,   VitPart::block, false,
     {"self.norm1(x)",
      "self.norm1(x)",
      "x = self.ln_1(input)",
      "self.layernorm_before(hidden_states)"}},
    {VitStep::attn_out,    "attn_out",    Op::attention,   VitPart::block, false,
     {"self.attn(x)",
      "self.attn(x)",
      "x, _ = self.self_attention(x, x, x, need_weights=False)",
      "self.attention(self.layernorm_before(hidden_states))"}},
    {VitStep::ls1,         "ls1",         Op::scale,       VitPart::block, true, {}},
    {VitStep::drop_path1,  "drop_path1",  Op::drop_path,   VitPart::block, true, {}},
    {VitStep::residual1,   "residual1",   Op::add,         VitPart::block, false,
     {"x = x + self.attn(self.norm1(x))",
      "x = x + self.attn(self.norm1(x))",
      "x = x + input",
      "hidden_states = attention_output + hidden_states"}},
    {VitStep::norm2,       "norm2",       Op::layernorm,   VitPart::block, false,
     {"self.norm2(x)",
      "self.norm2(x)",
      "y = self.ln_2(x)",
      "layer_output = self.layernorm_after(hidden_states)"}},
    {VitStep::fc1,         "fc1",         Op::linear,      VitPart::block, false,
     {"self.mlp.fc1(x)",
      "self.mlp.fc1(x)",
      "self.mlp[0](y)",
      "self.intermediate.dense(hidden_states)"}},
    {VitStep::gelu,        "gelu",        Op::gelu,        VitPart::block, false,
     {"self.mlp.act(x)",
      "self.mlp.act(x)",
      "self.mlp[1](y)",
      "self.intermediate.intermediate_act_fn(hidden_states)"}},
    {VitStep::fc2,         "fc2",         Op::linear,      VitPart::block, false,
     {"self.mlp.fc2(x)",
      "self.mlp.fc2(x)",
      "self.mlp[3](y)",
      "self.output.dense(hidden_states)"}},
    {VitStep::ls2,         "ls2",         Op::scale,       VitPart::block, true, {}},
    {VitStep::drop_path2,  "drop_path2",  Op::drop_path,   VitPart::block, true, {}},
    {VitStep::residual2,   "residual2",   Op::add,         VitPart::block, false,
     {"x = x + self.mlp(self.norm2(x))",
      "x = x + self.mlp(self.norm2(x))",
      "return x + y",
      "hidden_states = hidden_states + input_tensor"}},
    {VitStep::norm,        "norm",        Op::layernorm,   VitPart::head,  false,
     {"self.norm(x)",
      "self.norm(x)",
      "self.encoder.ln(x)",
      "sequence_output = self.layernorm(sequence_output)"}},
    {VitStep::cls_out,     "cls_out",     Op::select,      VitPart::head,  false,
     {"x[:, 0]",
      "x[:, 0]",
      "x[:, 0]",
      "sequence_output[:, 0, :]"}},
    {VitStep::logits,      "logits",      Op::linear,      VitPart::head,  false,
     {"self.head(x)",
      "(self.head(x[:, 0]) + self.head_dist(x[:, 1])) / 2",
      "self.heads(x)",
      "self.classifier(sequence_output[:, 0, :])"}},
    {VitStep::probs,       "probs",       Op::softmax,     VitPart::head,  false,
     {"logits.softmax(dim=-1)",
      "logits.softmax(dim=-1)",
      "logits.softmax(dim=-1)",
      "logits.softmax(dim=-1)"}},
};
// clang-format on
static_assert(std::size(kVitSteps) == static_cast<std::size_t>(VitStep::count), "one row per VitStep");

constexpr bool vit_steps_in_place() {
    for (std::size_t i = 0; i < std::size(kVitSteps); ++i)
        if (kVitSteps[i].id != static_cast<VitStep>(i)) return false;
    return true;
}
static_assert(vit_steps_in_place(), "kVitSteps: every row at the place of its VitStep");

// One family's lines: code[VitStep::norm1] is its "self.norm1(x)", code[VitLine::norm1_weight] its
// "self.norm1.weight".
class VitCode {
public:
    explicit VitCode(VitFamily family) : column_(column(family)) {}
    const char* operator[](VitLine line) const { return kVitLines[static_cast<std::size_t>(line)].code[column_]; }
    std::string operator[](VitStep step) const { return std::string(kVitSteps[static_cast<std::size_t>(step)].code[column_]); }

private:
    static std::size_t column(VitFamily family) {
        switch (family) {
            case VitFamily::TimmDistilled: return 1;
            case VitFamily::Torchvision: return 2;
            case VitFamily::HuggingFace: return 3;
            case VitFamily::Timm: break;
        }
        return 0;
    }
    std::size_t column_;
};

// "b n C -> b n C  (normalize over C, eps 1e-6)"
std::string layernorm_formula(const VitConfig& cfg) {
    return cfg.family == VitFamily::HuggingFace ? "b n C -> b n C  (normalize over C, eps 1e-12)"
                                                : "b n C -> b n C  (normalize over C, eps 1e-6)";
}

// One branch's end in timm's block: self.ls<k>(x) (LayerScale, when the checkpoint has it), then
// self.drop_path<k>(x) (stochastic depth, when there is a rate). Returns the last step recorded (the
// branch itself when neither is) and the branch's expression for the residual's line.
struct BranchEnd {
    const Step* step;
    std::string name, code;
};

BranchEnd record_branch_end(Recorder& rec, VitBlockTrace& blk, const VitConfig& cfg, std::size_t block, int k,
                            const Array& gamma, const Step& branch, const std::string& branch_code, Rng& drop_rng) {
    const std::size_t B = branch.shape()[0];
    const Shape bnd = branch.shape();
    const VitStep ls_step = k == 1 ? VitStep::ls1 : VitStep::ls2, dp_step = k == 1 ? VitStep::drop_path1 : VitStep::drop_path2;
    const std::string ls = vit_step_name(ls_step), dp = vit_step_name(dp_step);
    BranchEnd end{&branch, branch.name, branch_code};
    if (cfg.layer_scale) {
        // self.ls<k>(x) = x * self.ls<k>.gamma                                [B, N, D]
        end.step = &record(
            rec,
            {ls_step, "self." + ls + "(x)", "b n C, C -> b n C  (x * gamma)", {end.name},
             {{"x", bnd}, {"self." + ls + ".gamma", shape_of(gamma)}},
             "new contiguous tensor: LayerScale multiplies every channel of the branch by its learned gamma "
             "(timm init_values), so a deep model starts close to the identity"},
            layer_scale(branch.tensor(), gamma, "blocks." + std::to_string(block) + "." + ls + ".gamma"));
        end.name = ls;
        end.code = "self." + ls + "(" + end.code + ")";
    }
    if (!cfg.records_drop_path()) return end;
    // self.drop_path<k>(x): x.div(keep_prob) * random_tensor, random_tensor [B, 1, 1]   [B, N, D]
    DropPathRecord r;
    r.step = dp;
    r.rate = cfg.drop_path(block);
    r.active = cfg.training && r.rate > 0.0f;
    r.mask = cfg.training ? drop_path_mask(B, r.rate, drop_rng) : make_array({B, 1, 1});
    if (!r.active) r.mask.fill(1.0f);
    const std::string p_text = format_rate(r.rate);
    std::size_t dropped = 0;
    for (std::size_t b = 0; b < B; ++b) dropped += r.dropped(b) ? 1 : 0;
    const std::string code = "self." + dp + "(x)";
    const std::vector<Operand> operands{{"x", bnd}};
    if (r.active) {
        end.step = &record(
            rec,
            {dp_step, code, "b n C, b 1 1 -> b n C  (x / (1 - p) * keep[b])", {end.name}, operands,
             "new contiguous tensor: stochastic depth with p = " + p_text + " in this block: " +
                 std::to_string(dropped) + " of " + std::to_string(B) +
                 " samples lose this whole branch (x 0), the others are scaled by 1/(1-p); the residual still "
                 "adds it to x"},
            drop_path(end.step->tensor(), r.mask));
    } else {
        end.step = &record(
            rec,
            {dp_step, code, "b n C -> b n C  (identity)", {end.name}, operands,
             cfg.training ? "identity: this block's drop-path rate is 0 (dpr rises from 0 in the first block), "
                            "so DropPath returns x itself"
                          : "identity: DropPath does nothing in eval mode and returns x itself (rate p = " + p_text +
                                " applies in training only)"},
            end.step->view(), TorchLayout::contiguous(bnd));
    }
    blk.drop_paths.push_back(std::move(r));
    end.name = dp;
    end.code = "self." + dp + "(" + end.code + ")";
    return end;
}

// The largest |residual - x| over the samples whose branch was dropped: they must equal x.
double dropped_residual_vs_x(const DropPathRecord& r, const Tensor& residual, const Tensor& x) {
    double worst = 0.0;
    const std::size_t B = r.mask.size(), per = B ? residual.values.size() / B : 0;
    for (std::size_t b = 0; b < B; ++b)
        if (r.dropped(b))
            for (std::size_t i = b * per; i < (b + 1) * per; ++i)
                worst = std::max(worst, std::fabs(double(residual.values.data()[i]) - x.values.data()[i]));
    return worst;
}

// x = x + blk.attn(blk.norm1(x)); x = x + blk.mlp(blk.norm2(x))                     [B, N, D]
// (with ls<k> and drop_path<k> around each branch when the config has them)
VitBlockTrace run_block(const VitConfig& cfg, std::size_t B, std::size_t index, const VitBlockWeights& w,
                        const Tensor& x, const std::string& x_name, Progress& progress, Rng& drop_rng) {
    const std::size_t N = cfg.tokens(), D = cfg.dim, M = cfg.mlp_hidden;
    const Shape bnd{B, N, D};
    const VitCode code(cfg.family);
    const float eps = cfg.layer_norm_eps();
    const bool wrapped = cfg.layer_scale || cfg.records_drop_path();  // the residual's line names ls/drop_path
    VitBlockTrace blk;
    Recorder rec(blk.steps, progress);

    // self.norm1(x)                                                          [B, N, D]
    const Step& norm1 = record(
        rec,
        {VitStep::norm1, code[VitStep::norm1], layernorm_formula(cfg), {x_name},
         {{"x", bnd}, operand(code[VitLine::norm1_weight], w.norm1_weight)},
         "new contiguous tensor: every token is normalized to mean 0, variance 1, then scaled and shifted"},
        layer_norm(x, w.norm1_weight, w.norm1_bias, eps, "norm1.weight"));

    // self.attn(x): the 17 recorded steps of the single-layer pipeline        [B, N, D]
    blk.attention = run_attention(cfg.attention(B), w.attn, contiguous(norm1.view()), progress.nested());  // shares norm1's values
    progress.advance(blk.attention.steps.size());
    const Step& attn_out = record(
        rec,
        {VitStep::attn_out, code[VitStep::attn_out], "b n C -> b n C  (multi-head self-attention)", {vit_step_name(VitStep::norm1)},
         {{"x", bnd}}, "the attention's out_drop step: step into this block's attention to see how it was made"},
        blk.attention.at(StepId::out_drop).view());

    // [self.ls1(x)], [self.drop_path1(x)]                                       [B, N, D]
    const BranchEnd end1 = record_branch_end(rec, blk, cfg, index, 1, w.ls1_gamma, attn_out, code[VitLine::residual1_branch], drop_rng);

    // x = x + self.attn(self.norm1(x))                                        [B, N, D]
    const Step& residual1 = record(
        rec,
        {VitStep::residual1, wrapped ? "x = x + " + end1.code : std::string(code[VitStep::residual1]), "b n C, b n C -> b n C",
         {x_name, end1.name}, {{"x", bnd}, {end1.code, bnd}},
         "new contiguous tensor: the residual connection adds the attention's output to the block's input"},
        add(x, end1.step->tensor(), "x", end1.name));
    if (cfg.records_drop_path())
        blk.drop_paths.back().dropped_residual_vs_x = dropped_residual_vs_x(blk.drop_paths.back(), residual1.tensor(), x);

    // self.norm2(x)                                                           [B, N, D]
    const Step& norm2 = record(
        rec,
        {VitStep::norm2, code[VitStep::norm2], layernorm_formula(cfg), {vit_step_name(VitStep::residual1)},
         {{"x", bnd}, operand(code[VitLine::norm2_weight], w.norm2_weight)},
         "new contiguous tensor: the MLP's input, normalized per token like norm1"},
        layer_norm(residual1.tensor(), w.norm2_weight, w.norm2_bias, eps, "norm2.weight"));

    // self.mlp.fc1(x)                                                         [B, N, M]
    const Step& fc1 = record(
        rec,
        {VitStep::fc1, code[VitStep::fc1], "b n C, M C -> b n M", {vit_step_name(VitStep::norm2)},
         {{"x", bnd}, operand(code[VitLine::fc1_weight], w.fc1_weight)},
         "new contiguous tensor: nn.Linear widens every token from D = " + std::to_string(D) + " to M = " +
             std::to_string(M)},
        linear(norm2.tensor(), w.fc1_weight, &w.fc1_bias, "M", "mlp.fc1.weight", w.fc1_packed.get()));

    // self.mlp.act(x)                                                         [B, N, M]
    const Step& act = record(
        rec,
        {VitStep::gelu, code[VitStep::gelu], "b n M -> b n M  (0.5 x (1 + erf(x / sqrt 2)))", {vit_step_name(VitStep::fc1)},
         {{"x", {B, N, M}}}, "new contiguous tensor: nn.GELU(), the exact erf form"},
        gelu(fc1.tensor()));

    // self.mlp.fc2(x)                                                         [B, N, D]
    const Step& fc2 = record(
        rec,
        {VitStep::fc2, code[VitStep::fc2], "b n M, C M -> b n C", {vit_step_name(VitStep::gelu)},
         {{"x", {B, N, M}}, operand(code[VitLine::fc2_weight], w.fc2_weight)},
         "new contiguous tensor: nn.Linear narrows every token back to D"},
        linear(act.tensor(), w.fc2_weight, &w.fc2_bias, "C", "mlp.fc2.weight", w.fc2_packed.get()));

    // [self.ls2(x)], [self.drop_path2(x)]                                       [B, N, D]
    const BranchEnd end2 = record_branch_end(rec, blk, cfg, index, 2, w.ls2_gamma, fc2, code[VitLine::residual2_branch], drop_rng);

    // x = x + self.mlp(self.norm2(x))                                         [B, N, D]
    const Step& residual2 = record(
        rec,
        {VitStep::residual2, wrapped ? "x = x + " + end2.code : std::string(code[VitStep::residual2]), "b n C, b n C -> b n C",
         {vit_step_name(VitStep::residual1), end2.name}, {{"x", bnd}, {end2.code, bnd}},
         "new contiguous tensor: the second residual connection; this is the block's output"},
        add(residual1.tensor(), end2.step->tensor(), "x", end2.name));
    if (cfg.records_drop_path())
        blk.drop_paths.back().dropped_residual_vs_x =
            dropped_residual_vs_x(blk.drop_paths.back(), residual2.tensor(), residual1.tensor());
    return blk;
}

// x = self.patch_embed.backbone(x): per stage conv (stride 2) -> BatchNorm2d (eval) -> ReLU.
// Returns the last ReLU's step.                                          [B, C, H/2^s, W/2^s]
const Step& record_stem(Recorder& rec, const VitConfig& cfg, const VitWeights& w, const Step& pixels) {
    const std::size_t k = cfg.stem_kernel, B = shape_of(pixels.tensor().values)[0];
    const std::string k_text = std::to_string(k), pad_text = std::to_string(k / 2);
    const Step* x = &pixels;
    std::size_t in = 3, side = cfg.image_size;
    for (std::size_t i = 0; i < cfg.stem_channels.size(); ++i) {
        const StemStageWeights& st = w.stem[i];
        const std::size_t C = cfg.stem_channels[i], half = (side + 1) / 2;
        const std::string conv_code = "self.patch_embed.backbone[" + std::to_string(3 * i) + "]";
        const std::string bn_code = "self.patch_embed.backbone[" + std::to_string(3 * i + 1) + "]";
        const Shape x_shape{B, in, side, side}, y_shape{B, C, half, half};

        // nn.Conv2d(C_in, C, k, stride=2, padding=k/2)                      [B, C, H/2, W/2]
        const std::string conv_name = vit_step_name(VitStep::stem_conv, i), bn_name = vit_step_name(VitStep::stem_bn, i);
        const Step& conv = record(
            rec,
            {VitStep::stem_conv, conv_code + "(x)",
             "b " + std::to_string(in) + " h w -> b " + std::to_string(C) + " (h/2) (w/2)", {x->name},
             {{"x", x_shape}, {conv_code + ".weight", {C, in, k, k}}},
             "new contiguous tensor: a " + k_text + "x" + k_text + " conv, stride 2, padding " + pad_text + ": each of " +
                 std::to_string(C) + " filters reads a " + k_text + "x" + k_text + " window of all " +
                 std::to_string(in) + " channels; the grid halves to " + std::to_string(half) + "x" +
                 std::to_string(half) + " (computed as im2col + one matrix product)",
             i},
            conv2d(x->tensor(), st.conv_weight, cfg.stem_conv_bias ? &st.conv_bias : nullptr, k, 2, k / 2,
                   conv_code + ".weight"));

        // nn.BatchNorm2d(C) in eval: the running statistics, not the batch's   [B, C, H/2, W/2]
        const Step& bn = record(
            rec,
            {VitStep::stem_bn, bn_code + "(x)", "b C h w -> b C h w  (per channel, eps 1e-5)",
             {conv_name}, {{"x", y_shape}, {bn_code + ".running_var", {C}}},
             "new contiguous tensor: BatchNorm2d in eval: (x - running_mean) / sqrt(running_var + 1e-5) * weight + "
             "bias, one affine map per channel",
             i},
            batch_norm_eval(conv.tensor(), st.bn_weight, st.bn_bias, st.bn_mean, st.bn_var, 1e-5f, bn_code));

        // nn.ReLU()                                                           [B, C, H/2, W/2]
        x = &record(rec,
                    {VitStep::stem_relu, "self.patch_embed.backbone[" + std::to_string(3 * i + 2) + "](x)",
                     "b C h w -> b C h w  (max(x, 0))", {bn_name}, {{"x", y_shape}},
                     "new contiguous tensor: negative values become 0", i},
                    relu(bn.tensor()));
        in = C;
        side = half;
    }
    return *x;
}

// The windows the stride-p conv reads, one row per patch                     [B, P, 3*p*p]
const Step& record_patches(Recorder& rec, const VitConfig& cfg, const Step& input) {
    const std::size_t p = cfg.patch_size;
    const std::string p_text = std::to_string(p);
    return record(
        rec,
        {VitStep::patches,
         "x.unfold(2, " + p_text + ", " + p_text + ").unfold(3, " + p_text + ", " + p_text +
             ").permute(0, 2, 3, 1, 4, 5).reshape(B, P, 3*" + p_text + "*" + p_text + ")",
         "b 3 (gh p1) (gw p2) -> b (gh gw) (3 p1 p2)", {vit_step_name(VitStep::pixels)}, {{"x", shape_of(input.tensor().values)}},
         "what patch_embed.proj (a " + p_text + "x" + p_text + " conv with stride " + p_text +
             ") sees: the image cut into " + std::to_string(cfg.grid()) + "x" + std::to_string(cfg.grid()) +
             " patches, row by row, each flattened in the (c, kh, kw) order of the conv weight"},
        patchify(input.tensor(), p));
}

// self.patch_embed(x): the conv as a linear over the patches                 [B, P, D]
const Step& record_patch_embed(Recorder& rec, const VitConfig& cfg, const VitCode& code, const VitWeights& w,
                               const Step& patches) {
    const std::size_t B = shape_of(patches.tensor().values)[0], S = cfg.image_size, p = cfg.patch_size, D = cfg.dim;
    const std::string p_text = std::to_string(p);
    return record(
        rec,
        {VitStep::patch_embed, code[VitStep::patch_embed], "b P (3 p1 p2), D (3 p1 p2) -> b P D", {vit_step_name(VitStep::patches)},
         {{"x", {B, 3, S, S}}, {code[VitLine::patch_weight], {D, 3, p, p}}},
         "new contiguous tensor: the stride-" + p_text + " conv is a linear over each patch's " +
             std::to_string(3 * p * p) + " numbers; one D = " + std::to_string(D) + " token per patch"},
        linear(patches.tensor(), w.patch_weight, &w.patch_bias, "C", "patch_embed.proj.weight", w.patch_packed.get()));
}

// The stem's feature map read as rows: x.flatten(2).transpose(1, 2)           [B, P, C]
const Step& record_stem_tokens(Recorder& rec, const VitConfig& cfg, const Step& features) {
    const Shape fs = shape_of(features.tensor().values);  // [B, C, h, w]
    const std::string g = std::to_string(cfg.grid());
    return record(
        rec,
        {VitStep::patches, "x.flatten(2).transpose(1, 2)", "b C h w -> b (h w) C", {features.name},
         {{"x", fs}},
         "what patch_embed.proj (a 1x1 conv) sees: the stem's " + g + "x" + g + " feature map, one row of C = " +
             std::to_string(fs[1]) + " channels per position, row by row; P = " + g + "*" + g + " = " +
             std::to_string(cfg.patches()) + " (PyTorch flattens after the 1x1 conv; the numbers are the same)",
         0, Op::transpose},
        channels_to_tokens(features.tensor()));
}

// self.patch_embed.proj(x).flatten(2).transpose(1, 2): the 1x1 conv as a linear over the channels  [B, P, D]
const Step& record_stem_proj(Recorder& rec, const VitConfig& cfg, const VitWeights& w, const Step& patches) {
    const std::size_t B = shape_of(patches.tensor().values)[0], C = cfg.stem_channels.back(), D = cfg.dim;
    const std::size_t g = cfg.grid();
    return record(
        rec,
        {VitStep::patch_embed, "self.patch_embed.proj(x).flatten(2).transpose(1, 2)", "b P C, D C -> b P D",
         {vit_step_name(VitStep::patches)}, {{"x", {B, C, g, g}}, {"self.patch_embed.proj.weight", {D, C, 1, 1}}},
         "new contiguous tensor: the 1x1 conv is a linear over each position's C = " + std::to_string(C) +
             " channels; one D = " + std::to_string(D) + " token per position of the stem's feature map"},
        linear(patches.tensor(), w.patch_weight, &w.patch_bias, "C", "patch_embed.proj.weight", w.patch_packed.get()));
}

void check_run_inputs(const VitModel& model, const Tensor& pixels) {
    const VitConfig& cfg = model.config;
    const Shape xs = shape_of(pixels.values);
    const std::size_t S = cfg.image_size;
    if (xs.size() != 4 || xs[0] == 0 || xs[1] != 3 || xs[2] != S || xs[3] != S)
        throw ShapeError(Message(Msg::run_vit_pixels, {{"shape", format_shape(xs)}, {"size", std::to_string(S)}}));
    const auto problems = validate(cfg, xs[0], std::numeric_limits<std::uint64_t>::max());
    if (!problems.empty()) throw ConfigError(problems.front());
    if (model.weights.stem.size() != cfg.stem_channels.size())
        throw ShapeError(Message(Msg::run_vit_stem_weights, {{"count", std::to_string(model.weights.stem.size())},
                                                             {"stages", std::to_string(cfg.stem_channels.size())}}));
    if (model.weights.blocks.size() != cfg.depth)
        throw ShapeError(Message(Msg::run_vit_block_weights,
                                 {{"count", std::to_string(model.weights.blocks.size())}, {"depth", std::to_string(cfg.depth)}}));
}

NonFiniteCheck first_nonfinite(const VitTrace& t) {
    // In execution order: embedding, then per block its attention (whose input is norm1) and its
    // own steps, then the head.
    std::vector<std::pair<std::string, const Steps*>> parts{{"", &t.embed}};
    for (std::size_t i = 0; i < t.blocks.size(); ++i) {
        const std::string prefix = "block " + std::to_string(i) + " ";
        parts.push_back({prefix + "attention ", &t.blocks[i].attention.steps});
        parts.push_back({prefix, &t.blocks[i].steps});
    }
    parts.push_back({"", &t.head});
    for (const auto& [prefix, steps] : parts) {
        NonFiniteCheck c = find_first_nonfinite(*steps);
        if (c.ok()) continue;
        c.first_step = prefix + c.first_step;
        c.message = "first NaN/Inf at " + prefix + "step '" + c.first_step.substr(prefix.size()) + "' (" +
                    std::to_string(c.nan_count) + " NaN, " + std::to_string(c.inf_count) +
                    " Inf); every earlier step is finite";
        return c;
    }
    return find_first_nonfinite({});
}

}  // namespace

std::uint64_t vit_trace_bytes(const VitConfig& c, std::size_t batch) {
    const std::uint64_t B = batch, N = c.tokens(), D = c.dim, M = c.mlp_hidden, K = c.classes;
    const std::uint64_t image = saturating_mul(saturating_mul(B, 3), saturating_mul(c.image_size, c.image_size));
    const std::uint64_t bnd = saturating_mul(saturating_mul(B, N), D), bnm = saturating_mul(saturating_mul(B, N), M);
    // pixels, patches: 2 x image; patch_embed, tokens, embed: 3 x BND.
    std::uint64_t floats = saturating_add(saturating_mul(2, image), saturating_mul(3, bnd));
    // per block: norm1, attn_out, residual1, norm2, fc2, residual2 (6 x BND), fc1, gelu (2 x BNM),
    // and MLP + norm weights; the attention's steps and weights come from trace_bytes.
    const std::uint64_t block_floats = saturating_add(saturating_add(saturating_mul(6, bnd), saturating_mul(2, bnm)),
                                                      saturating_add(saturating_mul(2, saturating_mul(M, D)), 4 * D + M + D));
    // ls1, ls2 (new tensors) and their gammas; drop_path1, drop_path2 (new tensors in training).
    const std::uint64_t extra = saturating_add(c.layer_scale ? saturating_add(saturating_mul(2, bnd), 2 * D) : 0,
                                               c.records_drop_path() && c.training ? saturating_mul(2, bnd) : 0);
    const std::uint64_t block_bytes = saturating_add(saturating_mul(saturating_add(block_floats, extra), sizeof(float)),
                                                     trace_bytes(c.attention(batch)));
    // head: norm (BND), cls_out (BD), logits and probs (2 x BK); embedding and head weights.
    floats = saturating_add(floats, saturating_add(bnd, saturating_add(saturating_mul(B, D), saturating_mul(2, saturating_mul(B, K)))));
    floats = saturating_add(floats, saturating_add(saturating_mul(D, 3 * c.patch_size * c.patch_size + N + K + 4),
                                                   K));
    // CNN stem: per stage conv, bn, relu (3 x B C h w) and its weights; the feature map as rows.
    std::uint64_t in = 3, side = c.image_size;
    for (const std::size_t C : c.stem_channels) {
        side = (side + 1) / 2;
        const std::uint64_t map = saturating_mul(saturating_mul(B, C), saturating_mul(side, side));
        floats = saturating_add(floats, saturating_add(saturating_mul(3, map),
                                                       saturating_add(saturating_mul(saturating_mul(C, in),
                                                                                     c.stem_kernel * c.stem_kernel),
                                                                      5 * std::uint64_t{C})));
        in = C;
    }
    if (c.has_stem()) floats = saturating_add(floats, saturating_mul(saturating_mul(B, c.patches()), saturating_add(in, D)));
    return saturating_add(saturating_mul(floats, sizeof(float)), saturating_mul(c.depth, block_bytes));
}

std::vector<Message> validate(const VitConfig& c, std::size_t batch, std::uint64_t memory_budget_bytes) {
    std::vector<Message> problems;
    if (c.patch_size == 0) problems.push_back(Message(Msg::vit_config_patch));
    if (c.patch_size && (c.image_size == 0 || c.image_size % c.patch_size != 0))
        problems.push_back(Message(Msg::vit_config_image_size, {{"size", std::to_string(c.image_size)}, {"patch", std::to_string(c.patch_size)}}));
    if (c.has_stem()) {
        if (c.stem_channels.size() > kMaxStemStages)
            problems.push_back(Message(Msg::vit_config_stem_stages, {{"stages", std::to_string(c.stem_channels.size())},
                                                                     {"max", std::to_string(kMaxStemStages)}}));
        else if (c.patch_size != (std::size_t{1} << c.stem_channels.size()))
            problems.push_back(Message(Msg::vit_config_stem_stride, {{"stages", std::to_string(c.stem_channels.size())},
                                                                     {"stride", std::to_string(std::size_t{1} << c.stem_channels.size())},
                                                                     {"patch", std::to_string(c.patch_size)}}));
        if (c.stem_kernel % 2 == 0)
            problems.push_back(Message(Msg::vit_config_stem_kernel, {{"kernel", std::to_string(c.stem_kernel)}}));
        if (std::find(c.stem_channels.begin(), c.stem_channels.end(), std::size_t{0}) != c.stem_channels.end())
            problems.push_back(Message(Msg::vit_config_stem_channels));
    }
    if (c.dim == 0 || c.depth == 0 || c.mlp_hidden == 0 || batch == 0)
        problems.push_back(Message(Msg::vit_config_sizes));
    if (c.heads == 0 || (c.dim % c.heads) != 0)
        problems.push_back(Message(Msg::vit_config_heads, {{"dim", std::to_string(c.dim)}, {"heads", std::to_string(c.heads)}}));
    if (!(c.drop_path_rate >= 0.0f && c.drop_path_rate < 1.0f))
        problems.push_back(Message(Msg::vit_config_drop_path_rate, {{"rate", format_rate(c.drop_path_rate)}}));
    else if (c.drop_path_rate > 0.0f && c.family != VitFamily::Timm && c.family != VitFamily::TimmDistilled)
        problems.push_back(Message(Msg::vit_config_drop_path_family, {{"family", vit_family_name(c.family)}}));
    if (problems.empty()) {
        const std::uint64_t need = vit_trace_bytes(c, batch);
        if (need > memory_budget_bytes)
            problems.push_back(Message(Msg::vit_config_over_budget,
                                       {{"depth", std::to_string(c.depth)}, {"tokens", std::to_string(c.tokens())},
                                        {"dim", std::to_string(c.dim)}, {"heads", std::to_string(c.heads)},
                                        {"batch", std::to_string(batch)}, {"needs", format_bytes(need)},
                                        {"budget", format_bytes(memory_budget_bytes)}}));
    }
    return problems;
}

void pack_weights(VitWeights& w) {
    w.patch_packed = pack_weight(w.patch_weight);
    // Blocks in parallel: packing ViT-B's 85 M weights is a strided copy of 340 MB.
#pragma omp parallel for schedule(dynamic)
    for (std::size_t i = 0; i < w.blocks.size(); ++i) {
        VitBlockWeights& b = w.blocks[i];
        pack_weights(b.attn);
        b.fc1_packed = pack_weight(b.fc1_weight);
        b.fc2_packed = pack_weight(b.fc2_weight);
    }
}

VitModel load_vit_model(const std::string& path, std::optional<std::size_t> heads, std::uint64_t memory_budget) {
    return load_vit_model(TensorSource::open(path), heads, memory_budget);
}

VitModel load_vit_model(const TensorSource& source, std::optional<std::size_t> heads, std::uint64_t memory_budget) {
    VitModel model = read_vit_checkpoint(source, heads, [&](const VitConfig& config) {
        const auto problems = validate(config, 1, memory_budget);
        return problems.empty() ? Message() : problems.front();
    });
    pack_weights(model.weights);
    return model;
}

Array sincos_pos_embed(std::size_t dim, std::size_t grid) {
    if (dim % 4 != 0) throw ShapeError(Message(Msg::sincos_dim, {{"dim", std::to_string(dim)}}));
    Array pos = xt::zeros<float>({std::size_t{1}, 1 + grid * grid, dim});  // class token: zeros
    const std::size_t quarter = dim / 4;
    for (std::size_t r = 0; r < grid; ++r)
        for (std::size_t c = 0; c < grid; ++c) {
            float* row = pos.data() + (1 + r * grid + c) * dim;
            for (std::size_t i = 0; i < quarter; ++i) {
                const double omega = 1.0 / std::pow(10000.0, static_cast<double>(i) / static_cast<double>(quarter));
                row[i] = static_cast<float>(std::sin(c * omega));  // column: [sin | cos] in the first half
                row[quarter + i] = static_cast<float>(std::cos(c * omega));
                row[2 * quarter + i] = static_cast<float>(std::sin(r * omega));  // row: the second half
                row[3 * quarter + i] = static_cast<float>(std::cos(r * omega));
            }
        }
    return pos;
}

VitConfig with_cnn_stem(VitConfig config) {
    config.stem_channels = {32, 64};
    config.stem_kernel = 3;
    config.stem_conv_bias = false;
    config.patch_size = 4;
    return config;
}

VitModel fresh_vit_model(const VitConfig& config, std::uint64_t seed) {
    VitConfig cfg = config;
    cfg.family = VitFamily::Timm;  // timm's initialisation and names, one class token
    const auto problems = validate(cfg, 1, std::numeric_limits<std::uint64_t>::max());
    if (!problems.empty()) throw ConfigError(problems.front());
    const std::size_t D = cfg.dim, p = cfg.patch_size, M = cfg.mlp_hidden, K = cfg.classes;
    std::uint64_t stream = 0;
    auto normal = [&](const Shape& shape, float std) {  // one random stream per tensor, in this order
        Array a = make_array(shape);
        Rng rng(seed, ++stream);
        for (float& v : a) v = std * rng.normal();
        return a;
    };
    auto filled = [](const Shape& shape, float value) {
        Array a = make_array(shape);
        a.fill(value);
        return a;
    };
    VitModel m;
    m.config = cfg;
    m.heads_from = Message(Msg::heads_from_vit_config);
    for (std::size_t k = 0; k < K; ++k) m.labels.push_back("class " + std::to_string(k));
    VitWeights& w = m.weights;
    w.patch_weight = normal({D, cfg.has_stem() ? cfg.stem_channels.back() : 3 * p * p}, 0.02f);
    w.patch_bias = filled({D}, 0.0f);
    w.cls_token = normal({1, 1, D}, 1e-6f);
    w.pos_embed = sincos_pos_embed(D, cfg.grid());
    for (std::size_t i = 0; i < cfg.depth; ++i) {
        VitBlockWeights b;
        b.norm1_weight = b.norm2_weight = filled({D}, 1.0f);
        b.norm1_bias = b.norm2_bias = b.attn.proj_bias = b.fc2_bias = filled({D}, 0.0f);
        b.attn.qkv_weight = normal({3 * D, D}, 0.02f);
        if (cfg.qkv_bias) b.attn.qkv_bias = filled({3 * D}, 0.0f);
        b.attn.proj_weight = normal({D, D}, 0.02f);
        b.fc1_weight = normal({M, D}, 0.02f);
        b.fc1_bias = filled({M}, 0.0f);
        b.fc2_weight = normal({D, M}, 0.02f);
        w.blocks.push_back(std::move(b));
    }
    w.norm_weight = filled({D}, 1.0f);
    w.norm_bias = filled({D}, 0.0f);
    w.head_weight = normal({K, D}, 0.02f);
    w.head_bias = filled({K}, 0.0f);
    std::size_t in = 3;  // the stem's streams come after every other tensor's
    for (const std::size_t C : cfg.stem_channels) {
        const std::size_t fan_in = in * cfg.stem_kernel * cfg.stem_kernel;
        StemStageWeights st;
        st.conv_weight = normal({C, fan_in}, static_cast<float>(std::sqrt(2.0 / static_cast<double>(fan_in))));
        if (cfg.stem_conv_bias) st.conv_bias = filled({C}, 0.0f);
        st.bn_weight = st.bn_var = filled({C}, 1.0f);
        st.bn_bias = st.bn_mean = filled({C}, 0.0f);
        w.stem.push_back(std::move(st));
        in = C;
    }
    pack_weights(w);
    return m;
}

const Step& VitBlockTrace::at(std::string_view name) const { return find_step(steps, name, "the block"); }

const Step& VitTrace::at(std::string_view name) const {
    for (const auto* part : {&embed, &head})
        for (const Step& s : *part)
            if (s.name == name) return s;
    throw std::out_of_range("the ViT trace has no embedding or head step named '" + std::string(name) + "'");
}

// ---- the ViT's steps --------------------------------------------------------------------------
namespace {


// The names of one part's rows, in order; with_optional: also the rows only some configs record.
std::vector<std::string> part_names(VitPart part, bool with_optional) {
    std::vector<std::string> names;
    for (const VitStepInfo& row : kVitSteps)
        if (row.part == part && (with_optional || !row.optional)) names.emplace_back(row.name);
    return names;
}

}  // namespace

const VitStepInfo& vit_step_info(VitStep step) { return kVitSteps[static_cast<std::size_t>(step)]; }

std::string vit_step_name(VitStep step, std::size_t stage) {
    const std::string_view name = vit_step_info(step).name;
    if (vit_step_info(step).part != VitPart::stem) return std::string(name);
    return "stem" + std::to_string(stage) + std::string(name.substr(name.find('.')));  // "stem2.bn"
}

VitStep vit_step_of(std::string_view name) {
    std::string_view row_name = name;
    std::string stem_row;  // "stem2.bn" -> "stem.bn"
    const std::size_t dot = name.find('.');
    if (name.rfind("stem", 0) == 0 && dot != std::string_view::npos && dot > 4 &&
        name.find_first_not_of("0123456789", 4) == dot) {
        stem_row = "stem" + std::string(name.substr(dot));
        row_name = stem_row;
    }
    for (const VitStepInfo& row : kVitSteps)
        if (row.name == row_name) return row.id;
    return VitStep::count;
}

const std::vector<std::string>& vit_embed_step_names() {
    static const std::vector<std::string> names = part_names(VitPart::embed, true);
    return names;
}
std::vector<std::string> vit_stem_step_names(std::size_t stages) {
    std::vector<std::string> names;
    for (std::size_t i = 0; i < stages; ++i)
        for (VitStep layer : {VitStep::stem_conv, VitStep::stem_bn, VitStep::stem_relu})
            names.push_back(vit_step_name(layer, i));
    return names;
}
const std::vector<std::string>& vit_block_step_names() {
    static const std::vector<std::string> names = part_names(VitPart::block, false);
    return names;
}
std::vector<std::string> vit_block_step_names(const VitConfig& config) {
    std::vector<std::string> names;
    for (const VitStepInfo& row : kVitSteps) {
        if (row.part != VitPart::block) continue;
        const bool ls = row.id == VitStep::ls1 || row.id == VitStep::ls2;
        const bool dp = row.id == VitStep::drop_path1 || row.id == VitStep::drop_path2;
        if ((ls && !config.layer_scale) || (dp && !config.records_drop_path())) continue;
        names.emplace_back(row.name);
    }
    return names;
}
const std::vector<std::string>& vit_optional_block_step_names() {
    static const std::vector<std::string> names = [] {
        std::vector<std::string> optional;
        for (const VitStepInfo& row : kVitSteps)
            if (row.optional) optional.emplace_back(row.name);
        return optional;
    }();
    return names;
}
const std::vector<std::string>& vit_head_step_names() {
    static const std::vector<std::string> names = part_names(VitPart::head, true);
    return names;
}

VitTrace run_vit(const VitModel& model, const Tensor& pixels, const RunHooks& hooks) {
    check_run_inputs(model, pixels);
    const VitConfig& cfg = model.config;
    const VitWeights& w = model.weights;
    const std::size_t B = pixels.values.shape()[0], P = cfg.patches();
    const std::size_t N = cfg.tokens(), D = cfg.dim, K = cfg.classes;
    const std::size_t per_block = vit_block_step_names(cfg).size() + attention_step_names().size();
    const std::size_t head_steps = K > 0 ? vit_head_step_names().size() : 2;  // norm, cls_out without a classifier
    Progress progress(hooks, vit_embed_step_names().size() + 3 * cfg.stem_channels.size() + cfg.depth * per_block +
                                 head_steps);
    const VitCode code(cfg.family);
    const bool distilled = cfg.family == VitFamily::TimmDistilled;
    VitTrace t;
    t.config = cfg;
    t.grid = PatchGrid::of(cfg);
    t.batch = B;
    Recorder embed_rec(t.embed, progress), head_rec(t.head, progress);

    // x                                                                       [B, 3, H, W]
    const Step& input = record(embed_rec,
                               {VitStep::pixels, "x", "b 3 h w", {}, {}, "the normalized image, contiguous"},
                               Tensor{pixels.values, {"B", "3", "H", "W"}});

    // self.patch_embed(x): linear patches, or a CNN stem whose feature map's positions become the
    // tokens                                                                  [B, P, D]
    const Step& patches = cfg.has_stem() ? record_stem_tokens(embed_rec, cfg, record_stem(embed_rec, cfg, w, input))
                                         : record_patches(embed_rec, cfg, input);
    const Step& patch_embed = cfg.has_stem() ? record_stem_proj(embed_rec, cfg, w, patches)
                                             : record_patch_embed(embed_rec, cfg, code, w, patches);

    // torch.cat((self.cls_token.expand(B, -1, -1), x), dim=1)                 [B, N, D]
    // (DeiT distilled: the class token, then the distillation token, then the patches)
    Tensor prefix = expand(Tensor{w.cls_token, {"1", "1", "C"}}, {B, 1, D});
    if (distilled)
        prefix = concat(prefix, expand(Tensor{w.dist_token, {"1", "1", "C"}}, {B, 1, D}), 1, "cls_token", "dist_token");
    Tensor tokens = concat(prefix, patch_embed.tensor(), 1, distilled ? "tokens" : "cls_token", "x");
    tokens.axes = {"B", "N", "C"};
    const Step& cat = record(
        embed_rec,
        {VitStep::tokens, code[VitStep::tokens], distilled ? "b P D -> b (2 + P) D" : "b P D -> b (1 + P) D", {vit_step_name(VitStep::patch_embed)},
         {operand(code[VitLine::cls], w.cls_token), {"x", {B, P, D}}},
         distilled ? "new contiguous tensor: the learned class token and distillation token are put before the "
                     "patches; their outputs feed the two heads"
                   : "new contiguous tensor: the learned class token is put before the patches; its output feeds the head"},
        std::move(tokens));

    // x = x + self.pos_embed                                                  [B, N, D]
    const Step& embed = record(
        embed_rec,
        {VitStep::embed, code[VitStep::embed], "b n D, 1 n D -> b n D", {vit_step_name(VitStep::tokens)},
         {{"x", {B, N, D}}, operand(code[VitLine::pos], w.pos_embed)},
         "new contiguous tensor: every token gets the embedding of its position (the class token too)"},
        add(cat.tensor(), Tensor{w.pos_embed, {"1", "N", "C"}}, "x", "pos_embed"));

    // for blk in self.blocks: x = blk(x)                                      [B, N, D]
    const Tensor* x = &embed.tensor();
    std::string x_name = vit_step_name(VitStep::embed);
    Rng drop_rng(cfg.seed, kDropPath);  // every drop_path step's B draws, in execution order
    for (std::size_t i = 0; i < cfg.depth; ++i) {
        t.blocks.push_back(run_block(cfg, B, i, w.blocks[i], *x, x_name, progress, drop_rng));
        x = &t.blocks.back().steps.back().tensor();
        x_name = "block" + std::to_string(i) + "." + vit_step_name(VitStep::residual2);
    }

    // self.norm(x)                                                            [B, N, D]
    const Step& norm = record(
        head_rec,
        {VitStep::norm, code[VitStep::norm], layernorm_formula(cfg), {x_name},
         {{"x", {B, N, D}}, operand(code[VitLine::norm_weight], w.norm_weight)}, "new contiguous tensor: the final LayerNorm"},
        layer_norm(*x, w.norm_weight, w.norm_bias, cfg.layer_norm_eps(), "norm.weight"));

    // x[:, 0]: the class token                                                [B, D]
    const Step& cls_out = record(
        head_rec,
        {VitStep::cls_out, code[VitStep::cls_out], "b n C -> b C  (n = 0)", {vit_step_name(VitStep::norm)}, {{"x", {B, N, D}}},
         K > 0 ? "view, no copy: the class token's row of every image; only it reaches the head"
               : "view, no copy: the class token's row of every image (this model has no classifier)"},
        select_view(norm.view(), 1, 0), torch_select(TorchLayout::contiguous({B, N, D}), 1));
    if (K == 0) {  // a Hugging Face ViTModel: the encoder's output is the result
        t.nonfinite = first_nonfinite(t);
        return t;
    }

    // self.head(x)                                                            [B, K]
    // (DeiT distilled in eval: the mean of the class token's head and the distillation token's)
    Tensor head = linear(cls_out.tensor(), w.head_weight, &w.head_bias, "K", "head.weight");
    if (distilled) {
        const Tensor dist = linear(gather(select_view(norm.view(), 1, 1)), w.head_dist_weight, &w.head_dist_bias, "K",
                                   "head_dist.weight");  // x[:, 1]  [B, D] -> [B, K]
        head = scale(add(head, dist, "head", "head_dist"), 0.5f);
    }
    const Step& logits = record(
        head_rec,
        {VitStep::logits, code[VitStep::logits], "b C, K C -> b K", {vit_step_name(VitStep::cls_out)},
         {{"x", {B, D}}, operand(code[VitLine::head_weight], w.head_weight)},
         "new contiguous tensor: one score per class (" + std::to_string(K) + ")" +
             (distilled ? std::string(", the mean of the class head's and the distillation head's") : std::string())},
        std::move(head));

    // logits.softmax(dim=-1)                                                  [B, K]
    record(head_rec,
           {VitStep::probs, code[VitStep::probs], "b K -> b K  (softmax over K)", {vit_step_name(VitStep::logits)}, {{"x", {B, K}}},
            "new contiguous tensor: the class probabilities shown beside the image"},
           softmax_last(logits.tensor()));

    t.nonfinite = first_nonfinite(t);
    return t;
}

std::vector<ClassProb> ranked_classes(const Array& probs, std::size_t batch, std::size_t k,
                                      const std::vector<std::string>& labels) {
    if (probs.dimension() != 2 || batch >= probs.shape()[0]) return {};
    const std::size_t K = probs.shape()[1];
    std::vector<std::size_t> order(K);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return probs(batch, a) > probs(batch, b); });
    order.resize(std::min(k, K));
    std::vector<ClassProb> out;
    for (std::size_t i : order)
        out.push_back({i, i < labels.size() ? labels[i] : "class " + std::to_string(i), probs(batch, i)});
    return out;
}

}  // namespace attnscope
