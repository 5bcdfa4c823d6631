// Everything about the steps of the reference's forward(), in one table.
//
// One row per recorded step of the textbook layer (core/engine/pipeline.cpp): its op, the PyTorch
// expression, the einops pattern, the shape formula, the line of forward() it sits on, the steps it
// reads and how its index maps onto theirs, what the reference's lines call its tensor and the
// names users' files give it. The shape checks, the memory budget, the cost table, the provenance
// graph, the loaded-file readers, the backward pass and the panels all read this table, so a new
// step is one StepId with its row here, one recorded op in the pipeline, and its narrative's row
// (app/gui/logic/narrative.cpp, checked against the ids at compile time).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "config.hpp"
#include "tensor.hpp"

namespace attnscope {

// ---- ops ----------------------------------------------------------------------------------------

// What a step does. The first block is the reference's attention; the rest are the ops of the
// paths beyond it (core/paths/), of the whole ViT (core/vit/) and of the bug zoo (core/teach/).
enum class Op : std::uint8_t {
    input,
    linear,
    reshape,
    permute,
    unbind,
    transpose,
    matmul,
    scale,
    mask,
    softmax,
    dropout,
    identity,
    roll,
    cat,
    add,
    select,
    layernorm,
    gelu,
    patchify,
    conv2d,
    batchnorm,
    relu,
    attention,
    flash_attention,
    kv_rows,
    kv_decode,
    slice,
    drop_path,
    count
};

// The four kinds a learner tells apart: layout ops move no number (a view, or a copy in a new
// order), products mix numbers along an axis, softmax turns rows into distributions, projections
// multiply by learned weights; elementwise ops change each number on its own.
enum class OpKind : std::uint8_t { input, layout, product, softmax, projection, elementwise };

struct OpInfo {
    Op op;
    const char* name;    // as PyTorch calls it and as trace.json and `attnscope trace` print it
    const char* symbol;  // what joins the operands when a panel writes them out: "q @ k_t", "x + attn_out"
    OpKind kind;
};

inline constexpr OpInfo kOps[] = {
    {Op::input, "input", ",", OpKind::input},
    {Op::linear, "linear", "@", OpKind::projection},
    {Op::reshape, "reshape", ",", OpKind::layout},
    {Op::permute, "permute", ",", OpKind::layout},
    {Op::unbind, "unbind", ",", OpKind::layout},
    {Op::transpose, "transpose", ",", OpKind::layout},
    {Op::matmul, "matmul", "@", OpKind::product},
    {Op::scale, "scale", "*", OpKind::elementwise},
    {Op::mask, "mask", ",", OpKind::elementwise},
    {Op::softmax, "softmax", ",", OpKind::softmax},
    {Op::dropout, "dropout", ",", OpKind::elementwise},
    {Op::identity, "identity", ",", OpKind::layout},
    {Op::roll, "roll", ",", OpKind::layout},
    {Op::cat, "cat", ",", OpKind::layout},
    {Op::add, "add", "+", OpKind::elementwise},
    {Op::select, "select", ",", OpKind::layout},
    {Op::layernorm, "layernorm", ",", OpKind::projection},
    {Op::gelu, "gelu", ",", OpKind::elementwise},
    {Op::patchify, "patchify", ",", OpKind::layout},
    {Op::conv2d, "conv2d", "*", OpKind::projection},
    {Op::batchnorm, "batchnorm", ",", OpKind::projection},
    {Op::relu, "relu", ",", OpKind::elementwise},
    {Op::attention, "attention", ",", OpKind::product},
    {Op::flash_attention, "flash_attention", ",", OpKind::product},
    {Op::kv_rows, "kv_rows", ",", OpKind::softmax},
    {Op::kv_decode, "kv_decode", ",", OpKind::product},
    {Op::slice, "slice", ",", OpKind::layout},
    {Op::drop_path, "drop_path", "*", OpKind::elementwise},
};

// kOps has one row per Op, in the enum's order: a new Op without its row does not compile.
constexpr bool ops_in_enum_order() {
    if (std::size(kOps) != static_cast<std::size_t>(Op::count)) return false;
    for (std::size_t i = 0; i < std::size(kOps); ++i)
        if (static_cast<std::size_t>(kOps[i].op) != i) return false;
    return true;
}
static_assert(ops_in_enum_order(), "kOps needs one row per Op, in the order of the enum");

constexpr const OpInfo& op_info(Op op) { return kOps[static_cast<std::size_t>(op)]; }
constexpr const char* op_name(Op op) { return op_info(op).name; }
constexpr const char* op_symbol(Op op) { return op_info(op).symbol; }
constexpr OpKind op_kind(Op op) { return op_info(op).kind; }
// The Op printed as `name` (trace.json, tests); Op::count when no op has that name.
Op op_named(std::string_view name);

inline bool operator==(Op op, std::string_view name) { return name == op_name(op); }
inline bool operator!=(Op op, std::string_view name) { return !(op == name); }

// ---- the reference's forward() ------------------------------------------------------------------

// The reference's forward() (ViTAttention's or MultiHeadAttention's), one string per line, without
// "def forward(self, x):" and its indentation.
const std::vector<std::string_view>& forward_lines(Reference reference = Reference::vit);

// ---- the steps ----------------------------------------------------------------------------------

// What a step costs (core/teach/cost.hpp), as formulas in B, N, C, h, c; the numbers follow from
// the op and the shapes. The _alt formulas hold when `alt` does: qkv's bias is on (--qkv-bias), or
// dropout is active (training with p > 0).
enum class CostAlt : std::uint8_t { never, qkv_bias, dropping };
struct StepCostText {
    std::string_view params;  // "" when the step has none
    std::string_view flops;   // "" when none
    std::string_view bytes;   // float32: "4 B N 3C"
    CostAlt alt = CostAlt::never;
    std::string_view params_alt = {}, flops_alt = {};
};

// The recorded steps of the textbook layer, in the order forward() computes them. Code names a
// step by its id (a misspelt step does not compile); its name (step_name) is what dumps,
// trace.json, the panels and users' files call it, and is pinned.
enum class StepId : std::uint8_t {
    input,
    qkv,
    qkv_split,
    qkv_heads,
    q,
    k,
    v,
    k_t,
    scores,
    scaled,
    masked,
    attn,
    attn_drop,
    context,
    context_t,
    merged,
    out,
    out_drop,
    count
};
inline constexpr StepId kNoStep = StepId::count;

// The pinned name of a step (StepId::k_t is named k_t), a string literal: data() is NUL-terminated.
std::string_view step_name(StepId step);
// The step called `name`, or kNoStep.
StepId step_id(std::string_view name);

inline bool operator==(std::string_view name, StepId step) { return name == step_name(step); }
inline bool operator!=(std::string_view name, StepId step) { return !(name == step); }

// The steps a step reads, kNoStep after the last.
struct StepInputs {
    StepId first = kNoStep, second = kNoStep;
};

struct StepInfo {
    StepId id;
    Op op;
    std::string_view code;                   // the PyTorch expression, as written in its line of forward()
    std::string_view pattern;                // einops-style: "b n three h c -> three b h n c"
    std::string_view shape;                  // over B, N, C, h, c: "[B, N, 3*C]"
    int line;                                // in forward_lines(); -1: not a line of the reference (the mask)
    StepInputs inputs;
    // permute, transpose: output axis i is input axis dims[i]; unbind: dims[0] is the index taken.
    std::array<std::uint8_t, 5> dims;
    bool attention_map;  // [B, h, N, N']: one weight or score per (query, key)
    bool distribution;   // every row sums to 1 (the softmax and what dropout makes of it)
    bool only_masked;    // recorded only with a causal or padding mask
    // What ViTAttention's lines call this step's tensor where they do not name the step: attn_drop
    // is "attn", context "(attn @ v)"; "" when the lines use its name.
    std::string_view written_as;
    // Other names users' files and libraries give the step, space-separated: "attn_weights
    // attention_probs ..." (Hugging Face divides its attention_scores by sqrt(c): they are scaled).
    std::string_view also_called;
    StepCostText cost;
    std::string_view name = {};  // step_name(id), filled in by the table
};

// The steps of run_attention in order; `masked` (only_masked) sits between scaled and attn. The
// MultiHeadAttention reference has the same steps under the same names (dumps stay comparable)
// with its own lines of code, and no out_drop.
const std::vector<StepInfo>& attention_steps(Reference reference = Reference::vit);
// The row of a pinned step, or nullptr (a reference without that step: MultiHeadAttention's out_drop).
const StepInfo* step_info(std::string_view step, Reference reference = Reference::vit);
const StepInfo* step_info(StepId step, Reference reference = Reference::vit);
// How many steps run_attention records for this config (the mask's step only when masked).
std::size_t attention_step_count(const AttentionConfig& config);
// True for the [B, h, N, N'] maps: scores, scaled, masked, attn, attn_drop.
bool is_attention_map(std::string_view step);

// The step's shape for this config, from its formula ("[B, N, 3*C]"); each dimension saturates at
// UINT64_MAX instead of wrapping, so absurd configs can be measured before they are refused.
Shape step_shape(const StepInfo& step, const AttentionConfig& config);

}  // namespace attnscope
