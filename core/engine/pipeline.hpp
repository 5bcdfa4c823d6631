// The recorded forward pass of one attention layer, mirroring the reference's ViTAttention.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>

#include "config.hpp"
#include "packed_linear.hpp"
#include "trace.hpp"

namespace attnscope {

// Random streams of one seed; fixed numbers so that a seed means the same thing forever.
// The dropout streams are drawn again by the backward pass (core/engine/backward.cpp) for the same masks.
enum Stream : std::uint64_t {
    kInput = 1, kQkvWeight = 2, kProjWeight = 3, kProjBias = 4, kAttnDrop = 5, kProjDrop = 6, kGradOutput = 7,
    kQkvBias = 8,
    // Swin's patch merging (core/paths/windows.cpp): its reduction and the second stage's attention.
    kMergeReduction = 9, kStage2QkvWeight = 10, kStage2ProjWeight = 11, kStage2ProjBias = 12,
    // The ViT's DropPath masks (core/vit/vit.cpp): B draws per drop_path step, in execution order.
    kDropPath = 13
};

// self.scale = c^-0.5, or 1 when config.scaled is false (--no-scale).
float attention_scale(const AttentionConfig& config);

struct AttentionWeights {
    Array qkv_weight;                // [3C, C]
    std::optional<Array> qkv_bias;   // [3C], absent when qkv_bias=False
    Array proj_weight;               // [C, C]
    Array proj_bias;                 // [C]
    // qkv_weight and proj_weight laid out for the AVX-512 kernel (pack_weights, core/kernels/packed_linear);
    // empty, or packed from other storage: linear uses OpenBLAS.
    std::shared_ptr<const PackedWeight> qkv_packed, proj_packed;
};

// Empty when the weights fit dim C; otherwise one line such as
// "qkv.weight has shape [300, 100], expected [3*C, C] = [360, 120] for dim 120".
Message check_attention_weights(const AttentionWeights& weights, std::size_t dim);

// Packs qkv_weight and proj_weight for the AVX-512 kernel, once the weights are final (they are
// never changed in place afterwards: a copy has new storage and falls back to OpenBLAS).
void pack_weights(AttentionWeights& w);

// The reference's initialisation, derived from config.seed (same numbers on every machine):
// qkv.weight Xavier-uniform, qkv.bias zeros, proj weight and bias uniform(+-1/sqrt(C)).
AttentionWeights default_weights(const AttentionConfig& config);

// N(0, 1) of shape [B, N, C] from config.seed and one stream (kInput: x, kGradOutput: G).
Tensor seeded_normal_bnc(const AttentionConfig& config, Stream stream);

// x ~ N(0, 1) of shape [B, N, C], derived from config.seed.
Tensor default_input(const AttentionConfig& config);

struct Cancelled : std::runtime_error {
    Cancelled() : std::runtime_error("cancelled") {}
};

struct RunHooks {
    std::function<void(std::size_t done, std::size_t total)> progress;  // after each step
    const std::atomic<bool>* cancel = nullptr;  // checked between steps; throws Cancelled
    // The bug zoo (core/teach/bug_zoo): rewrites a step (its tensor, code, note) before it is recorded;
    // later steps then compute from the rewritten tensor. so_far: the steps recorded before it.
    std::function<void(const Trace& so_far, Step& step)> edit;
};

// Records the textbook layer into `trace`: every step (input, qkv, qkv_split, ..., out_drop) plus
// the checks. The config must be valid, on the standard path, and fit input and weights: core/run's
// record_attention checks that and chooses the path (everything above core/paths runs attention
// there). The input step holds x itself (labelled B, N, C; a tensor with other labels is copied
// once). When an op throws (a ShapeError of a bug-zoo run), trace keeps the steps recorded before it.
void record_textbook(Trace& trace, const AttentionConfig& config, const AttentionWeights& weights,
                     std::shared_ptr<const Tensor> input, const RunHooks& hooks = {});

}  // namespace attnscope
