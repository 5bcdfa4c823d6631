// Attention weights from a safetensors file with timm's names.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "pipeline.hpp"

namespace attnscope {

// Empty when the weights fit dim C; otherwise one line such as
// "qkv.weight has shape [300, 100], expected [3*C, C] = [360, 120] for dim 120".
std::string check_attention_weights(const AttentionWeights& weights, std::size_t dim);

// Reads qkv.weight [3C, C], qkv.bias [3C] (optional), proj.weight [C, C], proj.bias [C], bare or
// under "blocks.<block>.attn." when block is given; other tensors in the file are ignored.
// dim: the C the weights must fit (from the input), or nothing to take C from qkv.weight.
// Throws FileError("path: ...") for missing or mis-shaped tensors.
AttentionWeights load_attention_weights(const std::string& path, std::optional<std::size_t> block,
                                        std::optional<std::size_t> dim);

}  // namespace attnscope
