// What PyTorch's tensor looks like in memory after each op: its shape and strides.
//
// permute, transpose, unbind and a compatible reshape return views (same storage, new strides);
// a reshape whose result cannot be expressed with strides copies. The pipeline records these so
// the user sees why `.transpose(1, 2).reshape(B, N, C)` copies and `.view(B, N, C)` would fail.
#pragma once

#include <optional>

#include "tensor.hpp"

namespace attnscope {

struct TorchLayout {
    Shape shape;
    Strides strides;

    static TorchLayout contiguous(const Shape& shape) { return {shape, contiguous_strides(shape)}; }
    bool is_contiguous() const;  // torch.Tensor.is_contiguous()
};

TorchLayout torch_permute(const TorchLayout& x, const std::vector<std::size_t>& dims);
TorchLayout torch_transpose(const TorchLayout& x, std::size_t dim0, std::size_t dim1);
TorchLayout torch_select(const TorchLayout& x, std::size_t axis);  // x.unbind(axis)[i]
// The strides of x.view(shape), or nothing when reshape must copy (view would raise).
std::optional<Strides> torch_view_strides(const TorchLayout& x, const Shape& shape);

}  // namespace attnscope
