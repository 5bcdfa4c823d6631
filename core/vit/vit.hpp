// The Vision Transformer: timm's VisionTransformer (class token, pre-norm blocks), recorded step by
// step. torchvision's VisionTransformer, Hugging Face's ViTModel / ViTForImageClassification and
// timm's distilled DeiT compute the same thing under other names (VitFamily), with a second
// (distillation) token for DeiT, LayerNorm eps 1e-12 for Hugging Face, and no head for a ViTModel. Every block's attention runs through run_attention, so each block holds a whole attention
// Trace (the 17 pinned steps) that the user can step into, beside the block-level steps.
//
//     x = self.patch_embed(x)                      # stride-p conv: [B, 3, H, W] -> [B, P, D]
//     x = torch.cat((self.cls_token.expand(B, -1, -1), x), dim=1)        # [B, N, D], N = 1 + P
//     x = x + self.pos_embed
//     for blk in self.blocks:
//         x = x + blk.drop_path1(blk.ls1(blk.attn(blk.norm1(x))))
//         x = x + blk.drop_path2(blk.ls2(blk.mlp.fc2(blk.mlp.act(blk.mlp.fc1(blk.norm2(x))))))
// (ls1/ls2, LayerScale, only in checkpoints that have them; drop_path1/2, stochastic depth, only
// with a drop-path rate; otherwise both are nn.Identity in timm and record no step here.)
//     x = self.norm(x)
//     logits = self.head(x[:, 0])
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config.hpp"
#include "heads.hpp"
#include "io.hpp"
#include "pipeline.hpp"
#include "trace.hpp"
#include "vit_checkpoint.hpp"

namespace attnscope {

// Where each patch token sits on the image. Token 0 is the class token (token 1 DeiT's distillation
// token); patch (row, col) is token prefix + row * cols + col and covers pixels
// [row * p, (row + 1) * p) x [col * p, (col + 1) * p).
struct PatchGrid {
    std::size_t rows = 0, cols = 0, patch = 0;
    std::size_t prefix = 1;  // tokens before the patches

    static PatchGrid of(const VitConfig& config) {
        return {config.grid(), config.grid(), config.patch_size, config.prefix_tokens()};
    }
    std::size_t patches() const { return rows * cols; }
    std::size_t tokens() const { return prefix + patches(); }
    std::size_t token(std::size_t row, std::size_t col) const { return prefix + row * cols + col; }
};

// Bytes the recorded ViT trace of B images needs (every step of every block, the weights).
std::uint64_t vit_trace_bytes(const VitConfig& config, std::size_t batch);

// Readable problems with the config, empty when B images can run within the memory budget.
std::vector<Message> validate(const VitConfig& config, std::size_t batch, std::uint64_t memory_budget_bytes);

// Packs every linear's weight that runs over many rows (patch_embed, qkv, proj, fc1, fc2; not the
// head, which sees one row per image) for the AVX-512 kernel, once the weights are final.
void pack_weights(VitWeights& w);

// Reads a ViT checkpoint (read_vit_checkpoint, core/files/vit_checkpoint.hpp), refusing a config
// that does not validate for one image within the memory budget before any tensor is read, and
// packs its weights.
VitModel load_vit_model(const std::string& path, std::optional<std::size_t> heads,
                        std::uint64_t memory_budget_bytes);
VitModel load_vit_model(const TensorSource& source, std::optional<std::size_t> heads,
                        std::uint64_t memory_budget_bytes);  // a file already open

// 2-D sin-cos position embeddings (MAE's get_2d_sincos_pos_embed, class token zeros): the first
// D/2 channels encode the column, the last D/2 the row.   -> [1, N, D]; D must be a multiple of 4.
Array sincos_pos_embed(std::size_t dim, std::size_t grid);

// The config with a CNN stem of two stages (3 -> 32 -> 64 channels, 3x3 stride 2), patch size 4:
// a 64 x 64 image becomes a 16 x 16 grid, N = 257 tokens.
VitConfig with_cnn_stem(VitConfig config);

// A fresh model for this config (seeded): timm's initialisation (Linear and conv weights
// N(0, 0.02^2), zero biases, LayerNorm ones and zeros, cls_token N(0, 1e-12)) and sin-cos
// position embeddings. For a patch-size slider: the same image seen through a different grid.
// A CNN stem's convs are N(0, 2 / fan_in) (He), its BatchNorms torch's defaults (weight 1, bias 0,
// running mean 0, running var 1).
VitModel fresh_vit_model(const VitConfig& config, std::uint64_t seed);

// ---- the ViT's steps --------------------------------------------------------------------------
// The steps a ViT records around each block's attention (whose steps are the step table's,
// core/engine/step_table.hpp), one row each (vit_step_info), in execution order: the embedding with
// a hybrid's CNN stem (one row per layer, recorded once per stage as stem<i>.conv ...), a block's,
// the head's.
enum class VitStep : std::uint8_t {
    pixels,
    stem_conv,
    stem_bn,
    stem_relu,
    patches,
    patch_embed,
    tokens,
    embed,
    norm1,
    attn_out,
    ls1,
    drop_path1,
    residual1,
    norm2,
    fc1,
    gelu,
    fc2,
    ls2,
    drop_path2,
    residual2,
    norm,
    cls_out,
    logits,
    probs,
    count
};

enum class VitPart : std::uint8_t { embed, stem, block, head };

struct VitStepInfo {
    VitStep id;
    std::string_view name;  // pinned; a stem layer's is "stem.conv", recorded per stage as stem<i>.conv
    Op op;                  // a hybrid's patches is Op::transpose (the stem's map read as rows)
    VitPart part;
    bool optional;  // only some configs record it: ls<k> with LayerScale, drop_path<k> with a rate
    // The line it records, by family: timm, timm DeiT (distilled), torchvision, Hugging Face; empty
    // where the recorder writes it from the config (the stem, patches, ls<k>, drop_path<k>).
    std::array<std::string_view, 4> code;
};

const VitStepInfo& vit_step_info(VitStep step);
// "norm1"; a stem layer's at `stage`: "stem2.bn".
std::string vit_step_name(VitStep step, std::size_t stage = 0);
// The row of a recorded name ("stem2.bn" and "stem.bn" are stem_bn), or VitStep::count.
VitStep vit_step_of(std::string_view name);

// One DropPath of a block, as it ran: which samples lost their branch.
struct DropPathRecord {
    std::string step;    // "drop_path1" (the attention's branch) or "drop_path2" (the MLP's)
    float rate = 0.0f;   // this block's p (VitConfig::drop_path)
    bool active = false; // training with p > 0: the mask was applied; else the step is the identity
    Array mask;          // [B, 1, 1]: 0 (dropped) or 1 / (1 - p) (kept); all 1 when not active
    // max |residual - x| over the samples whose branch was dropped (residual1 - the block's input,
    // residual2 - residual1): 0 when the residual path carries x alone; 0 when none was dropped.
    double dropped_residual_vs_x = 0.0;

    bool dropped(std::size_t sample) const { return active && mask.data()[sample] == 0.0f; }
};

// One block: the block-level steps and the attention it ran.
struct VitBlockTrace {
    // norm1, attn_out, [ls1], [drop_path1], residual1, norm2, fc1, gelu, fc2, [ls2], [drop_path2],
    // residual2 (vit_block_step_names(config))
    Steps steps;
    Trace attention;          // the 17 steps of run_attention on norm1 (its "input" step)
    std::vector<DropPathRecord> drop_paths;  // drop_path1, drop_path2; empty when the rate is 0

    const Step& at(std::string_view name) const;  // throws std::out_of_range
    const Step& at(VitStep step) const { return at(vit_step_name(step)); }
    const Array& attn() const { return attention.at(StepId::attn).tensor().values; }  // [B, h, N, N'] post-softmax
};

struct VitTrace {
    VitConfig config;
    PatchGrid grid;
    std::size_t batch = 1;
    Steps embed;  // pixels, (CNN stem: stem<i>.conv, stem<i>.bn, stem<i>.relu per stage,) patches, patch_embed, tokens, embed
    std::vector<VitBlockTrace> blocks;
    Steps head;  // norm, cls_out, logits, probs
    NonFiniteCheck nonfinite;  // the first step, in execution order, with a NaN or Inf

    const Step& at(std::string_view name) const;  // an embed or head step; throws std::out_of_range
    const Step& at(VitStep step) const { return at(vit_step_name(step)); }
    bool has_head() const { return config.classes > 0; }  // logits and probs are recorded
    const Array& logits() const { return at(VitStep::logits).tensor().values; }  // [B, K]; has_head() only
    const Array& probs() const { return at(VitStep::probs).tensor().values; }    // [B, K]; has_head() only
};

// The pinned step names: embedding, each block's, and the head's, in execution order (a model
// without a classifier records the head's first two only).
const std::vector<std::string>& vit_embed_step_names();
// The CNN stem's steps, recorded after "pixels": stem<i>.conv, stem<i>.bn, stem<i>.relu per stage.
std::vector<std::string> vit_stem_step_names(std::size_t stages);
const std::vector<std::string>& vit_block_step_names();
// A block's steps for this config: the above with ls1/ls2 (LayerScale) and drop_path1/drop_path2
// (a drop-path rate) after each branch.
std::vector<std::string> vit_block_step_names(const VitConfig& config);
// The steps only some configs record: ls1, drop_path1, ls2, drop_path2.
const std::vector<std::string>& vit_optional_block_step_names();
const std::vector<std::string>& vit_head_step_names();

// Runs the model on normalized pixels [B, 3, H, W] (H = W = config.image_size) and records every
// step. hooks.progress counts steps over the whole model; hooks.cancel is checked between steps.
VitTrace run_vit(const VitModel& model, const Tensor& pixels, const RunHooks& hooks = {});

struct ClassProb {
    std::size_t index = 0;
    std::string label;
    float prob = 0.0f;
};

// The k most probable classes of image `batch` of probs [B, K], most probable first (ties: lower
// index first); labels[index] when there is one, else "class <index>".
std::vector<ClassProb> ranked_classes(const Array& probs, std::size_t batch, std::size_t k,
                                      const std::vector<std::string>& labels);


}  // namespace attnscope
