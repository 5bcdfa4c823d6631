#include "views.hpp"

#include <cstring>
#include <string>

#include <omp.h>

#include "torch_layout.hpp"

namespace attnscope {

ShapeError reshape_count_error(const Shape& from, const Shape& to) {
    return ShapeError(Message(Msg::reshape_count, {{"shape", format_shape(from)}, {"count", std::to_string(element_count(from))},
                                                   {"target", format_shape(to)}, {"target_count", std::to_string(element_count(to))}}));
}

ShapeError reshape_labels_error(const Axes& axes, const Shape& shape) {
    return ShapeError(Message(Msg::reshape_labels, {{"count", std::to_string(axes.size())}, {"rank", std::to_string(shape.size())},
                                                    {"shape", format_shape(shape)}}));
}

namespace {

std::string list(const std::vector<std::size_t>& dims) {
    std::string out;
    for (std::size_t i = 0; i < dims.size(); ++i) out += (i ? ", " : "") + std::to_string(dims[i]);
    return out;
}

Axes labels_for(const TensorView& x) {
    Axes axes = x.axes;
    axes.resize(x.shape.size());
    return axes;
}

}  // namespace

TensorView view_of(std::shared_ptr<const Tensor> t) {
    TensorView v;
    v.shape = shape_of(t->values);
    v.strides = contiguous_strides(v.shape);
    v.axes = t->axes;
    v.axes.resize(v.shape.size());
    v.base = std::move(t);
    return v;
}

TensorView borrowed_view(const Tensor& t) {
    return view_of(std::shared_ptr<const Tensor>(std::shared_ptr<const Tensor>(), &t));  // aliasing, owns nothing
}

bool is_contiguous(const TensorView& x) { return TorchLayout{x.shape, x.strides}.is_contiguous(); }

std::optional<TensorView> reshape_view(const TensorView& x, const Shape& shape, const Axes& axes) {
    const std::size_t count = element_count(shape);
    if (count != element_count(x.shape))
        throw reshape_count_error(x.shape, shape);
    if (axes.size() != shape.size()) throw reshape_labels_error(axes, shape);
    const auto strides = torch_view_strides(TorchLayout{x.shape, x.strides}, shape);
    if (!strides) return std::nullopt;
    TensorView y = x;
    y.shape = shape;
    y.strides = *strides;
    y.axes = axes;
    return y;
}

TensorView reshape_or_copy(const TensorView& x, const Shape& shape, const Axes& axes) {
    if (auto view = reshape_view(x, shape, axes)) return *view;
    Tensor copy = gather(x);
    copy.values.reshape(shape);
    copy.axes = axes;
    return view_of(std::make_shared<const Tensor>(std::move(copy)));
}

TensorView permute_view(const TensorView& x, const std::vector<std::size_t>& dims) {
    const std::size_t rank = x.shape.size();
    std::vector<bool> seen(rank, false);
    bool valid = dims.size() == rank;
    for (std::size_t d : dims) {
        if (d >= rank || seen[d]) valid = false;
        if (d < rank) seen[d] = true;
    }
    if (!valid)
        throw ShapeError(Message(Msg::permute_not_permutation,
                                 {{"dims", list(dims)}, {"rank", std::to_string(rank)}, {"shape", format_shape(x.shape)}}));
    const TorchLayout l = torch_permute(TorchLayout{x.shape, x.strides}, dims);
    const Axes in_axes = labels_for(x);
    TensorView y = x;
    y.shape = l.shape;
    y.strides = l.strides;
    for (std::size_t i = 0; i < rank; ++i) y.axes[i] = in_axes[dims[i]];
    return y;
}

TensorView transpose_view(const TensorView& x, std::size_t dim0, std::size_t dim1) {
    const std::size_t rank = x.shape.size();
    if (dim0 >= rank || dim1 >= rank)
        throw ShapeError(Message(Msg::transpose_axes,
                                 {{"dim0", std::to_string(dim0)}, {"dim1", std::to_string(dim1)}, {"shape", format_shape(x.shape)}}));
    std::vector<std::size_t> dims(rank);
    for (std::size_t i = 0; i < rank; ++i) dims[i] = i;
    std::swap(dims[dim0], dims[dim1]);
    return permute_view(x, dims);
}

TensorView select_view(const TensorView& x, std::size_t axis, std::size_t index) {
    if (axis >= x.shape.size() || index >= x.shape[axis])
        throw ShapeError(Message(Msg::select_range, {{"op", "select"}, {"index", std::to_string(index)},
                                                     {"axis", std::to_string(axis)}, {"shape", format_shape(x.shape)}}));
    TensorView y = x;
    y.offset = x.offset + index * static_cast<std::size_t>(x.strides[axis]);
    y.shape.erase(y.shape.begin() + static_cast<std::ptrdiff_t>(axis));
    y.strides.erase(y.strides.begin() + static_cast<std::ptrdiff_t>(axis));
    y.axes = labels_for(x);
    y.axes.erase(y.axes.begin() + static_cast<std::ptrdiff_t>(axis));
    return y;
}

TensorView step_view(const TensorView& x, std::size_t axis, std::size_t start, std::size_t step) {
    if (axis >= x.shape.size() || step < 1 || start >= x.shape[axis])
        throw ShapeError(Message(Msg::slice_range, {{"start", std::to_string(start)}, {"step", std::to_string(step)},
                                                    {"axis", std::to_string(axis)}, {"shape", format_shape(x.shape)}}));
    TensorView y = x;
    y.offset = x.offset + start * static_cast<std::size_t>(x.strides[axis]);
    y.shape[axis] = (x.shape[axis] - start + step - 1) / step;
    y.strides[axis] = x.strides[axis] * static_cast<std::ptrdiff_t>(step);
    y.axes = labels_for(x);
    return y;
}

// Rows of the last axis, gathered in row-major order of the view; each row is a memcpy when the
// last axis has stride 1. All threads for large views.
Tensor gather(const TensorView& x) {
    const std::size_t rank = x.shape.size();
    Tensor out{make_array(x.shape), labels_for(x)};
    const std::size_t count = out.values.size();
    if (count == 0) return out;
    float* dst = out.values.data();
    const float* src = x.data();
    if (rank == 0) {
        dst[0] = src[0];
        return out;
    }
    const std::size_t inner = x.shape[rank - 1], rows = count / inner;
    const std::ptrdiff_t inner_stride = x.strides[rank - 1];
#pragma omp parallel if (count >= (std::size_t(1) << 15))
    {
        // This thread's rows [first, last): the index of row `first` over the outer axes once, then
        // an odometer (no division per row).
        const std::size_t parts = static_cast<std::size_t>(omp_get_num_threads());
        const std::size_t part = static_cast<std::size_t>(omp_get_thread_num());
        const std::size_t first = rows * part / parts, last = rows * (part + 1) / parts;
        std::vector<std::size_t> index(rank, 0);
        std::ptrdiff_t offset = 0;
        for (std::size_t a = rank - 1, rest = first; a-- > 0;) {
            index[a] = rest % x.shape[a];
            rest /= x.shape[a];
            offset += x.strides[a] * static_cast<std::ptrdiff_t>(index[a]);
        }
        for (std::size_t r = first; r < last; ++r) {
            const float* p = src + offset;
            float* d = dst + r * inner;
            if (inner_stride == 1)
                std::memcpy(d, p, inner * sizeof(float));
            else
                for (std::size_t j = 0; j < inner; ++j) d[j] = p[static_cast<std::ptrdiff_t>(j) * inner_stride];
            for (std::size_t a = rank - 1; a-- > 0;) {  // the next row
                offset += x.strides[a];
                if (++index[a] < x.shape[a]) break;
                offset -= x.strides[a] * static_cast<std::ptrdiff_t>(x.shape[a]);
                index[a] = 0;
            }
        }
    }
    return out;
}

std::shared_ptr<const Tensor> contiguous(const TensorView& x) {
    if (x.offset == 0 && x.shape == shape_of(x.base->values) && labels_for(x) == x.base->axes && is_contiguous(x))
        return x.base;  // the whole base, unchanged (e.g. dropout's identity in eval mode)
    return std::make_shared<const Tensor>(gather(x));
}

}  // namespace attnscope
