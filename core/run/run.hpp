// Running one attention layer on the path its config names: the textbook (core/engine/pipeline) or
// a path beyond it (core/paths/beyond: FlashAttention, the KV cache, windows). The layer above both;
// the ViT, the file readers, the bug zoo and the app run attention through here.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "config.hpp"
#include "pipeline.hpp"
#include "trace.hpp"

namespace attnscope {

// Readable problems with the config on its path, empty when it can run: the layer's sizes
// (validate_layer), the path's own (validate_beyond), then the memory budget. Names the option at
// fault, e.g. "--dim 100 is not divisible by --heads 8 (head_dim c = C / h must be a whole number)".
std::vector<Message> validate(const AttentionConfig& config, std::uint64_t memory_budget_bytes);

// Bytes the recorded trace of this config needs on its path (every step's tensor plus the weights).
// Saturates at UINT64_MAX instead of overflowing.
std::uint64_t trace_bytes(const AttentionConfig& config);

// Runs the layer and records every step (input, qkv, qkv_split, ..., out_drop) plus the checks.
// std::invalid_argument for an invalid config; ShapeError when its batch/tokens/dim do not match
// input and weights.
Trace run_attention(const AttentionConfig& config, const AttentionWeights& weights,
                    const Tensor& input, const RunHooks& hooks = {});

// The same run recorded into `trace`: when an op throws (a ShapeError of a bug-zoo run), trace
// keeps the steps recorded before it.
void record_attention(Trace& trace, const AttentionConfig& config, const AttentionWeights& weights,
                      const Tensor& input, const RunHooks& hooks = {});

// The same with the input shared, not copied: the input step holds x itself (labelled B, N, C; a
// tensor with other labels is copied once). The ViT hands each block's norm1 over this way.
Trace run_attention(const AttentionConfig& config, const AttentionWeights& weights,
                    std::shared_ptr<const Tensor> input, const RunHooks& hooks = {});
void record_attention(Trace& trace, const AttentionConfig& config, const AttentionWeights& weights,
                      std::shared_ptr<const Tensor> input, const RunHooks& hooks = {});

// Convenience: seeded default weights and input.
Trace run_attention(const AttentionConfig& config, const RunHooks& hooks = {});

// Forward + backward (core/engine/backward) with the config's seeded weights, input and G; the
// Trace carries the gradients (trace.gradients). The paths beyond the textbook have no backward:
// their traces come without.
Trace run_attention_with_gradients(const AttentionConfig& config, const RunHooks& hooks = {});

}  // namespace attnscope
