// Recording steps into a Trace: the words of a step and the Recorder that fills in PyTorch's layout
// and the stats. Shared by record_textbook (core/engine/pipeline.cpp), the paths beyond the textbook
// (core/paths/flash.cpp, core/paths/kv_cache.cpp, core/paths/windows.cpp) and the whole ViT
// (core/vit/vit.cpp).
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "checks.hpp"
#include "pipeline.hpp"
#include "torch_layout.hpp"
#include "trace.hpp"

namespace attnscope {

// The words of one step: what it is called, the PyTorch it mirrors, and the note for the user.
struct StepText {
    std::string name;
    Op op;
    std::string code;
    std::string formula;
    std::vector<std::string> inputs;
    std::string note;
    // What the PyTorch line reads, with shapes. Left empty, the Recorder writes the inputs by name
    // (with their recorded shapes) followed by `weights`; a line that names its operands otherwise
    // (a ViT block's "x") lists them here.
    std::vector<Operand> weights = {};  // operands that are parameters, not steps
    std::vector<Operand> operands = {};
};

// A pinned step's words from the step table (core/engine/step_table.hpp) of that reference's code,
// with the note for this run.
StepText step_text(Reference reference, StepId step, std::string note, std::vector<Operand> weights = {});

// Counts the steps of a run for hooks.progress and checks hooks.cancel before each one. A ViT
// counts over the whole model and hands each block's attention nested() hooks.
class Progress {
public:
    Progress(const RunHooks& hooks, std::size_t total) : hooks_(hooks), total_(total) {}

    void advance(std::size_t steps = 1) {
        done_ += steps;
        if (hooks_.progress) hooks_.progress(done_, total_);
    }
    void check_cancel() const {
        if (hooks_.cancel && hooks_.cancel->load()) throw Cancelled();
    }
    // Hooks for a nested run (a ViT block's attention): its steps counted on from here.
    RunHooks nested() const {
        RunHooks h;
        h.cancel = hooks_.cancel;
        if (hooks_.progress)
            h.progress = [this, base = done_](std::size_t d, std::size_t) { hooks_.progress(base + d, total_); };
        return h;
    }
    const RunHooks& hooks() const { return hooks_; }

private:
    const RunHooks& hooks_;
    std::size_t total_, done_ = 0;
};

// A step computed from others on its first read (Step::set_lazy).
struct LazyValues {
    Shape shape;
    Axes axes;
    std::function<Tensor()> make;
};

// Where a step's values come from: a tensor of its own (shared with its owner when passed as a
// shared_ptr: the input is the caller's tensor, not a copy), a view into another step's storage
// (reshape, permute, unbind, transpose, dropout's identity: nothing is copied until someone reads
// step.tensor()), or an op run on the first read.
using StepValues = std::variant<std::shared_ptr<const Tensor>, TensorView, LazyValues>;

// Appends steps, filling in what PyTorch's tensor would look like and the stats. The steps live
// in a deque (Steps), so the references add() hands out stay valid as later steps are added.
class Recorder {
public:
    // The steps of `trace`; hooks.progress hears of each out of `total`, hooks.edit may rewrite them.
    Recorder(Trace& trace, const RunHooks& hooks, std::size_t total)
        : steps_(trace.steps), trace_(&trace), own_progress_(std::in_place, hooks, total),
          progress_(*own_progress_), edit_(hooks.edit) {}
    // Steps outside a Trace (a ViT's embedding, blocks and head), counted on the model's progress.
    Recorder(Steps& steps, Progress& progress) : steps_(steps), progress_(progress) {}

    // known: the stats of these values when they are already taken (by the op that made them, or
    // those of another step holding the same multiset of values); null: taken here.
    const Step& add(StepText text, StepValues values, const TorchLayout& layout, bool is_view,
                    const Stats* known = nullptr) {
        progress_.check_cancel();
        Step step = describe(std::move(text), layout, is_view);
        if (auto* own = std::get_if<std::shared_ptr<const Tensor>>(&values)) step.set_tensor(std::move(*own));
        else if (auto* view = std::get_if<TensorView>(&values)) step.set_view(std::move(*view));
        else {
            LazyValues& lazy = std::get<LazyValues>(values);
            step.set_lazy(std::move(lazy.shape), std::move(lazy.axes), std::move(lazy.make));
        }
        if (edit_) {  // the bug zoo: the step may hold other values now
            edit_(*trace_, step);
            known = nullptr;
        }
        step.stats = known ? *known : compute_stats(step.view());
        steps_.push_back(std::move(step));
        progress_.advance();
        return steps_.back();
    }
    // The same with a tensor of its own.
    const Step& add(StepText text, Tensor values, const TorchLayout& layout, bool is_view, const Stats* known = nullptr) {
        return add(std::move(text), std::make_shared<const Tensor>(std::move(values)), layout, is_view, known);
    }

    // The end of a run recorded into a Trace: its checks (core/engine/checks.hpp finish_checks).
    void finish(const std::vector<ExpectedShape>& expected, std::vector<RowSumCheck> row_sums = {}) {
        if (!trace_) throw std::logic_error("Recorder::finish: these steps are not a Trace's");
        finish_checks(*trace_, expected, std::move(row_sums));
    }

    // A hook (the bug zoo) may change a step's values after the op: the next op must read them.
    bool edits_steps() const { return static_cast<bool>(edit_); }

    // Steps added from here on are named prefix + name: a second stage records the same steps as
    // the first ("stage2_attn" beside "attn"). An input names a step of this stage when one is
    // called prefix + input, else an earlier step.
    void set_prefix(std::string prefix) { prefix_ = std::move(prefix); }

private:
    Step describe(StepText text, const TorchLayout& layout, bool is_view) const {
        Step step;
        step.name = prefix_ + text.name;
        if (!prefix_.empty())
            for (auto& input : text.inputs)
                if (find_or_null(prefix_ + input)) input = prefix_ + input;
        step.op = text.op;
        step.code = std::move(text.code);
        step.formula = std::move(text.formula);
        step.inputs = std::move(text.inputs);
        step.operands = std::move(text.operands);
        if (step.operands.empty()) {
            for (const auto& input : step.inputs) step.operands.push_back({input, find(input).shape()});
            for (auto& weight : text.weights) step.operands.push_back(std::move(weight));
        }
        step.torch_strides = layout.strides;
        step.contiguous = layout.is_contiguous();
        step.is_view = is_view;
        step.note = std::move(text.note);
        return step;
    }

    const Step* find_or_null(std::string_view name) const {
        for (const Step& s : steps_)
            if (s.name == name) return &s;
        return nullptr;
    }
    const Step& find(std::string_view name) const {
        if (const Step* s = find_or_null(name)) return *s;
        throw std::out_of_range("no recorded step named '" + std::string(name) + "'");
    }

    Steps& steps_;
    Trace* trace_ = nullptr;  // for the edit hook
    std::optional<Progress> own_progress_;
    Progress& progress_;
    std::function<void(const Trace&, Step&)> edit_;
    std::string prefix_;
};

inline std::string strides_note(const TorchLayout& l) {
    return " (strides " + format_strides(l.strides) + (l.is_contiguous() ? ", contiguous)" : ", not contiguous)");
}

// ---- the pieces of record_textbook, reused by the other paths -------------------------------

struct QkvSteps {
    const Step& q;  // [B, h, N, c]
    const Step& k;  // [B, h, N', c]
    const Step& v;  // [B, h, N', c]
    TorchLayout layout;  // of q, k and v
};

// qkv, qkv_split, qkv_heads, q, k, v from the recorded x [B, N, C] (cfg.batch = B, cfg.tokens = N).
QkvSteps record_qkv_steps(Recorder& rec, const AttentionConfig& cfg, const AttentionWeights& w, const Step& input);

// x [B, N, C] recorded as the input step (with this path's note), then qkv .. v from it.
QkvSteps record_input_and_qkv(Recorder& rec, const AttentionConfig& cfg, const AttentionWeights& w, const Tensor& x,
                              std::string input_note);

// k_t, scores, scaled, [masked], attn, attn_drop, context: the textbook attention.
// keep [B, N, N'] (1 keep, 0 mask) or null: with a mask, a `masked` step (-inf where keep is 0)
// sits between scaled and attn; mask_code is its PyTorch line, mask_note its note.
// attn_row_sums (or null) receives attn's row sums [B, h, N] when the op that made attn took them.
const Step& record_standard_attention(Recorder& rec, const AttentionConfig& cfg, const QkvSteps& qkv,
                                      const Array* keep, const std::string& mask_code, const std::string& mask_note,
                                      std::optional<Tensor>* attn_row_sums = nullptr);

// context_t, merged, out, out_drop from context [B, h, N, c].
void record_output_steps(Recorder& rec, const AttentionConfig& cfg, const AttentionWeights& w, const Step& context);

}  // namespace attnscope
