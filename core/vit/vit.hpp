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

namespace attnscope {

class TensorSource;  // tensor_source.hpp

// Whose code the checkpoint comes from: it decides the tensors' names, the PyTorch lines shown,
// the tokens before the patches and LayerNorm's eps.
enum class VitFamily {
    Timm,           // timm VisionTransformer: patch_embed.proj, cls_token, pos_embed, blocks.<i>.attn.qkv ...
    TimmDistilled,  // timm DeiT distilled: also dist_token and head_dist; logits = mean of both heads
    Torchvision,    // torchvision VisionTransformer: conv_proj, class_token, encoder.layers.encoder_layer_<i> ...
    HuggingFace,    // transformers ViTModel / ViTForImageClassification: (vit.)embeddings, encoder.layer.<i> ...
};
const char* vit_family_name(VitFamily family);  // "timm", "timm DeiT (distilled)", "torchvision", "Hugging Face"

struct VitConfig {
    VitFamily family = VitFamily::Timm;
    std::size_t image_size = 64;   // H = W
    std::size_t patch_size = 8;    // p
    std::size_t dim = 96;          // D (the attention's C)
    std::size_t depth = 4;         // blocks
    std::size_t heads = 3;         // h
    std::size_t mlp_hidden = 192;  // M: width of mlp.fc1
    std::size_t classes = 4;       // K; 0 for a model without a classifier (a Hugging Face ViTModel)
    bool qkv_bias = true;
    // A hybrid ViT (timm's HybridEmbed): a CNN stem instead of linear patches. Stage i is
    // conv k x k stride 2 padding k/2 -> BatchNorm2d (eval, eps 1e-5) -> ReLU with stem_channels[i]
    // output channels; a 1x1 conv (patch_embed.proj) then maps the last stage's channels to D.
    // patch_size is the stem's total stride 2^stages (pixels per token side). Empty: linear patches.
    std::vector<std::size_t> stem_channels;
    std::size_t stem_kernel = 3;
    bool stem_conv_bias = false;  // the stem's convs have biases (usually not: a BatchNorm follows)
    // LayerScale (timm's init_values, DeiT III, CaiT): blocks.<i>.ls1.gamma and ls2.gamma [D] are
    // in the checkpoint and every branch is multiplied by them.
    bool layer_scale = false;
    // Stochastic depth (timm's drop_path_rate): in training, block i drops each branch of a sample
    // with probability drop_path(i), rising linearly from 0 to this rate over the blocks. In eval
    // the drop_path steps are the identity; with rate 0 they are not recorded.
    float drop_path_rate = 0.0f;
    bool training = false;   // model.train(): DropPath draws its masks
    std::uint64_t seed = 0;  // the masks' random stream (Stream kDropPath)

    // timm's dpr[block] = torch.linspace(0, drop_path_rate, depth)[block], computed as torch does in float32.
    float drop_path(std::size_t block) const;
    bool records_drop_path() const { return drop_path_rate > 0.0f; }

    bool has_stem() const { return !stem_channels.empty(); }
    std::size_t grid() const { return patch_size ? image_size / patch_size : 0; }  // patches per side
    std::size_t patches() const { return grid() * grid(); }                         // P
    // The class token, and DeiT's distillation token after it, come before the patches.
    std::size_t prefix_tokens() const { return family == VitFamily::TimmDistilled ? 2 : 1; }
    std::size_t tokens() const { return prefix_tokens() + patches(); }              // N
    float layer_norm_eps() const { return family == VitFamily::HuggingFace ? 1e-12f : 1e-6f; }
    // The config of every block's attention for a batch of B images.
    AttentionConfig attention(std::size_t batch) const;
};

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
std::vector<std::string> validate(const VitConfig& config, std::size_t batch, std::uint64_t memory_budget_bytes);

struct VitBlockWeights {
    Array norm1_weight, norm1_bias;  // [D]
    AttentionWeights attn;           // qkv [3D, D], proj [D, D]
    Array norm2_weight, norm2_bias;  // [D]
    Array fc1_weight, fc1_bias;      // [M, D], [M]
    Array fc2_weight, fc2_bias;      // [D, M], [D]
    Array ls1_gamma, ls2_gamma;      // [D]: LayerScale (empty without)
    std::shared_ptr<const PackedWeight> fc1_packed, fc2_packed;  // pack_weights (core/kernels/packed_linear)
};

// One stage of the CNN stem: patch_embed.backbone.<3i> (conv), .<3i+1> (BatchNorm2d), .<3i+2> (ReLU).
struct StemStageWeights {
    Array conv_weight;  // [C_out, C_in*k*k]: backbone.<3i>.weight [C_out, C_in, k, k] flattened in (c, kh, kw) order
    Array conv_bias;    // [C_out] when VitConfig::stem_conv_bias
    Array bn_weight, bn_bias, bn_mean, bn_var;  // [C_out]: weight, bias, running_mean, running_var
};

struct VitWeights {
    std::vector<StemStageWeights> stem;  // empty: linear patches
    // Linear patches: [D, 3*p*p], patch_embed.proj.weight [D, 3, p, p] flattened in (c, kh, kw) order.
    // CNN stem: [D, C], the 1x1 patch_embed.proj.weight [D, C, 1, 1] over the stem's C channels.
    Array patch_weight;
    Array patch_bias;    // [D]
    Array cls_token;     // [1, 1, D]
    Array dist_token;    // [1, 1, D]: DeiT's distillation token (TimmDistilled only)
    Array pos_embed;     // [1, N, D]
    std::vector<VitBlockWeights> blocks;
    Array norm_weight, norm_bias;  // [D]
    Array head_weight, head_bias;  // [K, D], [K] (none when K = 0)
    Array head_dist_weight, head_dist_bias;  // [K, D], [K]: DeiT's distillation head (TimmDistilled only)
    std::shared_ptr<const PackedWeight> patch_packed;  // pack_weights (core/kernels/packed_linear)
};

// Packs every linear's weight that runs over many rows (patch_embed, qkv, proj, fc1, fc2; not the
// head, which sees one row per image) for the AVX-512 kernel, once the weights are final.
void pack_weights(VitWeights& w);

struct VitModel {
    VitConfig config;
    VitWeights weights;
    std::vector<std::string> labels;               // K names ("class 3" when the file has none)
    std::array<float, 3> mean{0.485f, 0.456f, 0.406f};  // per channel; ImageNet's unless the file says
    std::array<float, 3> std{0.229f, 0.224f, 0.225f};
    std::string heads_from;  // where h came from: "--heads", "metadata num_heads" ... (core/files/heads)
};

// Reads a ViT checkpoint in any format TensorSource opens (safetensors, torch.save, npz), under the
// names of its family, found from the patch embedding's name (any prefix, e.g. "model."):
//   timm         patch_embed.proj, cls_token (+ dist_token), pos_embed, blocks.<i>.{norm1, attn.qkv,
//                attn.proj, norm2, mlp.fc1, mlp.fc2}, norm, head (+ head_dist)
//   timm hybrid  the same with a CNN stem: patch_embed.backbone.<3i>.weight [C_i, C_i-1, k, k] (+ .bias)
//                the conv of stage i, patch_embed.backbone.<3i+1>.{weight, bias, running_mean,
//                running_var} its BatchNorm2d, <3i+2> its ReLU (no tensors); patch_embed.proj is
//                then a 1x1 conv [D, C, 1, 1]. A stem's channels must chain (3 first), its tensors be
//                finite and its running_var not negative.
//   torchvision  conv_proj, class_token, encoder.pos_embedding, encoder.layers.encoder_layer_<i>.{ln_1,
//                self_attention.in_proj_*, self_attention.out_proj, ln_2, mlp.0, mlp.3}, encoder.ln, heads.head
//   Hugging Face (vit.)embeddings.{patch_embeddings.projection, cls_token, position_embeddings},
//                (vit.)encoder.layer.<i>.{layernorm_before, attention.attention.{query,key,value},
//                attention.output.dense, layernorm_after, intermediate.dense, output.dense},
//                (vit.)layernorm, classifier (absent in a ViTModel: no head)
// Depth, dim, patch size, image size, MLP width and classes come from the tensors; heads from
// `heads`, else what the file, its configuration or its architecture says (resolve_heads), else
// HeadsUnknown. Metadata labels (a JSON list), mean and
// std (JSON lists of 3 numbers) are used when present. The config is validated for one image against
// the memory budget before any tensor is read. FileError("path: ...") names the missing tensor, or
// both tensors whose shapes disagree.
VitModel load_vit_model(const std::string& path, std::optional<std::size_t> heads,
                        std::uint64_t memory_budget_bytes);
VitModel load_vit_model(const TensorSource& source, std::optional<std::size_t> heads,
                        std::uint64_t memory_budget_bytes);  // a file already open
// The family of the whole ViT in `source` (its patch embedding and position embedding under one
// prefix), without reading a tensor; nullopt when the file holds none (e.g. one attention layer).
std::optional<VitFamily> whole_vit_family(const TensorSource& source);

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
    const Array& attn() const { return attention.at("attn").tensor().values; }  // [B, h, N, N'] post-softmax
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
    bool has_head() const { return config.classes > 0; }  // logits and probs are recorded
    const Array& logits() const { return at("logits").tensor().values; }  // [B, K]; has_head() only
    const Array& probs() const { return at("probs").tensor().values; }    // [B, K]; has_head() only
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
