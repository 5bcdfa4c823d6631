// A ViT checkpoint as attnscope reads it: the model's config (VitConfig), its weights (VitWeights)
// and what the file says about its classes and normalisation (VitModel), for the four families
// whose names it knows. Recording the model on a picture is core/vit/vit.hpp.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config.hpp"
#include "pipeline.hpp"
#include "tensor_source.hpp"

namespace attnscope {

// A hybrid ViT's CNN stem has at most this many stride-2 stages.
constexpr std::size_t kMaxStemStages = 8;

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

struct VitModel {
    VitConfig config;
    VitWeights weights;
    std::vector<std::string> labels;               // K names ("class 3" when the file has none)
    std::array<float, 3> mean{0.485f, 0.456f, 0.406f};  // per channel; ImageNet's unless the file says
    std::array<float, 3> std{0.229f, 0.224f, 0.225f};
    Message heads_from;  // where h came from: "--heads", "metadata num_heads" ... (core/files/heads)
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
// HeadsUnknown. Metadata labels (a JSON list), mean and std (JSON lists of 3 numbers) are used when
// present. `refuse` sees the config before any tensor is read: a non-empty answer (the memory
// budget's) is thrown as FileError("path: <answer>"). FileError("path: ...") names the missing
// tensor, or both tensors whose shapes disagree.
VitModel read_vit_checkpoint(const TensorSource& source, std::optional<std::size_t> heads,
                             const std::function<Message(const VitConfig&)>& refuse);

// The family of the whole ViT in `source` (its patch embedding and position embedding under one
// prefix), without reading a tensor; nullopt when the file holds none (e.g. one attention layer).
std::optional<VitFamily> whole_vit_family(const TensorSource& source);

}  // namespace attnscope
