// Attention on the picture: pure functions over recorded attention tensors [B, h, N, N'] (token 0
// the class token, then the patches row by row, see PatchGrid) for heat maps and rollout.
// Nothing here runs the model; the GUI and the command line call these on a VitTrace.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "image.hpp"
#include "tensor.hpp"
#include "vit.hpp"

namespace attnscope {

// How the heads of one block become one [N, N'] matrix: their mean, or the max or min per entry.
enum class HeadFusion { mean, max, min };
HeadFusion parse_head_fusion(const std::string& name);  // "mean", "max", "min"; std::invalid_argument otherwise
const char* head_fusion_name(HeadFusion fusion);

// Head `head` of image `batch`.   attn [B, h, N, N'] -> [N, N']
Array head_attention(const Array& attn, std::size_t batch, std::size_t head);

// The heads of image `batch` fused into one matrix.   attn [B, h, N, N'] -> [N, N']
Array fuse_heads(const Array& attn, std::size_t batch, HeadFusion fusion);

// Attention rollout (Abnar & Zuidema 2020) over blocks in order: per block the fused heads A, plus
// the identity for the residual connection, with every row renormalized to sum to 1
// (A + I) / rowsum(A + I); then the product A_last ... A_1. Rows stay distributions for any fusion
// (the max and min of heads do not sum to 1 themselves).   each [B, h, N, N] -> [N, N]
Array attention_rollout(const std::vector<const Array*>& attns, std::size_t batch, HeadFusion fusion);

// Row `query` of a token matrix over the patch tokens (the class and distillation token columns dropped), laid out
// on the patch grid.   matrix [N, N'] -> [rows, cols]
Array token_map(const Array& matrix, std::size_t query, const PatchGrid& grid);

// The image with a heat map over it: map [rows, cols] stretched over the whole image (each cell a
// block of pixels), scaled by its max to v in [0, 1] (negatives clamped to 0), coloured with a
// dark-purple-to-yellow colormap and blended as a * colour + (1 - a) * image with
// a = opacity * (0.3 + 0.7 v): the hottest cells get the full opacity, cold ones keep the picture.
RgbImage heat_overlay(const RgbImage& image, const Array& map, float opacity = 0.7f);

}  // namespace attnscope
