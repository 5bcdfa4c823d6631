// Recording steps into a Trace: the words of a step and the Recorder that fills in PyTorch's layout
// and the stats. Shared by run_attention (core/engine/pipeline.cpp) and the paths beyond the textbook
// (core/paths/flash.cpp, core/paths/kv_cache.cpp, core/paths/windows.cpp).
#pragma once

#include <atomic>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "pipeline.hpp"
#include "torch_layout.hpp"
#include "trace.hpp"

namespace attnscope {

// The words of one step: what it is called, the PyTorch it mirrors, and the note for the user.
struct StepText {
    std::string name;
    std::string op;
    std::string code;
    std::string formula;
    std::vector<std::string> inputs;
    std::string note;
    std::vector<Operand> weights = {};  // operands that are parameters, not steps
};

// Appends steps to a trace, filling in what PyTorch's tensor would look like and the stats.
// The trace's step storage is reserved once (capacity steps), so references handed out stay valid.
class Recorder {
public:
    Recorder(Trace& trace, const RunHooks& hooks, std::size_t capacity) : trace_(trace), hooks_(hooks) {
        trace_.steps.reserve(capacity);
    }

    // same_values: a layout step holds the same multiset of values as that step: reuse its stats.
    const Step& add(StepText text, Tensor tensor, const TorchLayout& layout, bool is_view,
                    const Step* same_values = nullptr) {
        return add(std::move(text), std::make_shared<const Tensor>(std::move(tensor)), layout, is_view, same_values);
    }
    // The same with values shared with their owner (the input: the caller's tensor, not a copy).
    const Step& add(StepText text, std::shared_ptr<const Tensor> tensor, const TorchLayout& layout, bool is_view,
                    const Step* same_values = nullptr) {
        Step step = describe(std::move(text), layout, is_view);
        step.set_tensor(std::move(tensor));
        return push(std::move(step), same_values ? &same_values->stats : nullptr);
    }

    // A step whose stats the op that made it already took (core/kernels/fused.hpp), unless a hook edits it.
    const Step& add_measured(StepText text, Tensor tensor, const TorchLayout& layout, const Stats& stats) {
        Step step = describe(std::move(text), layout, false);
        step.set_tensor(std::move(tensor));
        return push(std::move(step), &stats);
    }

    // A step whose values stay in another step's storage (reshape, permute, unbind, transpose,
    // dropout's identity): nothing is copied until someone reads step.tensor().
    const Step& add_view(StepText text, TensorView view, const TorchLayout& layout, bool is_view,
                         const Step* same_values = nullptr) {
        Step step = describe(std::move(text), layout, is_view);
        step.set_view(std::move(view));
        return push(std::move(step), same_values ? &same_values->stats : nullptr);
    }

    // A step computed on its first read (Step::set_lazy), with the stats its op already took.
    const Step& add_lazy(StepText text, Shape shape, Axes axes, std::function<Tensor()> make, const TorchLayout& layout,
                         const Stats& stats) {
        Step step = describe(std::move(text), layout, false);
        step.set_lazy(std::move(shape), std::move(axes), std::move(make));
        return push(std::move(step), &stats);
    }

    // A view whose stats were taken with another step's (q, k and v with qkv's).
    const Step& add_view_measured(StepText text, TensorView view, const TorchLayout& layout, bool is_view,
                                  const Stats& stats) {
        Step step = describe(std::move(text), layout, is_view);
        step.set_view(std::move(view));
        return push(std::move(step), &stats);
    }

    Trace& trace() { return trace_; }
    // A hook (the bug zoo) may change a step's values after the op: the next op must read them.
    bool edits_steps() const { return static_cast<bool>(hooks_.edit); }

private:
    Step describe(StepText text, const TorchLayout& layout, bool is_view) {
        if (hooks_.cancel && hooks_.cancel->load()) throw Cancelled();
        if (trace_.steps.size() == trace_.steps.capacity()) throw std::logic_error("Recorder: step storage full");
        Step step;
        step.name = std::move(text.name);
        step.op = std::move(text.op);
        step.code = std::move(text.code);
        step.formula = std::move(text.formula);
        step.inputs = std::move(text.inputs);
        for (const auto& input : step.inputs) step.operands.push_back({input, trace_.at(input).shape()});
        for (auto& weight : text.weights) step.operands.push_back(std::move(weight));
        step.torch_strides = layout.strides;
        step.contiguous = layout.is_contiguous();
        step.is_view = is_view;
        step.note = std::move(text.note);
        return step;
    }

    // known: the stats of step's values, already taken (by the op, or as another step's).
    const Step& push(Step step, const Stats* known) {
        if (hooks_.edit) {  // the bug zoo: the step may hold other values now
            hooks_.edit(trace_, step);
            known = nullptr;
        }
        step.stats = known ? *known : compute_stats(step.view());
        trace_.steps.push_back(std::move(step));
        if (hooks_.progress) hooks_.progress(trace_.steps.size(), trace_.steps.capacity());
        return trace_.steps.back();
    }

    Trace& trace_;
    const RunHooks& hooks_;
};

inline std::string strides_note(const TorchLayout& l) {
    return " (strides " + format_strides(l.strides) + (l.is_contiguous() ? ", contiguous)" : ", not contiguous)");
}

// ---- the pieces of run_attention, reused by the other paths ---------------------------------

struct QkvSteps {
    const Step& q;  // [B, h, N, c]
    const Step& k;  // [B, h, N', c]
    const Step& v;  // [B, h, N', c]
    TorchLayout layout;  // of q, k and v
};

// qkv, qkv_split, qkv_heads, q, k, v from the recorded x [B, N, C] (cfg.batch = B, cfg.tokens = N).
QkvSteps record_qkv_steps(Recorder& rec, const AttentionConfig& cfg, const AttentionWeights& w, const Step& input);

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
