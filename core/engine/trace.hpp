// What the engine records: one Step per op, and the checks run over them.
//
// A Trace is immutable once built. Panels, dumps and the command line read it; none of them
// recompute a step.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config.hpp"
#include "stats.hpp"
#include "step_table.hpp"
#include "tensor.hpp"

namespace attnscope {

struct BeyondRecord;  // core/paths/beyond.hpp

// An operand as written in the PyTorch line, with its shape (TensorSensor-style annotation).
struct Operand {
    std::string expr;  // "q", "k.transpose(-2, -1)", "self.qkv.weight"
    Shape shape;
};

// Where a step's tensor comes from: the engine, or a file the user opened.
enum class StepOrigin { Computed, Loaded };

struct Step {
    std::string name;                 // pinned interface name: "qkv_heads"
    Op op = Op::input;                // Op::permute
    std::string code;                 // the PyTorch line it mirrors
    std::string formula;              // einops-style: "b n three h c -> three b h n c"
    std::vector<std::string> inputs;  // names of the steps it reads
    std::vector<Operand> operands;    // what the PyTorch line reads, with shapes
    Strides torch_strides;            // strides PyTorch's tensor has at this point
    bool contiguous = true;           // PyTorch's is_contiguous() at this point
    bool is_view = false;             // PyTorch returns a view here (no copy)
    std::string note;                 // the contiguity note shown to the user
    Stats stats;
    StepOrigin origin = StepOrigin::Computed;
    std::string origin_detail;        // Loaded: "acts.safetensors: blocks.0.attn.attn_weights"

    // The values, float32 row-major with axis labels. A layout step made with set_view holds no
    // values of its own: it is a view into the storage of the step it was made from, as in
    // PyTorch, and is gathered into a tensor of its own the first time tensor() is read (safe
    // from several threads). Copies of a Step share the values.
    const Tensor& tensor() const;
    // Strided access without copying: the view, or the whole tensor of a step with its own values.
    TensorView view() const;
    Shape shape() const;
    const Axes& axes() const;  // the axis labels, without gathering a view or computing a lazy step
    void set_tensor(Tensor values);
    void set_tensor(std::shared_ptr<const Tensor> values);
    void set_view(TensorView view);
    // A step computed from another step's values on its first read (scaled = scores * self.scale,
    // core/engine/pipeline.cpp): no memory of its own until someone looks at it. make() must return a
    // tensor of `shape`; it runs once, under the same once-only guard as a view's gathering.
    void set_lazy(Shape shape, Axes axes, std::function<Tensor()> make);
    bool holds_values() const;  // false: a view or lazy step not read yet (it costs no memory of its own)

private:
    struct Values;
    std::shared_ptr<Values> values_;
};

// Recorded steps, in order. A deque: a reference to a step stays valid while later steps are added.
using Steps = std::deque<Step>;

// A step present both in the user's file and in the reference run: how they differ.
struct StepDifference {
    std::string step;
    std::string finding;    // "ok", "axis order", "softmax axis" ... (see core/teach/diagnose.hpp)
    std::string diagnosis;  // one line for the user
    double max_error = 0.0;
    double tolerance = 0.0;
    bool ok = true;
    std::optional<Tensor> difference;  // user - reference, when the shapes agree
};

struct ShapeCheck {
    std::string step;
    std::string formula;  // "[B, N, 3*C]"
    Shape expected;
    Shape actual;
    bool ok = true;
};

// Softmax rows must sum to 1 per (batch, head, row).
struct RowSumCheck {
    std::string step;  // "attn" or "attn_drop"
    Tensor sums;       // [B, h, N] row sums
    double tolerance = 1e-5;
    double max_error = 0.0;          // max |sum - 1|
    std::size_t failing_rows = 0;    // rows with |sum - 1| > tolerance
    std::size_t rows = 0;            // B * h * N
    std::vector<double> head_max_error;       // [B * h], row-major over (b, head)
    std::vector<std::size_t> head_failing;    // [B * h]
    bool deviation_expected = false;  // training-mode dropout rescales rows: not a bug
    std::string explanation;          // one or two sentences for the user
    std::string cause;                // when rows fail: why, without the counts (a headline states them)
    bool ok() const { return failing_rows == 0 || deviation_expected; }
};

struct NonFiniteCheck {
    std::string first_step;  // empty when every step is finite
    std::size_t nan_count = 0;  // in first_step
    std::size_t inf_count = 0;
    std::string message;
    bool ok() const { return first_step.empty(); }
};

struct Checks {
    std::vector<ShapeCheck> shapes;     // one per step
    std::vector<RowSumCheck> row_sums;  // attn, attn_drop
    NonFiniteCheck nonfinite;

    bool shapes_ok() const;
    const RowSumCheck* row_sum(std::string_view step) const;
    const RowSumCheck* row_sum(StepId step) const { return row_sum(step_name(step)); }
    bool all_ok() const;
};

struct Gradients;  // core/engine/backward.hpp

struct Trace {
    AttentionConfig config;
    Steps steps;
    Checks checks;
    std::string source_path;                   // the file the trace was built from ("" = the engine)
    std::vector<StepDifference> differences;   // loaded steps compared with the reference
    std::shared_ptr<const Gradients> gradients;  // the backward pass (core/engine/backward.hpp), or null
    std::shared_ptr<const BeyondRecord> beyond;  // flash tiles, KV-cache tokens, windows (core/paths/beyond.hpp)

    const StepDifference* difference(std::string_view step) const;  // nullptr when not compared

    const Step* find(std::string_view name) const;  // nullptr when absent
    const Step& at(std::string_view name) const;    // throws std::out_of_range
    const Step* find(StepId step) const { return find(step_name(step)); }
    const Step& at(StepId step) const { return at(step_name(step)); }
};

// The pinned step names of the single-layer pipeline, in order (the step table's, without the
// mask's step, which only a masked run records).
const std::vector<std::string>& attention_step_names();

}  // namespace attnscope
