// The recorded forward pass of one attention layer, mirroring the reference's ViTAttention.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <optional>
#include <stdexcept>

#include "config.hpp"
#include "trace.hpp"

namespace attnscope {

struct AttentionWeights {
    Array qkv_weight;                // [3C, C]
    std::optional<Array> qkv_bias;   // [3C], absent when qkv_bias=False
    Array proj_weight;               // [C, C]
    Array proj_bias;                 // [C]
};

// The reference's initialisation, derived from config.seed (same numbers on every machine):
// qkv.weight Xavier-uniform, qkv.bias zeros, proj weight and bias uniform(+-1/sqrt(C)).
AttentionWeights default_weights(const AttentionConfig& config);

// x ~ N(0, 1) of shape [B, N, C], derived from config.seed.
Tensor default_input(const AttentionConfig& config);

struct Cancelled : std::runtime_error {
    Cancelled() : std::runtime_error("cancelled") {}
};

struct RunHooks {
    std::function<void(std::size_t done, std::size_t total)> progress;  // after each step
    const std::atomic<bool>* cancel = nullptr;  // checked between steps; throws Cancelled
};

// Runs the layer and records every step (input, qkv, qkv_split, ..., out_drop) plus the checks.
// The config's batch/tokens/dim must match input and weights (ShapeError otherwise).
Trace run_attention(const AttentionConfig& config, const AttentionWeights& weights,
                    const Tensor& input, const RunHooks& hooks = {});

// Convenience: seeded default weights and input.
Trace run_attention(const AttentionConfig& config, const RunHooks& hooks = {});

}  // namespace attnscope
