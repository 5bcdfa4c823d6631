// What a tensor in the user's file is, from its name and shape alone (no values, no I/O).
//
//   "attn", "blocks.3.attn.attn_weights", "attention_probs"   -> step attn
//   "x", "hidden_states", "input"  [B, N, C]                  -> step input
//   "context_layer" [B, h, N, c] / [B, N, C]                  -> step context / merged
//   "blocks.3.attn.qkv.weight"                                -> weight qkv.weight (timm, block 3)
//   "vit.encoder.layer.0.attention.attention.query.weight"   -> weight q.weight (Hugging Face, block 0)
//   "vit.encoder.layer.0.attention.output.dense.bias"        -> weight proj.bias (Hugging Face, block 0)
//   "blocks.2.attn.qkv_proj.weight"                           -> weight qkv.weight (reference MultiHeadAttention, block 2)
//   "encoder.layers.encoder_layer_3.self_attention.in_proj_weight"
//                                                             -> weight qkv.weight (nn.MultiheadAttention, block 3)
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "tensor.hpp"

namespace attnscope {

enum class RoleKind { None, Step, Weight };

struct Role {
    RoleKind kind = RoleKind::None;
    // Step: a pinned step name ("input", "qkv", ..., "out_drop").
    // Weight: "qkv.weight", "qkv.bias", "proj.weight", "proj.bias" (q, k, v stacked in rows, as
    // timm's qkv), or for separate projections "q.weight", "k.weight", "v.weight", "q.bias", ...
    std::string name;
    std::string alias;       // Step: the name the file used when it is not the step's own ("attn_weights")
    // Weight: one of the k*Convention names below. out_proj is named alike by the reference class
    // and nn.MultiheadAttention: kOutProjConvention until resolve_conventions() looks at its siblings.
    std::string convention;
    std::optional<std::size_t> block;  // from "blocks.<i>.", "layer.<i>.", "layers.<i>." or "encoder_layer_<i>."
    std::string module;      // Weight: the attention layer's path in the file ("blocks.3.attn", "" for bare names)
};

constexpr const char* kTimmConvention = "timm";                                  // qkv, proj
constexpr const char* kHuggingFaceConvention = "Hugging Face";                   // query, key, value, output.dense
constexpr const char* kReferenceConvention = "reference MultiHeadAttention";    // the article's qkv_proj, out_proj
constexpr const char* kTorchMhaConvention = "nn.MultiheadAttention";            // in_proj_weight, out_proj
constexpr const char* kOutProjConvention = "reference MultiHeadAttention or nn.MultiheadAttention";

Role recognize_role(const std::string& tensor_name, const Shape& shape);

// The block a path names: the last "<blocks|block|layers|layer>.<i>" or "encoder_layer_<i>".
std::optional<std::size_t> block_in_name(const std::string& tensor_name);

// Gives every out_proj the convention of the qkv_proj or in_proj_weight beside it (same module).
void resolve_conventions(std::vector<Role>& roles);

// What each convention's weights are called, for "no attention weights" messages.

// "attn", "attn (as attn_weights, block 2)", "qkv.weight (timm, block 3)", "" for RoleKind::None.
std::string describe_role(const Role& role);

// The blocks the roles mention, ascending, each once.
std::vector<std::size_t> blocks_of(const std::vector<Role>& roles);

// True when role belongs to `block`: its own block equals it, or it names no block.
bool in_block(const Role& role, std::optional<std::size_t> block);

}  // namespace attnscope
