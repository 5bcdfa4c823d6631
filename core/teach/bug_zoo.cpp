// The bug zoo: each bug is a RunHooks::edit that rewrites the steps its wrong line changes.
//
// [SECTION] The bugs, as the zoo documents them
// [SECTION] The wrong lines, as step rewrites
// [SECTION] run_zoo: the buggy run beside the correct one
#include "bug_zoo.hpp"

#include <algorithm>
#include <cstdio>

#include "checks.hpp"
#include "ops.hpp"
#include "run.hpp"
#include "torch_layout.hpp"

namespace attnscope {

// ============================================================================================
// [SECTION] The bugs, as the zoo documents them
// ============================================================================================
const char* caught_by_name(CaughtBy by) {
    switch (by) {
        case CaughtBy::Nothing: return "nothing";
        case CaughtBy::ShapeError: return "shape error";
        case CaughtBy::ShapeCheck: return "shape check";
        case CaughtBy::RowSumCheck: return "row-sum check";
        case CaughtBy::Difference: return "difference from the correct pipeline";
    }
    return "nothing";
}

const std::vector<BugInfo>& bug_infos() {
    static const std::vector<BugInfo> infos = {
        {Bug::None, "none", "no bug (the reference)", "", "", "", CaughtBy::Nothing, ""},
        {Bug::ReshapeWithoutPermute, "reshape-without-permute", "reshape to [3, B, h, N, c] without the permute",
         "qkv = self.qkv(x).reshape(B, N, 3, h, c).reshape(3, B, h, N, c)",
         "qkv = self.qkv(x).reshape(B, N, 3, h, c).permute(2, 0, 3, 1, 4)",
         "q, k, v have the right shape [B, h, N, c] and every softmax row sums to 1, but a head's rows are "
         "pieces of other tokens and heads: the numbers were poured into the new shape in their old "
         "[B, N, 3, h, c] order",
         CaughtBy::Difference, step_name(StepId::qkv_heads).data()},
        {Bug::SplitHC3, "split-h-c-three", "the (h c three) split of 3C",
         "qkv = self.qkv(x).reshape(B, N, h, c, 3).permute(4, 0, 2, 1, 3)   # 'b n (h c three)'",
         "qkv = self.qkv(x).reshape(B, N, 3, h, c).permute(2, 0, 3, 1, 4)   # 'b n (three h c)'",
         "q, k, v come out [B, h, N, c] and rows sum to 1, but each of them takes every third column of "
         "qkv: q, k and v are interleaved instead of the first, second and last C columns",
         CaughtBy::Difference, step_name(StepId::qkv_split).data()},
        {Bug::SoftmaxDim2, "softmax-dim-2", "softmax over dim -2", "attn = attn.softmax(dim=-2)",
         "attn = attn.softmax(dim=-1)",
         "every column of attn sums to 1, the rows do not: each key distributes itself over the queries "
         "instead of each query over the keys",
         CaughtBy::RowSumCheck, step_name(StepId::attn).data()},
        {Bug::MissingScale, "missing-scale", "missing scale", "attn = q @ k.transpose(-2, -1)",
         "attn = (q @ k.transpose(-2, -1)) * self.scale",
         "the scores are sqrt(c) times too large, so the softmax is much peakier (close to one-hot); rows "
         "still sum to 1 and every shape is right",
         CaughtBy::Difference, step_name(StepId::scaled).data()},
        {Bug::ScaleAfterSoftmax, "scale-after-softmax", "scale applied after softmax",
         "attn = (q @ k.transpose(-2, -1)).softmax(dim=-1) * self.scale",
         "attn = ((q @ k.transpose(-2, -1)) * self.scale).softmax(dim=-1)",
         "softmax sees the unscaled scores (too peaky), and its rows then sum to c^-0.5 instead of 1",
         CaughtBy::RowSumCheck, step_name(StepId::scaled).data()},
        {Bug::MergeWithoutTranspose, "merge-without-transpose", "merge without transpose(1, 2)",
         "x = (attn @ v).reshape(B, N, C)", "x = (attn @ v).transpose(1, 2).reshape(B, N, C)",
         "the shape [B, N, C] is right, but token n of the result holds pieces of several tokens of one "
         "head instead of token n of every head",
         CaughtBy::Difference, step_name(StepId::merged).data()},
        {Bug::KNotTransposed, "k-not-transposed", "k not transposed", "attn = q @ k",
         "attn = q @ k.transpose(-2, -1)",
         "matmul refuses [B, h, N, c] @ [B, h, N, c]: the inner axes c and N disagree (when N = c it runs and "
         "silently computes q @ k with the wrong axes)",
         CaughtBy::ShapeError, step_name(StepId::scores).data()},
    };
    return infos;
}

const BugInfo& bug_info(Bug bug) {
    for (const BugInfo& b : bug_infos())
        if (b.bug == bug) return b;
    return bug_infos().front();
}

std::optional<Bug> bug_from_key(const std::string& key) {
    for (const BugInfo& b : bug_infos())
        if (key == b.key) return b.bug;
    return std::nullopt;
}

std::vector<std::string> steps_missing_in(Bug bug) {
    if (bug == Bug::MergeWithoutTranspose) return {std::string(step_name(StepId::context_t))};
    if (bug == Bug::KNotTransposed) return {std::string(step_name(StepId::k_t))};
    return {};
}

// ============================================================================================
// [SECTION] The wrong lines, as step rewrites
// ============================================================================================
namespace {

// softmax(dim=-2): each column sums to 1.   x [B, h, N, N'] -> [B, h, N, N']
Tensor softmax_columns(const Tensor& x) { return transpose(softmax_last(transpose(x, 2, 3)), 2, 3); }

void set_contiguous(Step& step) {
    step.torch_strides = TorchLayout::contiguous(step.shape()).strides;
    step.contiguous = true;
}

// The RunHooks::edit of one bug: rewrites the steps the wrong line changes, before they are recorded.
void edit_step(Bug bug, const AttentionConfig& cfg, const Trace& so_far, Step& step) {
    const std::size_t B = cfg.batch, N = cfg.tokens, h = cfg.heads, c = cfg.head_dim();
    const float s = attention_scale(cfg);  // self.scale as the correct run has it (1 with --no-scale)
    const std::string& name = step.name;
    switch (bug) {
        case Bug::None: return;
        case Bug::ReshapeWithoutPermute:
            if (name == StepId::qkv_heads) {  // [B, N, 3, h, c] numbers poured into [3, B, h, N, c]
                step.op = Op::reshape;
                step.code = ".reshape(3, B, self.num_heads, N, C // self.num_heads)   # BUG: no permute";
                step.formula = "(b n three h c) -> (three b h n c)  same order in memory, new shape";
                step.set_tensor(reshape(so_far.at(StepId::qkv_split).tensor(), {3, B, h, N, c}, {"3", "B", "h", "N", "c"}));
                set_contiguous(step);
                step.note = "view, no copy: a reshape keeps the row-major order, so the axes are relabelled, not moved";
            }
            return;
        case Bug::SplitHC3:
            if (name == StepId::qkv_split) {  // [B, N, 3C] cut as (h c three)
                step.code = ".reshape(B, N, self.num_heads, C // self.num_heads, 3)   # BUG: (h c three)";
                step.formula = "b n (h c three) -> b n h c three";
                step.set_tensor(reshape(so_far.at(StepId::qkv).tensor(), {B, N, h, c, 3}, {"B", "N", "h", "c", "3"}));
                set_contiguous(step);
                step.note = "view, no copy: the 3C axis cut as (h c three), so q, k and v take every third column of "
                            "qkv instead of its first, second and last C columns";
            } else if (name == StepId::qkv_heads) {
                step.code = ".permute(4, 0, 2, 1, 3)";
                step.formula = "b n h c three -> three b h n c";
                step.set_tensor(permute(so_far.at(StepId::qkv_split).tensor(), {4, 0, 2, 1, 3}));
                const TorchLayout l = torch_permute(TorchLayout::contiguous({B, N, h, c, 3}), {4, 0, 2, 1, 3});
                step.torch_strides = l.strides;
                step.contiguous = l.is_contiguous();
                step.note = "view, no copy: permute only reorders the strides (strides " + format_strides(l.strides) +
                            ", not contiguous)";
            }
            return;
        case Bug::SoftmaxDim2:
            if (name == StepId::attn) {
                step.code = "attn.softmax(dim=-2)   # BUG: over the queries";
                step.formula = "b h n m -> b h n m  (softmax over n)";
                step.set_tensor(softmax_columns(so_far.at(StepId::scaled).tensor()));
                step.note = "new contiguous tensor: every column (b, h, m) sums to 1, not every row";
            }
            return;
        case Bug::MissingScale:
        case Bug::ScaleAfterSoftmax:
            if (name == StepId::scaled) {  // what enters the softmax: the scores as they are
                step.op = Op::identity;
                step.code = bug == Bug::MissingScale ? "(no * self.scale)   # BUG: scale missing"
                                                     : "(no * self.scale yet)   # BUG: it comes after the softmax";
                step.formula = "b h n m -> b h n m  (x 1)";
                step.set_tensor(so_far.at(StepId::scores).tensor());
                step.is_view = true;
                step.note = "the same tensor: the scores go into the softmax unscaled";
            } else if (name == StepId::attn && bug == Bug::ScaleAfterSoftmax) {
                step.code = "attn.softmax(dim=-1) * self.scale   # BUG: scale after softmax";
                step.formula = cfg.scaled ? "b h n m -> b h n m  (softmax over m, then x c^-0.5)"
                                          : "b h n m -> b h n m  (softmax over m, then x 1: scale off)";
                step.set_tensor(scale(step.tensor(), s));
                step.note = cfg.scaled ? "new contiguous tensor: every row sums to c^-0.5, not 1"
                                       : "new contiguous tensor; with the scale off (x 1) every row still sums to 1";
            }
            return;
        case Bug::DoubleScale:
            if (name == StepId::scaled) {
                step.code = "* self.scale * self.scale   # BUG: scaled twice";
                step.formula = "b h n m -> b h n m  (x self.scale, twice)";
                step.set_tensor(scale(step.tensor(), s));
                step.note = "new contiguous tensor: the scores times self.scale squared";
            }
            return;
        case Bug::MergeWithoutTranspose:
            if (name == StepId::context_t) {  // not in the buggy code: the merge reads context itself
                step.set_tensor(so_far.at(StepId::context).tensor());
            } else if (name == StepId::merged) {
                step.code = "(attn @ v).reshape(B, N, C)   # BUG: no .transpose(1, 2)";
                step.formula = "(b h n c) -> (b n C)  same order in memory, new shape";
                step.inputs = {std::string(step_name(StepId::context))};
                step.operands = {{"attn @ v", so_far.at(StepId::context).shape()}};
                step.is_view = true;
                step.note = "view, no copy: context is contiguous, so reshape relabels it; token n of the result "
                            "is a run of C numbers of one head, not token n of every head";
            }
            return;
        case Bug::KNotTransposed:
            if (name == StepId::k_t) step.set_tensor(so_far.at(StepId::k).tensor());  // not in the buggy code: scores reads k
            return;
    }
}

// "q @ k" failed: the message as TensorSensor shows it, the innermost operands and their shapes.
std::string k_not_transposed_message(const Trace& so_far) {
    const Step& q = so_far.at(StepId::q);
    const Step& k = so_far.at(StepId::k);
    const auto row = [](const char* name, const Step& s) {
        return std::string("    ") + name + ": " + format_axes(s.axes()) + " = " + format_shape(s.shape());
    };
    const Shape qs = q.shape(), ks = k.shape();
    return "Cause: @ on tensor operand q w/ shape " + format_shape(qs) + " and operand k w/ shape " + format_shape(ks) +
           "\n    attn = q @ k\n" + row("q", q) + "\n" + row("k", k) + "\n    q's last axis (c = " +
           std::to_string(qs.back()) + ") must equal k's second-to-last axis (N' = " + std::to_string(ks[ks.size() - 2]) +
           "); use k.transpose(-2, -1)";
}

std::size_t pipeline_index(const std::string& step) {
    const auto& names = attention_step_names();
    return static_cast<std::size_t>(std::find(names.begin(), names.end(), step) - names.begin());
}

}  // namespace

RunHooks bug_hooks(Bug bug, const AttentionConfig& cfg, const RunHooks& hooks) {
    RunHooks h = hooks;
    if (bug != Bug::None)
        h.edit = [bug, cfg, outer = hooks.edit](const Trace& so_far, Step& step) {
            if (outer) outer(so_far, step);
            edit_step(bug, cfg, so_far, step);
        };
    return h;
}

// ============================================================================================
// [SECTION] run_zoo
// ============================================================================================
Trace run_buggy_attention(const AttentionConfig& cfg, const AttentionWeights& w, const Tensor& x, Bug bug,
                          std::string* failure, const RunHooks& hooks) {
    Trace trace;
    std::string error;
    try {
        record_attention(trace, cfg, w, x, bug_hooks(bug, cfg, hooks));
    } catch (const ShapeError&) {
        if (bug != Bug::KNotTransposed || trace.steps.empty()) throw;  // only that bug fails on purpose
        error = k_not_transposed_message(trace);
    }
    // Leave out the steps the buggy code does not have.
    for (const std::string& missing : steps_missing_in(bug)) {
        if (const Step* gone = trace.find(missing); gone && !gone->inputs.empty()) {  // readers read its input
            const std::string input = gone->inputs.front();
            const Shape input_shape = trace.at(input).shape();
            for (Step& s : trace.steps)
                for (std::size_t i = 0; i < s.inputs.size(); ++i)
                    if (s.inputs[i] == missing) {
                        s.inputs[i] = input;
                        if (i < s.operands.size()) s.operands[i] = {input, input_shape};
                    }
        }
        trace.steps.erase(std::remove_if(trace.steps.begin(), trace.steps.end(),
                                         [&](const Step& s) { return s.name == missing; }),
                          trace.steps.end());
        trace.checks.shapes.erase(std::remove_if(trace.checks.shapes.begin(), trace.checks.shapes.end(),
                                                 [&](const ShapeCheck& s) { return s.step == missing; }),
                                  trace.checks.shapes.end());
    }
    if (!error.empty()) finish_checks(trace, expected_attention_shapes(cfg));
    if (failure) *failure = error;
    return trace;
}

ZooRun run_zoo(const AttentionConfig& cfg, Bug bug, const RunHooks& hooks) {
    return run_zoo(cfg, default_weights(cfg), default_input(cfg), bug, hooks);
}

ZooRun run_zoo(const AttentionConfig& cfg, const AttentionWeights& w, const Tensor& x, Bug bug, const RunHooks& hooks) {
    ZooRun z;
    z.bug = bug;
    z.correct = run_attention(cfg, w, x, hooks);
    z.buggy = run_buggy_attention(cfg, w, x, bug, &z.failure, hooks);

    // Step by step against the correct run (what `attnscope check` does with a user's dump).
    std::vector<UserStep> steps;
    for (const Step& s : z.buggy.steps) steps.push_back({s.name, s.name, "F32", s.tensor().values});
    z.comparison = compare_steps(z.correct, w, steps);
    for (const StepComparison& c : z.comparison.steps)
        z.buggy.differences.push_back(to_step_difference(c, z.buggy.at(c.step).axes()));

    // What catches it, cheapest check first.
    const StepComparison* first = z.comparison.first_divergence();
    const std::string first_text = first ? first->step : "";
    for (const ShapeCheck& sc : z.buggy.checks.shapes) {
        static const StepId kept[] = {StepId::q,    StepId::k,       StepId::v,      StepId::scores,
                                      StepId::attn, StepId::context, StepId::merged, StepId::out};
        if (!sc.ok && std::find(std::begin(kept), std::end(kept), step_id(sc.step)) != std::end(kept) &&
            z.shape_problem.empty())
            z.shape_problem = sc.step + " has shape " + format_shape(sc.actual) + ", expected " + sc.formula + " = " +
                              format_shape(sc.expected);
    }
    const RowSumCheck* rows = z.buggy.checks.row_sum(StepId::attn);
    char text[512];
    if (!z.failure.empty()) {
        z.caught_by = CaughtBy::ShapeError;
        const auto& names = attention_step_names();  // the step after the last one recorded
        std::size_t next = z.buggy.steps.empty() ? 0 : pipeline_index(z.buggy.steps.back().name) + 1;
        const std::vector<std::string> missing = steps_missing_in(bug);
        while (next < names.size() && std::find(missing.begin(), missing.end(), names[next]) != missing.end()) ++next;
        z.first_step = next < names.size() ? names[next] : "";
        std::snprintf(text, sizeof text, "caught by a shape error: the run stops at %s, nothing after it exists",
                      z.first_step.c_str());
    } else if (!z.shape_problem.empty()) {
        z.caught_by = CaughtBy::ShapeCheck;
        z.first_step = first_text;
        std::snprintf(text, sizeof text, "caught by the shape check: %s", z.shape_problem.c_str());
    } else if (rows && !rows->ok()) {
        z.caught_by = CaughtBy::RowSumCheck;
        z.first_step = first_text;
        std::snprintf(text, sizeof text,
                      "caught by the row-sum check at attn: %zu of %zu rows do not sum to 1 (max |sum - 1| = %.3g); "
                      "shapes are all right. The numbers first differ at %s.",
                      rows->failing_rows, rows->rows, rows->max_error, first_text.c_str());
    } else if (first) {
        z.caught_by = CaughtBy::Difference;
        z.first_step = first_text;
        std::snprintf(text, sizeof text,
                      "only the difference from the correct pipeline catches it: every shape is right and every "
                      "softmax row sums to 1. The numbers first differ at %s.",
                      first_text.c_str());
    } else {
        std::snprintf(text, sizeof text, "nothing differs from the correct pipeline");
    }
    z.caught_text = text;
    return z;
}

}  // namespace attnscope
