// What a tensor in the user's file is, from its name and shape alone (no values, no I/O).
//
//   "attn", "blocks.3.attn.attn_weights", "attention_probs"   -> step attn
//   "x", "hidden_states", "input"  [B, N, C]                  -> step input
//   "context_layer" [B, h, N, c] / [B, N, C]                  -> step context / merged
//   "blocks.3.attn.qkv.weight"                                -> weight qkv.weight (timm, block 3)
//   "vit.encoder.layer.0.attention.attention.query.weight"   -> weight q.weight (Hugging Face, block 0)
//   "vit.encoder.layer.0.attention.output.dense.bias"        -> weight proj.bias (Hugging Face, block 0)
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
    // Weight: "qkv.weight", "qkv.bias", "proj.weight", "proj.bias" (timm), or for Hugging Face's
    // separate projections "q.weight", "k.weight", "v.weight", "q.bias", "k.bias", "v.bias".
    std::string name;
    std::string alias;       // Step: the name the file used when it is not the step's own ("attn_weights")
    std::string convention;  // Weight: "timm" or "Hugging Face"
    std::optional<std::size_t> block;  // from "blocks.<i>." or "layer.<i>."
};

Role recognize_role(const std::string& tensor_name, const Shape& shape);

// "attn", "attn (as attn_weights, block 2)", "qkv.weight (timm, block 3)", "" for RoleKind::None.
std::string describe_role(const Role& role);

// The blocks the roles mention, ascending, each once.
std::vector<std::size_t> blocks_of(const std::vector<Role>& roles);

// True when role belongs to `block`: its own block equals it, or it names no block.
bool in_block(const Role& role, std::optional<std::size_t> block);

}  // namespace attnscope
