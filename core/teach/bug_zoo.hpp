// The bug zoo: classic mistakes in multi-head attention, switched on one at a time.
//
// Each bug runs through the same recorded pipeline (run_attention with a RunHooks::edit that
// rewrites the steps the wrong line changes), on the same weights and input as the correct run,
// and is compared with it step by step (core/teach/diagnose's compare_steps). The report says which
// check catches the bug and at which step it first shows:
//   shape error       the run stops: an op refuses its operands (the message names both)
//   shape check       a tensor every implementation has (q, k, v, scores, attn, context, merged,
//                     out) has another shape than the formula says
//   row-sum check     the rows of attn do not sum to 1
//   difference        only comparing with the correct pipeline shows it (shapes and row sums pass)
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "diagnose.hpp"
#include "pipeline.hpp"
#include "trace.hpp"

namespace attnscope {

enum class Bug {
    None,
    ReshapeWithoutPermute,  // qkv.reshape(B, N, 3, h, c).reshape(3, B, h, N, c)
    SplitHC3,               // qkv.reshape(B, N, h, c, 3): the (h c three) split
    SoftmaxDim2,            // attn.softmax(dim=-2)
    MissingScale,           // q @ k.transpose(-2, -1) without * self.scale
    ScaleAfterSoftmax,      // (q @ k.transpose(-2, -1)).softmax(dim=-1) * self.scale
    MergeWithoutTranspose,  // (attn @ v).reshape(B, N, C)
    KNotTransposed,         // q @ k
    // Off the zoo's list (bug_infos: no --bug key, no menu entry): `attnscope check` replays it to name it
    // in a user's dump (core/teach/diagnose), but a listed bug also needs a documented symptom and catching
    // check and a translated title in the app, which this one does not have.
    DoubleScale,  // (q @ k.transpose(-2, -1)) * self.scale * self.scale
};

enum class CaughtBy { Nothing, ShapeError, ShapeCheck, RowSumCheck, Difference };

const char* caught_by_name(CaughtBy by);  // "shape error", "shape check", "row-sum check", "difference from the correct pipeline"

// What the zoo says about one bug (documented; the tests check the runs against it).
struct BugInfo {
    Bug bug;
    const char* key;          // "softmax-dim-2" (command line)
    const char* title;        // "softmax over dim -2"
    const char* wrong_line;   // the PyTorch line as the buggy code writes it
    const char* right_line;   // as the reference writes it
    const char* symptom;      // what the student sees
    CaughtBy caught_by;       // the cheapest check that fails
    const char* first_step;   // the first step whose numbers (or shape) differ; the failing step for a shape error
};

const std::vector<BugInfo>& bug_infos();  // Bug::None first, then in enum order (without DoubleScale)
const BugInfo& bug_info(Bug bug);         // Bug::None's entry for a bug off the list
std::optional<Bug> bug_from_key(const std::string& key);

// The pipeline's steps the buggy code does not have (context_t without the transpose, k_t without
// k.transpose); they are left out of the buggy trace.
std::vector<std::string> steps_missing_in(Bug bug);

// The hooks of a buggy run: hooks, and after hooks.edit the RunHooks::edit that rewrites the steps the
// bug's wrong line changes (none for Bug::None). A wrong line's self.scale is attention_scale(config).
RunHooks bug_hooks(Bug bug, const AttentionConfig& config, const RunHooks& hooks = {});

// One run of the zoo: the buggy trace beside the correct one.
struct ZooRun {
    Bug bug = Bug::None;
    Trace correct;             // run_attention on the weights and input
    Trace buggy;               // the same run with the bug; differences[] filled (buggy - correct)
    std::string failure;       // the shape error that stopped the buggy run ("" when it ran through)
    CheckReport comparison;    // buggy steps against the correct ones (pipeline order)
    CaughtBy caught_by = CaughtBy::Nothing;  // measured on this run
    std::string first_step;    // the first step that differs (or the failing step); "" when none
    std::string shape_problem; // the first failing shape check, one line
    std::string caught_text;   // one or two sentences for the user: what catches it, where
};

// Runs the correct and the buggy pipeline on the same weights and input.
ZooRun run_zoo(const AttentionConfig& config, const AttentionWeights& weights, const Tensor& input, Bug bug,
               const RunHooks& hooks = {});
ZooRun run_zoo(const AttentionConfig& config, Bug bug, const RunHooks& hooks = {});  // seeded defaults

// The buggy pipeline alone (its trace holds the steps before a shape error; failure says why).
Trace run_buggy_attention(const AttentionConfig& config, const AttentionWeights& weights, const Tensor& input,
                          Bug bug, std::string* failure, const RunHooks& hooks = {});

}  // namespace attnscope
