// Views: reshape, permute, unbind and transpose without copying, as PyTorch does them.
//
// Each returns a TensorView into the same storage with new strides (and, for select, a new
// offset). `contiguous` gathers a view into a new row-major Tensor: PyTorch's .contiguous().
// The copying ops of core/engine/ops.hpp (permute, select, transpose) are a view followed by contiguous.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "tensor.hpp"

namespace attnscope {

// The whole of t, contiguous. The view shares ownership of t.
TensorView view_of(std::shared_ptr<const Tensor> t);
// The whole of t without ownership: the caller keeps t alive while the view is used.
TensorView borrowed_view(const Tensor& t);

bool is_contiguous(const TensorView& x);  // torch.Tensor.is_contiguous()

// The errors of reshaping `from` into `to` (their element counts differ) and of labelling `shape`
// with `axes` (their counts differ), shared with the copying reshape of core/engine/ops.
ShapeError reshape_count_error(const Shape& from, const Shape& to);
ShapeError reshape_labels_error(const Axes& axes, const Shape& shape);

// x.view(shape): nothing when the axes to merge are not laid out back to back (reshape copies).
std::optional<TensorView> reshape_view(const TensorView& x, const Shape& shape, const Axes& axes);
// x.reshape(shape): a view when the strides allow one, else a view of a new contiguous copy
// (PyTorch's reshape copies in that case too).
TensorView reshape_or_copy(const TensorView& x, const Shape& shape, const Axes& axes);
// out.shape[i] = x.shape[dims[i]]
TensorView permute_view(const TensorView& x, const std::vector<std::size_t>& dims);
TensorView transpose_view(const TensorView& x, std::size_t dim0, std::size_t dim1);
// x[..., index, ...] along axis: one result of torch.unbind(axis).
TensorView select_view(const TensorView& x, std::size_t axis, std::size_t index);
// x[..., start::step, ...] along axis: every step-th entry from start, still a view.
TensorView step_view(const TensorView& x, std::size_t axis, std::size_t start, std::size_t step);

// A new row-major tensor with the view's values, shape and labels (always a copy).
Tensor gather(const TensorView& x);
// The same, shared; a view that is its whole base, unchanged, returns the base (no copy).
std::shared_ptr<const Tensor> contiguous(const TensorView& x);

}  // namespace attnscope
