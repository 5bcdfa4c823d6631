#include "slice.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>

#include "trace.hpp"

namespace attnscope::ui {

SliceSpec default_slice(const Shape& shape) {
    SliceSpec spec;
    const int rank = static_cast<int>(shape.size());
    spec.index.assign(shape.size(), 0);
    if (rank >= 2) {
        spec.row_axis = rank - 2;
        spec.col_axis = rank - 1;
    } else if (rank == 1) {
        spec.col_axis = 0;
    }
    return spec;
}

SliceSpec carried_slice(const SliceSpec& from, const Axes& from_axes, const Shape& from_shape, SliceSpec to,
                        const Axes& to_axes, const Shape& to_shape) {
    to = normalized(std::move(to), to_shape);
    if (from_axes.size() != from_shape.size() || to_axes.size() != to_shape.size()) return to;
    auto axis_in_to = [&](int a) -> int {  // the axis of `to` named like `from`'s axis a, or -1
        if (a < 0 || a >= static_cast<int>(from_axes.size())) return -1;
        for (std::size_t i = 0; i < to_axes.size(); ++i)
            if (to_axes[i] == from_axes[static_cast<std::size_t>(a)]) return static_cast<int>(i);
        return -1;
    };
    const SliceSpec from_default = default_slice(from_shape);
    if (from.row_axis != from_default.row_axis || from.col_axis != from_default.col_axis) {
        const int r = axis_in_to(from.row_axis), c = axis_in_to(from.col_axis);
        if (r >= 0 && c >= 0 && r != c) {
            to.row_axis = r;
            to.col_axis = c;
        }
    }
    for (int a = 0; a < static_cast<int>(from_shape.size()); ++a) {
        if (a == from.row_axis || a == from.col_axis || static_cast<std::size_t>(a) >= from.index.size()) continue;
        const int t = axis_in_to(a);
        if (t < 0 || t == to.row_axis || t == to.col_axis) continue;
        const std::size_t i = from.index[static_cast<std::size_t>(a)];
        if (i < to_shape[static_cast<std::size_t>(t)]) to.index[static_cast<std::size_t>(t)] = i;
    }
    return to;
}

SliceSpec normalized(SliceSpec spec, const Shape& shape) {
    const int rank = static_cast<int>(shape.size());
    spec.index.resize(shape.size(), 0);
    for (std::size_t i = 0; i < shape.size(); ++i)
        spec.index[i] = shape[i] == 0 ? 0 : std::min(spec.index[i], shape[i] - 1);
    auto in_range = [&](int a) { return a >= 0 && a < rank; };
    if (rank >= 2) {
        if (!in_range(spec.row_axis) || !in_range(spec.col_axis) || spec.row_axis == spec.col_axis) {
            const SliceSpec d = default_slice(shape);
            // Keep whichever of the two is still usable.
            if (in_range(spec.col_axis) && spec.col_axis != d.row_axis) {
                spec.row_axis = d.row_axis;
            } else if (in_range(spec.row_axis) && spec.row_axis != d.col_axis) {
                spec.col_axis = d.col_axis;
            } else {
                spec.row_axis = d.row_axis;
                spec.col_axis = d.col_axis;
            }
            if (spec.row_axis == spec.col_axis) {
                spec.row_axis = d.row_axis;
                spec.col_axis = d.col_axis;
            }
        }
    } else if (rank == 1) {
        spec.row_axis = -1;
        spec.col_axis = 0;
    } else {
        spec.row_axis = -1;
        spec.col_axis = -1;
    }
    return spec;
}

Slice2D extract_slice(const float* data, const Shape& shape, const SliceSpec& spec) {
    Slice2D out;
    const std::size_t rank = shape.size();
    for (std::size_t d : shape)
        if (d == 0) return out;  // an empty tensor has an empty slice
    const Strides strides = contiguous_strides(shape);
    out.rows = spec.row_axis >= 0 ? shape[static_cast<std::size_t>(spec.row_axis)] : 1;
    out.cols = spec.col_axis >= 0 ? shape[static_cast<std::size_t>(spec.col_axis)] : 1;
    std::ptrdiff_t base = 0;
    for (std::size_t i = 0; i < rank; ++i) {
        if (static_cast<int>(i) == spec.row_axis || static_cast<int>(i) == spec.col_axis) continue;
        base += static_cast<std::ptrdiff_t>(spec.index.at(i)) * strides[i];
    }
    const std::ptrdiff_t rs = spec.row_axis >= 0 ? strides[static_cast<std::size_t>(spec.row_axis)] : 0;
    const std::ptrdiff_t cs = spec.col_axis >= 0 ? strides[static_cast<std::size_t>(spec.col_axis)] : 0;
    out.values.resize(out.rows * out.cols);
    for (std::size_t r = 0; r < out.rows; ++r) {
        const float* row = data + base + static_cast<std::ptrdiff_t>(r) * rs;
        float* dst = out.values.data() + r * out.cols;
        if (cs == 1)
            std::memcpy(dst, row, out.cols * sizeof(float));
        else
            for (std::size_t c = 0; c < out.cols; ++c) dst[c] = row[static_cast<std::ptrdiff_t>(c) * cs];
    }
    // min and max over the finite values (0 when there are none), NaN and inf counts: the engine's stats
    const Stats stats = compute_stats(out.values.data(), out.values.size());
    out.min = stats.min;
    out.max = stats.max;
    out.nan_count = stats.nan_count;
    out.inf_count = stats.inf_count;
    return out;
}

Slice2D extract_slice(const Array& values, const SliceSpec& spec) {
    const Shape shape(values.shape().begin(), values.shape().end());
    return extract_slice(values.data(), shape, spec);
}

std::vector<std::size_t> full_index(const SliceSpec& spec, std::size_t rank, std::size_t r, std::size_t c) {
    std::vector<std::size_t> index = spec.index;
    index.resize(rank, 0);
    if (spec.row_axis >= 0 && static_cast<std::size_t>(spec.row_axis) < rank) index[spec.row_axis] = r;
    if (spec.col_axis >= 0 && static_cast<std::size_t>(spec.col_axis) < rank) index[spec.col_axis] = c;
    return index;
}

std::string format_index(const std::vector<std::size_t>& index) {
    std::ostringstream s;
    s << '[';
    for (std::size_t i = 0; i < index.size(); ++i) s << (i ? ", " : "") << index[i];
    s << ']';
    return s.str();
}

std::string describe_slice(const std::string& name, const SliceSpec& spec, std::size_t rank) {
    std::ostringstream s;
    s << name << '[';
    for (std::size_t i = 0; i < rank; ++i) {
        if (i) s << ", ";
        if (static_cast<int>(i) == spec.row_axis || static_cast<int>(i) == spec.col_axis)
            s << ':';
        else
            s << (i < spec.index.size() ? spec.index[i] : 0);
    }
    s << ']';
    return s.str();
}

int head_axis(const Axes& axes) {
    for (std::size_t i = 0; i < axes.size(); ++i)
        if (axes[i] == "h") return static_cast<int>(i);
    return -1;
}

SliceSpec head_slice(const Axes& axes, const Shape& shape, const SliceSpec& base, std::size_t head) {
    const int h = head_axis(axes);
    SliceSpec spec = base;
    spec.index.resize(shape.size(), 0);
    std::vector<int> others;
    for (int i = static_cast<int>(shape.size()) - 1; i >= 0 && others.size() < 2; --i)
        if (i != h) others.push_back(i);
    if (others.size() == 2) {
        spec.row_axis = others[1];
        spec.col_axis = others[0];
    } else if (others.size() == 1) {
        spec.row_axis = -1;
        spec.col_axis = others[0];
    } else {
        spec.row_axis = spec.col_axis = -1;
    }
    if (h >= 0) spec.index[h] = head;
    return normalized(spec, shape);
}

}  // namespace attnscope::ui
