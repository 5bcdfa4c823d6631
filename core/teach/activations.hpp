// One Trace from a file the user brings (activations, a dump, a checkpoint, attention maps only).
//
//   the user's tensor when the file has the step        origin Loaded   ("acts.npz: attn_weights")
//   else the reference's step, when input + weights are  origin Computed
//   else absent (the step is not in the trace)
//
// Loaded steps that the reference also computed carry a StepDifference (compare_steps, the known
// bugs of core/teach/diagnose). The GUI shows this trace; `attnscope check` uses the same helpers to
// build its reference run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "heads.hpp"
#include "pipeline.hpp"
#include "tensor_source.hpp"
#include "trace.hpp"
#include "weights.hpp"

namespace attnscope {

// ---- Helpers shared with `attnscope check` ----------------------------------------------------
// "holds 3 NaN and 0 Inf values", or "" when every value is finite.
std::string nonfinite_text(const Stats& stats);
Message nonfinite_message(const Stats& stats);  // "holds 2 NaN and 0 Inf values", or empty

// The blocks named by the file's tensors whose role is a step (ascending), from names alone.
std::vector<std::size_t> step_blocks(const TensorSource& source);

// x as the reference's input [B, N, C] with its axis labels. FileError "from: the input has shape
// [...], expected [B, N, C]" or "from: the input holds 3 NaN ...; attnscope needs finite numbers".
Tensor checked_input(Array x, const std::string& from);

// FileError "path: qkv.weight holds ... NaN ...; attnscope needs finite numbers".
void require_finite_weights(const AttentionWeights& weights, const std::string& path);

// The reference run's config: B, N, C from x, qkv_bias from the weights, h = heads (eval mode), and
// the steps in the lines of the weights' own code where that is a reference (Hugging Face's names:
// ViTSelfAttention's lines). FileError with validate()'s first problem when it cannot run
// ("--dim 24 is not divisible by --heads 5 ...").
AttentionConfig reference_config(const Tensor& x, const SourceWeights& weights, std::size_t heads);

// ---- The trace of a file ----------------------------------------------------------------------
struct FileTrace {
    Trace trace;                        // source_path set; steps in pipeline order; config sizes the
                                        // file does not tell (no reference run) are 0
    std::vector<std::size_t> blocks;    // the blocks the file holds (steps or weights); empty: none named
    std::optional<std::size_t> block;   // the block shown
    std::vector<Message> notes;         // one line each: where input, weights, heads came from; what is missing
    bool attention_maps_only = false;   // every loaded step is an attention map and nothing was computed
};

// Seeded x ~ N(0, 1) for a checkpoint without an input: its batch and tokens (the config's seed).
struct CheckpointInput {
    std::size_t batch = 1;
    std::size_t tokens = 0;  // 0: from pos_embed [1, N, C] when the file has one, else 16
    std::uint64_t seed = 0;
};

// Builds the trace of `block` (default: the first block the file names). heads: h, else the
// file's metadata or a 4-D step, else its configuration (heads_from_file); the notes say which.
// HeadsUnknown when the reference must run and nothing gives h. FileError "path: ..." when nothing in the file is a step
// or attention weights, when `block` is not in the file, or a step cannot be read (0-d, bad dtype).
FileTrace trace_from_file(const TensorSource& source, std::optional<std::size_t> block = std::nullopt,
                          std::optional<std::size_t> heads = std::nullopt, const CheckpointInput& checkpoint = {});

}  // namespace attnscope
