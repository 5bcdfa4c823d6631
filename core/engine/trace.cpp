#include "trace.hpp"

#include <atomic>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <vector>

#include "views.hpp"

namespace attnscope {

bool Checks::shapes_ok() const {
    for (const auto& s : shapes)
        if (!s.ok) return false;
    return true;
}

const RowSumCheck* Checks::row_sum(std::string_view step) const {
    for (const auto& r : row_sums)
        if (r.step == step) return &r;
    return nullptr;
}

bool Checks::all_ok() const {
    for (const auto& r : row_sums)
        if (!r.ok()) return false;
    return shapes_ok() && nonfinite.ok();
}

const StepDifference* Trace::difference(std::string_view step) const {
    for (const auto& d : differences)
        if (d.step == step) return &d;
    return nullptr;
}

// ---- a step's values --------------------------------------------------------------------------

struct Step::Values {
    std::once_flag gathered;
    std::shared_ptr<const Tensor> own;  // set at once, or by the first tensor() of a view or lazy step
    std::optional<TensorView> view;
    std::function<Tensor()> make;  // a lazy step's op
    Shape lazy_shape;
    Axes lazy_axes;
    std::atomic<bool> has_own{false};
};

const Tensor& Step::tensor() const {
    if (!values_) throw std::logic_error("step '" + name + "' holds no values");
    Values& v = *values_;
    std::call_once(v.gathered, [&v] {
        if (!v.own) v.own = v.view ? attnscope::contiguous(*v.view) : std::make_shared<const Tensor>(v.make());
        v.has_own = true;
    });
    return *v.own;
}

TensorView Step::view() const {
    if (!values_) throw std::logic_error("step '" + name + "' holds no values");
    if (values_->view) return *values_->view;
    if (values_->make) tensor();  // a lazy step has no storage to view before it is computed
    return view_of(values_->own);
}

Shape Step::shape() const {
    if (!values_) return {};
    if (values_->view) return values_->view->shape;
    return values_->make ? values_->lazy_shape : shape_of(values_->own->values);
}

const Axes& Step::axes() const {
    static const Axes none;
    if (!values_) return none;
    if (values_->view) return values_->view->axes;
    return values_->make ? values_->lazy_axes : values_->own->axes;
}

void Step::set_tensor(std::shared_ptr<const Tensor> values) {
    values_ = std::make_shared<Values>();
    values_->own = std::move(values);
    values_->has_own = true;
}

void Step::set_tensor(Tensor values) { set_tensor(std::make_shared<const Tensor>(std::move(values))); }

void Step::set_view(TensorView view) {
    values_ = std::make_shared<Values>();
    values_->view = std::move(view);
}

void Step::set_lazy(Shape shape, Axes axes, std::function<Tensor()> make) {
    values_ = std::make_shared<Values>();
    values_->make = std::move(make);
    values_->lazy_shape = std::move(shape);
    values_->lazy_axes = std::move(axes);
}

bool Step::holds_values() const { return values_ && values_->has_own.load(); }

const Step* Trace::find(std::string_view name) const {
    for (const auto& s : steps)
        if (s.name == name) return &s;
    return nullptr;
}

const Step& Trace::at(std::string_view name) const {
    if (const Step* s = find(name)) return *s;
    throw std::out_of_range("trace has no step named '" + std::string(name) + "'");
}

const std::vector<std::string>& attention_step_names() {
    static const std::vector<std::string> names = [] {
        std::vector<std::string> n;
        for (const StepInfo& s : attention_steps())
            if (!s.only_masked) n.emplace_back(s.name);
        return n;
    }();
    return names;
}

}  // namespace attnscope
