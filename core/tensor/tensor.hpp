// The float32 tensor type of attnscope and its shape helpers.
//
// A Tensor is an evaluated row-major xtensor array plus one axis label per dimension
// (B, N, 3, h, c, N' ...). Labels travel with the values through every op so that every
// view can colour the same axis the same way.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <xtensor/xarray.hpp>

#include "message.hpp"

namespace attnscope {

using Shape = std::vector<std::size_t>;
using Strides = std::vector<std::ptrdiff_t>;  // in elements, like torch.Tensor.stride()
using Axes = std::vector<std::string>;
using Array = xt::xarray<float, xt::layout_type::row_major>;

struct Tensor {
    Array values;  // evaluated, row-major (never a lazy expression)
    Axes axes;     // one label per dimension
};

// A strided window into another tensor's storage, the way PyTorch's views are: element
// (i0, i1, ...) is base->values.data()[offset + i0 * strides[0] + i1 * strides[1] + ...].
// Layout steps (reshape, permute, unbind, transpose) are views; core/tensor/views.hpp makes them.
struct TensorView {
    std::shared_ptr<const Tensor> base;  // keeps the storage alive
    std::size_t offset = 0;
    Shape shape;
    Strides strides;  // in elements, like torch.Tensor.stride()
    Axes axes;

    const float* data() const { return base->values.data() + offset; }
};

// Thrown by ops whose operands disagree; the message names the op, both shapes and the axis.
struct ShapeError : CoreError {
    using CoreError::CoreError;
};

Shape shape_of(const Array& a);
std::string format_shape(const Shape& shape);  // "[2, 16, 768]"
std::string format_strides(const Strides& strides);
std::string format_axes(const Axes& axes);  // "[B, N, C]"

// Product of the dimensions; throws std::overflow_error when it does not fit in size_t.
std::size_t element_count(const Shape& shape);
// a * b, or std::overflow_error.
std::size_t checked_mul(std::size_t a, std::size_t b);

Strides contiguous_strides(const Shape& shape);

// An uninitialised row-major array of the given shape (no zero fill: every op writes all of it).
Array make_array(const Shape& shape);

// Maps the pages of [p, p + bytes) that are not yet mapped, in one call (madvise
// MADV_POPULATE_WRITE), for memory about to be written whole: a file's tensors as they are read,
// packed weights. Fresh memory otherwise costs a page fault per 4 KB at its first write, which on a
// virtual machine can take longer than the write itself. Blocks under 1 MB are left alone; a kernel
// without the call (before Linux 5.14) leaves all of it to the faults.
void prefault_for_writing(void* p, std::size_t bytes);

}  // namespace attnscope
