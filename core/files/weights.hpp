// Attention weights from any file the user brings, under any of the conventions of core/files/roles.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "pipeline.hpp"
#include "tensor_source.hpp"

namespace attnscope {

// load_attention_weights(TensorSource::open(path), block, dim).weights.
AttentionWeights load_attention_weights(const std::string& path, std::optional<std::size_t> block,
                                        std::optional<std::size_t> dim);

// The attention weights of one block found in any source, under timm's names (qkv, proj), the
// reference class's (qkv_proj, out_proj), nn.MultiheadAttention's (in_proj_weight, out_proj) or
// Hugging Face ViT's (query, key, value, attention.output.dense), with where they came from.
struct SourceWeights {
    AttentionWeights weights;
    std::string convention;            // one of core/files/roles' k*Convention names
    std::optional<std::size_t> block;  // the block read, when the names carry one
};

// Hugging Face (and nn.MultiheadAttention with kdim != embed_dim) keeps q, k, v as three Linear
// layers; their rows stacked in that order are timm's fused qkv.   query, key, value [C, ...] each -> [3C, ...]
Array stack_qkv(const Array& query, const Array& key, const Array& value);

// Finds and loads the weights of `block` (or, when block is nothing, of the only block the source
// holds); weights under bare names (qkv.weight ...) serve any block. dim: the C the weights must fit, or nothing to take it from the weights.
// FileError("path: ...") when they are missing, ambiguous (several blocks, or two layers in one
// block) or mis-shaped.
SourceWeights load_attention_weights(const TensorSource& source, std::optional<std::size_t> block,
                                     std::optional<std::size_t> dim);

}  // namespace attnscope
