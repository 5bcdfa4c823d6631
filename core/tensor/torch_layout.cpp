#include "torch_layout.hpp"

namespace attnscope {

bool TorchLayout::is_contiguous() const {
    std::ptrdiff_t expected = 1;
    for (std::size_t i = shape.size(); i-- > 0;) {
        if (shape[i] == 0) return true;
        if (shape[i] != 1 && strides[i] != expected) return false;
        expected *= static_cast<std::ptrdiff_t>(shape[i]);
    }
    return true;
}

TorchLayout torch_permute(const TorchLayout& x, const std::vector<std::size_t>& dims) {
    TorchLayout y{Shape(dims.size()), Strides(dims.size())};
    for (std::size_t i = 0; i < dims.size(); ++i) {
        y.shape[i] = x.shape.at(dims[i]);
        y.strides[i] = x.strides.at(dims[i]);
    }
    return y;
}

TorchLayout torch_transpose(const TorchLayout& x, std::size_t dim0, std::size_t dim1) {
    TorchLayout y = x;
    std::swap(y.shape.at(dim0), y.shape.at(dim1));
    std::swap(y.strides.at(dim0), y.strides.at(dim1));
    return y;
}

TorchLayout torch_select(const TorchLayout& x, std::size_t axis) {
    TorchLayout y = x;
    y.shape.erase(y.shape.begin() + static_cast<std::ptrdiff_t>(axis));
    y.strides.erase(y.strides.begin() + static_cast<std::ptrdiff_t>(axis));
    return y;
}

// A view can keep each run of old axes that are laid out back to back in memory ("chunk") and
// split or merge axes inside a chunk, never across two chunks.
std::optional<Strides> torch_view_strides(const TorchLayout& x, const Shape& shape) {
    Strides out(shape.size());
    if (element_count(x.shape) == 0 || x.shape.empty()) return contiguous_strides(shape);
    std::ptrdiff_t view_d = static_cast<std::ptrdiff_t>(shape.size()) - 1;
    std::ptrdiff_t chunk_base = x.strides.back();
    std::size_t tensor_numel = 1, view_numel = 1;
    for (std::ptrdiff_t d = static_cast<std::ptrdiff_t>(x.shape.size()) - 1; d >= 0; --d) {
        tensor_numel *= x.shape[d];
        const bool chunk_ends = d == 0 || (x.shape[d - 1] != 1 &&
                                           x.strides[d - 1] != static_cast<std::ptrdiff_t>(tensor_numel) * chunk_base);
        if (!chunk_ends) continue;
        while (view_d >= 0 && (view_numel < tensor_numel || shape[view_d] == 1)) {
            out[view_d] = static_cast<std::ptrdiff_t>(view_numel) * chunk_base;
            view_numel *= shape[view_d];
            --view_d;
        }
        if (view_numel != tensor_numel) return std::nullopt;
        if (d > 0) {
            chunk_base = x.strides[d - 1];
            tensor_numel = 1;
            view_numel = 1;
        }
    }
    if (view_d != -1) return std::nullopt;
    return out;
}

}  // namespace attnscope
