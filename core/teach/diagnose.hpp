// Finds the first wrong step in the user's own attention code.
//
// The user's intermediates (some of the pinned steps, under step names or aliases) are compared
// in pipeline order with the reference pipeline run on the same input and weights. A step that
// differs is explained when its numbers are what a known bug produces:
//   - the same values under another axis order (a reshape where a permute belongs, a missing transpose);
//   - the same values under another split of 3C (e.g. (h c three) instead of (three h c));
//   - softmax over the wrong axis (columns sum to 1 instead of rows);
//   - the scale missing or applied twice (ratio sqrt(c)), or applied after softmax;
//   - the merge without the transpose.
// Each known bug is replayed through the reference pipeline (run_attention on the same input and
// weights, a RunHooks::edit rewriting the steps its wrong line changes, as in core/teach/bug_zoo),
// so a bug is recognised at any later step too (a dump holding only `out` still names the missing scale).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "pipeline.hpp"
#include "roles.hpp"
#include "tensor_source.hpp"
#include "trace.hpp"

namespace attnscope {

enum class Finding {
    Match,              // equal within tolerance
    Shape,              // another shape, not a rearrangement of the reference's values
    AxisOrder,          // the same values under another axis order
    Split,              // the same values under another split of 3C
    SoftmaxAxis,        // softmax over the wrong axis
    Scale,              // scale missing or applied twice (ratio sqrt(c))
    ScaleAfterSoftmax,  // scale applied after softmax
    MergeTranspose,     // merge without the transpose
    Values,             // other numbers, no known bug explains them
};

// "ok", "shape mismatch", "axis order", "split of 3C", "softmax axis", "scale", "scale after softmax",
// "merge transpose", "values"
const char* finding_name(Finding finding);

// ---- One tensor of a file (inspect, the GUI's file view) ------------------------------------
// An attention map: at least 2 axes, the last two equal (N x N'), no negative value.
bool looks_like_attention_map(const Shape& shape, const Stats& stats);

struct InspectedTensor {
    TensorInfo info;
    Role role;                           // from name and shape
    std::optional<Stats> stats;          // when the values could be loaded
    std::optional<RowSumCheck> row_sums; // attention maps: every row must sum to 1
    std::string error;                   // why the values could not be loaded (one line)
};

// Loads the tensor's values, computes stats, and checks the row sums of an attention map.
InspectedTensor inspect_tensor(const TensorSource& source, const TensorInfo& info);

// ---- Comparing the user's steps with the reference ---------------------------------------------
// One of the user's tensors and the step it stands for.
struct UserStep {
    std::string step;         // pinned step name ("attn")
    std::string tensor_name;  // its name in the user's file ("blocks.0.attn.attn_weights")
    std::string dtype;        // as listed; F16 and BF16 get a coarser tolerance
    Array values;
};

struct StepComparison {
    std::string step;
    std::string tensor_name;
    Shape actual;    // the user's shape
    Shape expected;  // the reference's
    Finding finding = Finding::Match;
    double max_error = 0.0;  // max |user - reference|; NaN when the shapes differ
    double tolerance = 0.0;  // the largest max_error that counts as equal
    std::string diagnosis;   // one line: "ok", or what is wrong and what to change
    std::optional<Array> difference;  // user - reference when the shapes agree (for heat maps)
    bool ok() const { return finding == Finding::Match; }
};

// What the trace records for one comparison: the finding's words, the errors, and the difference
// tensor with the given axis labels (those of the step it belongs to).
StepDifference to_step_difference(const StepComparison& comparison, const std::vector<std::string>& axes);

struct CheckReport {
    std::vector<StepComparison> steps;  // pipeline order
    const StepComparison* first_divergence() const;  // nullptr when every step matches
};

// A tensor of the file and what it stands for.
struct FileRole {
    const TensorInfo* tensor = nullptr;
    Role role;
    bool by_values = false;  // an attention map no name says, found by its values
    bool averaged = false;   // by_values, [B, N, N']: the heads' mean (read as [B, 1, N, N'])
};

// Every tensor's role from its name and shape (recognize_role). When no name is a step's, the
// attention maps among the rest are found by their values: a forward hook on nn.MultiheadAttention
// records (attn_output, attn_weights), saved as {"encoder.layers.encoder_layer_0.self_attention":
// (out, weights)} and listed as "<module>.0" and "<module>.1". A float tensor [B, h, N, N'] or
// [B, N, N'] whose values are all >= 0 and whose rows each sum to 1 (within 1e-3) is step attn
// of the block its path names (else of its place among the maps).
std::vector<FileRole> file_roles(const TensorSource& source);

// The module a hook capture's tensor came from: "a.b.self_attention.1" -> "a.b.self_attention".
std::string capture_module(const std::string& tensor_name);

// The user's steps of one block: every tensor whose role (file_roles) is a step and that names
// this block or no block; a [B, N, N'] map found by its values as [B, 1, N, N']. FileError for a
// 0-d tensor (every step has rank >= 1) or one that cannot be loaded.
std::vector<UserStep> load_user_steps(const TensorSource& source, std::optional<std::size_t> block);

// The number of heads a dump implies: its metadata "num_heads", else axis 1 of a 4-D step
// ([B, h, N, c] or [B, h, N, N]); nothing when neither says.
std::optional<std::size_t> infer_heads(const TensorSource& source, const std::vector<UserStep>& steps);

// reference: run_attention (eval mode) on the user's input and weights.
CheckReport compare_steps(const Trace& reference, const AttentionWeights& weights, const std::vector<UserStep>& user);

}  // namespace attnscope
