// Showing an N-D tensor as a 2-D slice: two axes become rows and columns, every other axis is
// fixed at one index (the inspector's sliders).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "tensor.hpp"

namespace attnscope::ui {

struct SliceSpec {
    int row_axis = -1;               // -1: a single row (rank-1 and rank-0 tensors)
    int col_axis = -1;               // -1: a single column (rank-0 tensors)
    std::vector<std::size_t> index;  // one entry per axis; the row/col entries are ignored

    bool operator==(const SliceSpec& o) const {
        return row_axis == o.row_axis && col_axis == o.col_axis && index == o.index;
    }
    bool operator!=(const SliceSpec& o) const { return !(*this == o); }
};

// Rows = second-to-last axis, columns = last axis, every other index 0.
SliceSpec default_slice(const Shape& shape);

// Makes spec valid for shape (after a rerun with other sizes, or a step with another rank):
// axes in range and distinct, indices clamped, index sized to the rank.
SliceSpec normalized(SliceSpec spec, const Shape& shape);

// The slice of the step the user moves to, keeping what they chose on the step they leave: the
// index of every fixed axis both steps name (a head h, a batch item B) where it is in range there,
// and the shown rows and columns when the user chose other ones than the left step's default and
// the new step names both. Axes of other names keep `to`'s choice.
SliceSpec carried_slice(const SliceSpec& from, const Axes& from_axes, const Shape& from_shape, SliceSpec to,
                        const Axes& to_axes, const Shape& to_shape);

struct Slice2D {
    std::size_t rows = 0;
    std::size_t cols = 0;
    std::vector<float> values;  // row-major rows x cols
    float min = 0.0f;           // over finite values (0 when there are none)
    float max = 0.0f;
    std::size_t nan_count = 0;
    std::size_t inf_count = 0;

    float at(std::size_t r, std::size_t c) const { return values[r * cols + c]; }
    bool empty() const { return rows == 0 || cols == 0; }
};

// Copies the slice out of a row-major buffer of the given shape. spec must be normalized.
Slice2D extract_slice(const float* data, const Shape& shape, const SliceSpec& spec);
Slice2D extract_slice(const Array& values, const SliceSpec& spec);

// The full N-D index of cell (r, c) of the slice.
std::vector<std::size_t> full_index(const SliceSpec& spec, std::size_t rank, std::size_t r, std::size_t c);

// "[0, 3, 5, 7]"
std::string format_index(const std::vector<std::size_t>& index);

// "attn[1, 3, :, :]" style description of the slice ("rows" and "cols" as ':').
std::string describe_slice(const std::string& name, const SliceSpec& spec, std::size_t rank);

// The slice of one head for the heads grid: rows/cols are the last two axes that are not the
// head axis; every other axis (B, 3 ...) keeps its index from `base`. -1 when no "h" axis.
int head_axis(const Axes& axes);
SliceSpec head_slice(const Axes& axes, const Shape& shape, const SliceSpec& base, std::size_t head);

}  // namespace attnscope::ui
