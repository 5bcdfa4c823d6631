#include "ops.hpp"
#include "views.hpp"

#include <cblas.h>

#include <algorithm>
#include <limits>
#include <climits>
#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#include <omp.h>

#include "serial_blas.hpp"
#include "vmath.hpp"

namespace attnscope {

namespace {

// ---- all threads: the loops' sgemms run on their calling threads (SerialBlas) -------------

// Loops over fewer elements than this stay on one thread (starting the team costs microseconds).
constexpr std::size_t kParallelMin = std::size_t(1) << 15;

int threads_for(std::size_t work) { return work >= kParallelMin ? omp_get_max_threads() : 1; }

// [begin, end) of part `part` of `parts` equal parts of n, cut at multiples of `align`.
std::pair<std::size_t, std::size_t> share(std::size_t n, int part, int parts, std::size_t align = 16) {
    auto cut = [&](int p) {
        const std::size_t at = n / align * static_cast<std::size_t>(p) / static_cast<std::size_t>(parts) * align;
        return p == parts ? n : at;
    };
    return {cut(part), cut(part + 1)};
}

// dst[0, n) = src[0, n), on every core for large n.
void copy_floats(const float* src, float* dst, std::size_t n) {
    const int threads = threads_for(n);
#pragma omp parallel num_threads(threads)
    {
        const auto [begin, end] = share(n, omp_get_thread_num(), omp_get_num_threads());
        if (end > begin) std::memcpy(dst + begin, src + begin, (end - begin) * sizeof(float));
    }
}

// f(begin, end) over [0, n) cut into one part per thread (one part for small n).
template <typename F>
void for_spans(std::size_t n, F f) {
    const int threads = threads_for(n);
#pragma omp parallel num_threads(threads)
    {
        const auto [begin, end] = share(n, omp_get_thread_num(), omp_get_num_threads());
        if (end > begin) f(begin, end);
    }
}

Array copy_array(const Array& x) {
    Array y = make_array(shape_of(x));
    copy_floats(x.data(), y.data(), x.size());
    return y;
}

std::string axis_desc(const TensorView& t, std::size_t axis) {
    const std::string label = axis < t.axes.size() ? t.axes[axis] : "";
    return label.empty() ? std::to_string(t.shape[axis]) : label + "=" + std::to_string(t.shape[axis]);
}

std::string axis_desc(const Tensor& t, std::size_t axis) { return axis_desc(borrowed_view(t), axis); }

int blas_int(std::size_t n, const char* op) {
    if (n > static_cast<std::size_t>(INT_MAX))
        throw ShapeError(Message(Msg::op_blas_dimension, {{"op", op}, {"size", std::to_string(n)}}));
    return static_cast<int>(n);
}

Axes labels_or_blank(const Tensor& x) {
    Axes axes = x.axes;
    axes.resize(x.values.dimension());
    return axes;
}

// Every backward checks that the upstream gradient has the shape of the forward's output.
void require_grad_shape(const Tensor& grad_y, const Shape& expected, const char* op) {
    const Shape gs = shape_of(grad_y.values);
    if (gs != expected)
        throw ShapeError(Message(Msg::op_grad_shape, {{"op", op}, {"shape", format_shape(gs)}, {"expected", format_shape(expected)}}));
}

}  // namespace

// ---- linear ---------------------------------------------------------------------------------
Tensor linear(const Tensor& x, const Array& weight, const Array* bias, const std::string& out_axis,
              const std::string& weight_name, const PackedWeight* packed) {
    const Shape xs = shape_of(x.values);
    const Shape ws = shape_of(weight);
    if (xs.empty()) throw ShapeError(Message(Msg::op_scalar_input, {{"op", "linear"}}));
    if (ws.size() != 2)
        throw ShapeError(Message(Msg::linear_weight_rank, {{"weight", weight_name}, {"shape", format_shape(ws)}}));
    const std::size_t in = xs.back(), out = ws[0];
    if (ws[1] != in)
        throw ShapeError(Message(Msg::linear_mismatch, {{"weight", weight_name}, {"shape", format_shape(ws)},
                                                        {"x_shape", format_shape(xs)}, {"axis", axis_desc(x, xs.size() - 1)},
                                                        {"size", std::to_string(ws[1])}}));
    if (bias && (bias->dimension() != 1 || bias->size() != out))
        throw ShapeError(Message(Msg::linear_bias, {{"shape", format_shape(shape_of(*bias))}, {"size", std::to_string(out)},
                                                    {"weight", weight_name}, {"weight_shape", format_shape(ws)}}));

    Shape ys = xs;
    ys.back() = out;
    Tensor y{make_array(ys), labels_or_blank(x)};
    y.axes.back() = out_axis;
    const std::size_t rows = in ? x.values.size() / in : element_count(Shape(xs.begin(), xs.end() - 1));
    float* yd = y.values.data();
    // y = bias, then y += x @ W^T (beta = 1), the order torch's addmm uses; without a bias, beta = 0.
    // All threads: each writes its own slab of output features y[:, j0:j1] = x @ W[j0:j1]^T.
    if (rows && out && in && rows <= kPackedLinearMaxRows && packed_from(packed, weight)) {
        packed_linear(x.values.data(), rows, *packed, bias ? bias->data() : nullptr, yd, threads_for(rows * out * in / 64));
    } else if (rows && out && in) {
        const int R = blas_int(rows, "linear"), O = blas_int(out, "linear"), I = blas_int(in, "linear");
        const int threads = threads_for(rows * out * in / 64);
        SerialBlas serial;
#pragma omp parallel num_threads(threads)
        {
            const auto [j0, j1] = share(out, omp_get_thread_num(), omp_get_num_threads());
            if (bias)
                for (std::size_t r = 0; r < rows; ++r)
                    std::memcpy(yd + r * out + j0, bias->data() + j0, (j1 - j0) * sizeof(float));
            if (j1 > j0)
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, R, static_cast<int>(j1 - j0), I, 1.0f,
                            x.values.data(), I, weight.data() + j0 * in, I, bias ? 1.0f : 0.0f, yd + j0, O);
        }
    } else if (bias) {
        for (std::size_t r = 0; r < rows; ++r) std::memcpy(yd + r * out, bias->data(), out * sizeof(float));
    } else
        std::fill(yd, yd + y.values.size(), 0.0f);  // in == 0: an empty sum
    return y;
}

LinearGrads linear_backward(const Tensor& x, const Array& weight, bool has_bias, const Tensor& grad_y) {
    const Shape xs = shape_of(x.values), ws = shape_of(weight);
    if (xs.empty() || ws.size() != 2 || ws[1] != xs.back())
        throw ShapeError(Message(Msg::op_backward_misfit, {{"op", "linear"}, {"operand", "weight"}, {"shape", format_shape(ws)},
                                                           {"x_shape", format_shape(xs)}}));
    const std::size_t in = xs.back(), out = ws[0];
    Shape ys = xs;
    ys.back() = out;
    require_grad_shape(grad_y, ys, "linear");
    const std::size_t rows = element_count(Shape(xs.begin(), xs.end() - 1));
    LinearGrads g{Tensor{make_array(xs), labels_or_blank(x)}, make_array({out, in}), make_array({0})};
    std::fill(g.x.values.begin(), g.x.values.end(), 0.0f);
    std::fill(g.weight.begin(), g.weight.end(), 0.0f);
    if (rows && out && in) {
        const int R = blas_int(rows, "linear"), O = blas_int(out, "linear"), I = blas_int(in, "linear");
        // grad_x [rows, in] = grad_y [rows, out] @ weight [out, in]
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, R, I, O, 1.0f, grad_y.values.data(), O, weight.data(), I,
                    0.0f, g.x.values.data(), I);
        // grad_weight [out, in] = grad_y^T [out, rows] @ x [rows, in]
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, O, I, R, 1.0f, grad_y.values.data(), O, x.values.data(), I,
                    0.0f, g.weight.data(), I);
    }
    if (has_bias) {
        // grad_bias [out] = sum over rows of grad_y, accumulated in double
        std::vector<double> sum(out, 0.0);
        for (std::size_t r = 0; r < rows; ++r)
            for (std::size_t o = 0; o < out; ++o) sum[o] += grad_y.values.data()[r * out + o];
        g.bias = make_array({out});
        for (std::size_t o = 0; o < out; ++o) g.bias.data()[o] = static_cast<float>(sum[o]);
    }
    return g;
}

// ---- layout ops -----------------------------------------------------------------------------
Tensor reshape(const Tensor& x, const Shape& shape, const Axes& axes) {
    const std::size_t count = element_count(shape);
    if (count != x.values.size())
        throw reshape_count_error(shape_of(x.values), shape);
    if (axes.size() != shape.size()) throw reshape_labels_error(axes, shape);
    Tensor y{make_array(shape), axes};
    copy_floats(x.values.data(), y.values.data(), count);
    return y;
}

Tensor reshape_backward(const Tensor& grad_y, const Tensor& x) {
    if (grad_y.values.size() != x.values.size())
        throw ShapeError(Message(Msg::reshape_backward_count, {{"count", std::to_string(grad_y.values.size())},
                                                               {"shape", format_shape(shape_of(x.values))},
                                                               {"x_count", std::to_string(x.values.size())}}));
    return reshape(grad_y, shape_of(x.values), labels_or_blank(x));
}

Tensor permute(const Tensor& x, const std::vector<std::size_t>& dims) {
    return gather(permute_view(borrowed_view(x), dims));
}

Tensor permute_backward(const Tensor& grad_y, const std::vector<std::size_t>& dims) {
    std::vector<std::size_t> inverse(dims.size());
    for (std::size_t i = 0; i < dims.size(); ++i) {
        if (dims[i] >= dims.size()) throw ShapeError(Message(Msg::permute_backward_dims));
        inverse[dims[i]] = i;
    }
    return permute(grad_y, inverse);
}

Tensor transpose(const Tensor& x, std::size_t dim0, std::size_t dim1) {
    return gather(transpose_view(borrowed_view(x), dim0, dim1));
}

Tensor transpose_backward(const Tensor& grad_y, std::size_t dim0, std::size_t dim1) {
    return transpose(grad_y, dim0, dim1);
}

Tensor select(const Tensor& x, std::size_t axis, std::size_t index) {
    return gather(select_view(borrowed_view(x), axis, index));
}

Tensor select_backward(const Tensor& grad_y, const Tensor& x, std::size_t axis, std::size_t index) {
    const Shape xs = shape_of(x.values);
    if (axis >= xs.size() || index >= xs[axis])
        throw ShapeError(Message(Msg::select_range, {{"op", "select backward"}, {"index", std::to_string(index)},
                                                     {"axis", std::to_string(axis)}, {"shape", format_shape(xs)}}));
    Shape ys = xs;
    ys.erase(ys.begin() + static_cast<std::ptrdiff_t>(axis));
    require_grad_shape(grad_y, ys, "select");
    Tensor g{make_array(xs), labels_or_blank(x)};
    std::fill(g.values.begin(), g.values.end(), 0.0f);
    std::size_t inner = 1;
    for (std::size_t i = axis + 1; i < xs.size(); ++i) inner *= xs[i];
    const std::size_t outer = grad_y.values.size() / (inner ? inner : 1);
    for (std::size_t o = 0; o < outer && inner; ++o)
        std::memcpy(g.values.data() + (o * xs[axis] + index) * inner, grad_y.values.data() + o * inner,
                    inner * sizeof(float));
    return g;
}

// ---- matmul ---------------------------------------------------------------------------------
namespace {

// How sgemm reads the last two axes [rows, cols] of a strided operand: as a row-major matrix with
// leading dimension ld, transposed or not. Views whose last two axes have no unit stride are
// gathered first (PyTorch's matmul copies them too).
struct BlasOperand {
    TensorView view;
    std::shared_ptr<const Tensor> gathered;  // keeps a gathered copy alive
    CBLAS_TRANSPOSE trans = CblasNoTrans;
    int ld = 1;
};

BlasOperand blas_operand(const TensorView& x) {
    const std::size_t r = x.shape.size(), rows = x.shape[r - 2], cols = x.shape[r - 1];
    const std::ptrdiff_t sr = x.strides[r - 2], sc = x.strides[r - 1];
    const auto big = [](std::size_t n) { return static_cast<std::ptrdiff_t>(n > 1 ? n : 1); };
    if ((cols <= 1 || sc == 1) && (rows <= 1 || sr >= big(cols)))
        return {x, nullptr, CblasNoTrans, blas_int(static_cast<std::size_t>(rows <= 1 ? big(cols) : sr), "matmul")};
    if ((rows <= 1 || sr == 1) && (cols <= 1 || sc >= big(rows)))
        return {x, nullptr, CblasTrans, blas_int(static_cast<std::size_t>(cols <= 1 ? big(rows) : sc), "matmul")};
    auto copy = contiguous(x);
    return {view_of(copy), copy, CblasNoTrans, blas_int(cols > 1 ? cols : 1, "matmul")};
}

// Element offset of batch item i (row-major over the leading axes) in a strided operand.
std::ptrdiff_t batch_offset(const TensorView& x, std::size_t i) {
    std::ptrdiff_t offset = 0;
    for (std::size_t a = x.shape.size() - 2; a-- > 0;) {
        offset += x.strides[a] * static_cast<std::ptrdiff_t>(i % x.shape[a]);
        i /= x.shape[a];
    }
    return offset;
}

}  // namespace

Tensor matmul(const TensorView& a, const TensorView& b, const Axes& out_axes, const std::string& a_name,
              const std::string& b_name) {
    const Shape &as = a.shape, &bs = b.shape;
    const std::string both = a_name + " " + format_shape(as) + " @ " + b_name + " " + format_shape(bs);
    if (as.size() < 2 || bs.size() != as.size())
        throw ShapeError(Message(Msg::matmul_rank, {{"both", both}}));
    const std::size_t r = as.size();
    for (std::size_t i = 0; i + 2 < r; ++i)
        if (as[i] != bs[i])
            throw ShapeError(Message(Msg::matmul_batch, {{"both", both}, {"axis", std::to_string(i)}, {"a", a_name},
                                                         {"a_axis", axis_desc(a, i)}, {"b", b_name}, {"b_axis", axis_desc(b, i)}}));
    if (as[r - 1] != bs[r - 2])
        throw ShapeError(Message(Msg::matmul_inner, {{"both", both}, {"a", a_name}, {"a_axis", axis_desc(a, r - 1)},
                                                     {"b", b_name}, {"b_axis", axis_desc(b, r - 2)}}));
    const std::size_t n = as[r - 2], k = as[r - 1], m = bs[r - 1];
    Shape ys = as;
    ys[r - 1] = m;
    if (out_axes.size() != r)
        throw ShapeError(Message(Msg::matmul_labels, {{"count", std::to_string(out_axes.size())}, {"rank", std::to_string(r)}}));
    Tensor y{make_array(ys), out_axes};
    const std::size_t batches = element_count(Shape(as.begin(), as.end() - 2));
    if (k == 0) {
        std::fill(y.values.data(), y.values.data() + y.values.size(), 0.0f);
        return y;
    }
    if (n == 0 || m == 0) return y;
    const int N = blas_int(n, "matmul"), K = blas_int(k, "matmul"), M = blas_int(m, "matmul");
    // sgemm reads the strided operands in place (q and k_t straight out of qkv's storage).
    const BlasOperand A = blas_operand(a), Bop = blas_operand(b);
    // All threads: the (b, h) products are independent; each runs single-threaded on one core.
    const std::ptrdiff_t count = static_cast<std::ptrdiff_t>(batches);
    const int threads = batches > 1 ? threads_for(batches * n * m * k / 64) : 1;
    // Both operands row-major and a width of whole tiles (attn @ v at c = 64): the AVX-512 tile, which
    // reads a in place and b's rows copied side by side, beats sgemm's packing at these sizes.
    const bool in_place = A.trans == CblasNoTrans && Bop.trans == CblasNoTrans && m % kInPlaceMatmulWidth == 0 &&
                          packed_linear_available();
    SerialBlas serial;
#pragma omp parallel for schedule(static) num_threads(threads)
    for (std::ptrdiff_t i = 0; i < count; ++i) {
        const std::size_t item = static_cast<std::size_t>(i);
        if (in_place) {
            in_place_matmul(A.view.data() + batch_offset(A.view, item), static_cast<std::size_t>(A.ld),
                            Bop.view.data() + batch_offset(Bop.view, item), static_cast<std::size_t>(Bop.ld), n, k, m,
                            y.values.data() + item * n * m);
            continue;
        }
        cblas_sgemm(CblasRowMajor, A.trans, Bop.trans, N, M, K, 1.0f, A.view.data() + batch_offset(A.view, item),
                    A.ld, Bop.view.data() + batch_offset(Bop.view, item), Bop.ld, 0.0f, y.values.data() + item * n * m,
                    M);
    }
    return y;
}

Tensor matmul(const Tensor& a, const Tensor& b, const Axes& out_axes, const std::string& a_name,
              const std::string& b_name) {
    return matmul(borrowed_view(a), borrowed_view(b), out_axes, a_name, b_name);
}

MatmulGrads matmul_backward(const Tensor& a, const Tensor& b, const Tensor& grad_y) {
    const Shape as = shape_of(a.values), bs = shape_of(b.values);
    if (as.size() < 2 || bs.size() != as.size() || as[as.size() - 1] != bs[bs.size() - 2])
        throw ShapeError(Message(Msg::matmul_backward, {{"a_shape", format_shape(as)}, {"b_shape", format_shape(bs)}}));
    const std::size_t r = as.size(), n = as[r - 2], k = as[r - 1], m = bs[r - 1];
    Shape ys = as;
    ys[r - 1] = m;
    require_grad_shape(grad_y, ys, "matmul");
    MatmulGrads g{Tensor{make_array(as), labels_or_blank(a)}, Tensor{make_array(bs), labels_or_blank(b)}};
    std::fill(g.a.values.begin(), g.a.values.end(), 0.0f);
    std::fill(g.b.values.begin(), g.b.values.end(), 0.0f);
    if (n == 0 || k == 0 || m == 0) return g;
    const std::size_t batches = element_count(Shape(as.begin(), as.end() - 2));
    const int N = blas_int(n, "matmul"), K = blas_int(k, "matmul"), M = blas_int(m, "matmul");
    for (std::size_t i = 0; i < batches; ++i) {
        const float* gy = grad_y.values.data() + i * n * m;  // [n, m]
        // grad_a [n, k] = grad_y [n, m] @ b^T [m, k]
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, K, M, 1.0f, gy, M, b.values.data() + i * k * m, M, 0.0f,
                    g.a.values.data() + i * n * k, K);
        // grad_b [k, m] = a^T [k, n] @ grad_y [n, m]
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, K, M, N, 1.0f, a.values.data() + i * n * k, K, gy, M, 0.0f,
                    g.b.values.data() + i * k * m, M);
    }
    return g;
}

// ---- elementwise ----------------------------------------------------------------------------
Tensor scale(const Tensor& x, float s) {
    Tensor y{make_array(shape_of(x.values)), x.axes};
    const float* xd = x.values.data();
    float* yd = y.values.data();
    for_spans(x.values.size(), [&](std::size_t begin, std::size_t end) { vmath::scale(xd + begin, s, yd + begin, end - begin); });
    return y;
}

Tensor scale_backward(const Tensor& grad_y, float s) { return scale(grad_y, s); }

Tensor softmax_last(const Tensor& x) {
    const Shape xs = shape_of(x.values);
    if (xs.empty()) throw ShapeError(Message(Msg::op_scalar_input, {{"op", "softmax"}}));
    Tensor y{make_array(xs), x.axes};
    const std::size_t n = xs.back();
    if (n == 0) return y;
    const std::ptrdiff_t rows = static_cast<std::ptrdiff_t>(x.values.size() / n);
#pragma omp parallel for schedule(static) num_threads(threads_for(x.values.size()))
    for (std::ptrdiff_t r = 0; r < rows; ++r)  // max, exp(x - max) and its sum, / sum (core/kernels/vmath.cpp)
        vmath::softmax_row(x.values.data() + r * n, y.values.data() + r * n, n);
    return y;
}

Tensor softmax_last_backward(const Tensor& y, const Tensor& grad_y) {
    const Shape ys = shape_of(y.values);
    if (ys.empty()) throw ShapeError(Message(Msg::softmax_backward_scalar));
    require_grad_shape(grad_y, ys, "softmax");
    Tensor g{make_array(ys), y.axes};
    const std::size_t n = ys.back();
    const std::size_t rows = n ? y.values.size() / n : 0;
    for (std::size_t r = 0; r < rows; ++r) {
        const float* yr = y.values.data() + r * n;
        const float* gy = grad_y.values.data() + r * n;
        float* gx = g.values.data() + r * n;
        double dot = 0.0;  // sum_j grad_y[j] * y[j]
        for (std::size_t j = 0; j < n; ++j) dot += static_cast<double>(gy[j]) * yr[j];
        for (std::size_t j = 0; j < n; ++j) gx[j] = static_cast<float>(yr[j] * (gy[j] - dot));
    }
    return g;
}

Tensor mask_fill(const Tensor& x, const Array& keep) {
    const Shape xs = shape_of(x.values), ks = shape_of(keep);
    if (xs.size() != 4 || ks.size() != 3 || ks[0] != xs[0] || ks[1] != xs[2] || ks[2] != xs[3])
        throw ShapeError(Message(Msg::mask_disagree, {{"shape", format_shape(xs)}, {"keep", format_shape(ks)}}));
    Tensor y{x.values, x.axes};
    const std::size_t B = xs[0], h = xs[1], nn = xs[2] * xs[3];
    const float minus_inf = -std::numeric_limits<float>::infinity();
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t head = 0; head < h; ++head) {
            float* out = y.values.data() + (b * h + head) * nn;
            const float* k = keep.data() + b * nn;
            for (std::size_t i = 0; i < nn; ++i)
                if (k[i] == 0.0f) out[i] = minus_inf;
        }
    return y;
}

Tensor dropout(const Tensor& x, float p, bool training, Rng& rng) {
    if (!training || p == 0.0f) return Tensor{copy_array(x.values), x.axes};
    if (!(p > 0.0f && p < 1.0f)) throw ShapeError(Message(Msg::op_rate, {{"op", "dropout"}, {"p", std::to_string(p)}}));
    Tensor y{make_array(shape_of(x.values)), x.axes};
    const float keep_scale = 1.0f / (1.0f - p);
    const float* xd = x.values.data();
    float* yd = y.values.data();
    for (std::size_t i = 0, n = x.values.size(); i < n; ++i) yd[i] = rng.uniform() < p ? 0.0f : xd[i] * keep_scale;
    return y;
}

Tensor dropout_backward(const Tensor& grad_y, float p, bool training, Rng& rng) {
    // The forward draws one uniform per element and drops it when u < p: the same draws here.
    return dropout(grad_y, p, training, rng);
}

Array drop_path_mask(std::size_t batch, float p, Rng& rng) {
    if (!(p >= 0.0f && p < 1.0f)) throw ShapeError(Message(Msg::op_rate, {{"op", "drop_path"}, {"p", std::to_string(p)}}));
    Array mask = make_array({batch, 1, 1});
    const float keep_scale = 1.0f / (1.0f - p);
    for (float& m : mask) m = rng.uniform() < p ? 0.0f : keep_scale;
    return mask;
}

Tensor drop_path(const Tensor& x, const Array& mask) {
    const Shape xs = shape_of(x.values);
    if (xs.empty() || shape_of(mask) != Shape{xs[0], 1, 1})
        throw ShapeError(Message(Msg::drop_path_mask, {{"shape", format_shape(shape_of(mask))}, {"x_shape", format_shape(xs)}}));
    Tensor y{make_array(xs), x.axes};
    const std::size_t per_sample = xs[0] ? x.values.size() / xs[0] : 0;
    for (std::size_t b = 0; b < xs[0]; ++b)
        vmath::scale(x.values.data() + b * per_sample, mask.data()[b], y.values.data() + b * per_sample, per_sample);
    return y;
}

Tensor drop_path_backward(const Tensor& grad_y, const Array& mask) { return drop_path(grad_y, mask); }

Tensor sum_last(const Tensor& x) {
    const Shape xs = shape_of(x.values);
    if (xs.empty()) throw ShapeError(Message(Msg::op_scalar_input, {{"op", "sum"}}));
    const Shape ys(xs.begin(), xs.end() - 1);
    Axes axes = labels_or_blank(x);
    axes.pop_back();
    Tensor y{make_array(ys), axes};
    const std::size_t n = xs.back();
    const std::ptrdiff_t rows = static_cast<std::ptrdiff_t>(y.values.size());
#pragma omp parallel for schedule(static) num_threads(threads_for(x.values.size()))
    for (std::ptrdiff_t r = 0; r < rows; ++r)  // accumulated in double (core/kernels/vmath.cpp)
        y.values.data()[r] = static_cast<float>(vmath::sum(x.values.data() + static_cast<std::size_t>(r) * n, n));
    return y;
}

Tensor sum_last_backward(const Tensor& grad_y, std::size_t n, const std::string& axis) {
    Shape xs = shape_of(grad_y.values);
    xs.push_back(n);
    Axes axes = labels_or_blank(grad_y);
    axes.push_back(axis);
    Tensor g{make_array(xs), axes};
    for (std::size_t r = 0, rows = grad_y.values.size(); r < rows; ++r)
        std::fill(g.values.data() + r * n, g.values.data() + (r + 1) * n, grad_y.values.data()[r]);
    return g;
}

// ---- Vision Transformer ops -----------------------------------------------------------------
Tensor layer_norm(const Tensor& x, const Array& weight, const Array& bias, float eps, const std::string& weight_name) {
    const Shape xs = shape_of(x.values);
    if (xs.empty()) throw ShapeError(Message(Msg::op_scalar_input, {{"op", "layer_norm"}}));
    const std::size_t n = xs.back();
    for (const Array* p : {&weight, &bias})
        if (p->dimension() != 1 || p->size() != n)
            throw ShapeError(Message(Msg::layer_norm_param, {{"name", weight_name + (p == &bias ? " bias" : "")},
                                                             {"shape", format_shape(shape_of(*p))}, {"size", std::to_string(n)},
                                                             {"x_shape", format_shape(xs)}, {"axis", axis_desc(x, xs.size() - 1)}}));
    Tensor y{make_array(xs), x.axes};
    const std::ptrdiff_t rows = static_cast<std::ptrdiff_t>(n ? x.values.size() / n : 0);
    // Per row, in double: mean, biased variance, (x - mean) / sqrt(var + eps) * weight + bias (core/kernels/vmath.cpp).
#pragma omp parallel for schedule(static) num_threads(threads_for(x.values.size()))
    for (std::ptrdiff_t r = 0; r < rows; ++r)
        vmath::layer_norm_row(x.values.data() + r * n, weight.data(), bias.data(), eps, y.values.data() + r * n, n);
    return y;
}

LayerNormGrads layer_norm_backward(const Tensor& x, const Array& weight, float eps, const Tensor& grad_y) {
    const Shape xs = shape_of(x.values);
    if (xs.empty() || weight.dimension() != 1 || weight.size() != xs.back())
        throw ShapeError(Message(Msg::op_backward_misfit, {{"op", "layer_norm"}, {"operand", "weight"},
                                                           {"shape", format_shape(shape_of(weight))}, {"x_shape", format_shape(xs)}}));
    require_grad_shape(grad_y, xs, "layer_norm");
    const std::size_t n = xs.back(), rows = n ? x.values.size() / n : 0;
    LayerNormGrads g{Tensor{make_array(xs), x.axes}, make_array({n}), make_array({n})};
    std::vector<double> gw(n, 0.0), gb(n, 0.0), xhat(n);
    for (std::size_t r = 0; r < rows; ++r) {
        const float* in = x.values.data() + r * n;
        const float* gy = grad_y.values.data() + r * n;
        float* gx = g.x.values.data() + r * n;
        double mean = 0.0, var = 0.0;
        for (std::size_t j = 0; j < n; ++j) mean += in[j];
        mean /= static_cast<double>(n);
        for (std::size_t j = 0; j < n; ++j) var += (in[j] - mean) * (in[j] - mean);
        const double inv_std = 1.0 / std::sqrt(var / static_cast<double>(n) + eps);
        // dxhat = grad_y * weight; grad_x = inv_std * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat))
        double mean_d = 0.0, mean_dx = 0.0;
        for (std::size_t j = 0; j < n; ++j) {
            xhat[j] = (in[j] - mean) * inv_std;
            const double d = static_cast<double>(gy[j]) * weight.data()[j];
            mean_d += d;
            mean_dx += d * xhat[j];
            gw[j] += gy[j] * xhat[j];
            gb[j] += gy[j];
        }
        mean_d /= static_cast<double>(n);
        mean_dx /= static_cast<double>(n);
        for (std::size_t j = 0; j < n; ++j)
            gx[j] = static_cast<float>(inv_std * (gy[j] * weight.data()[j] - mean_d - xhat[j] * mean_dx));
    }
    for (std::size_t j = 0; j < n; ++j) {
        g.weight.data()[j] = static_cast<float>(gw[j]);
        g.bias.data()[j] = static_cast<float>(gb[j]);
    }
    return g;
}

Tensor gelu(const Tensor& x) {
    Tensor y{make_array(shape_of(x.values)), x.axes};
    const float* xd = x.values.data();
    float* yd = y.values.data();
    // 0.5 * x * (1 + erf(x / sqrt(2))), 8 lanes at a time with libmvec on AVX2 (core/kernels/vmath.cpp).
    for_spans(x.values.size(), [&](std::size_t begin, std::size_t end) { vmath::gelu(xd + begin, yd + begin, end - begin); });
    return y;
}

Tensor gelu_backward(const Tensor& x, const Tensor& grad_y) {
    require_grad_shape(grad_y, shape_of(x.values), "gelu");
    Tensor g{make_array(shape_of(x.values)), x.axes};
    for (std::size_t i = 0, n = x.values.size(); i < n; ++i) {
        const double v = x.values.data()[i];
        const double cdf = 0.5 * (1.0 + std::erf(v * 0.70710678118654752));
        const double pdf = 0.39894228040143268 * std::exp(-0.5 * v * v);
        g.values.data()[i] = static_cast<float>(grad_y.values.data()[i] * (cdf + v * pdf));
    }
    return g;
}

Tensor layer_scale(const Tensor& x, const Array& gamma, const std::string& gamma_name) {
    const Shape xs = shape_of(x.values);
    if (xs.empty() || shape_of(gamma) != Shape{xs.back()})
        throw ShapeError(Message(Msg::layer_scale_gamma, {{"name", gamma_name}, {"shape", format_shape(shape_of(gamma))},
                                                          {"size", xs.empty() ? std::string("C") : std::to_string(xs.back())},
                                                          {"x_shape", format_shape(xs)}}));
    Tensor y{make_array(xs), x.axes};
    const std::size_t C = xs.back(), rows = C ? x.values.size() / C : 0;
    const float* xd = x.values.data();
    float* yd = y.values.data();
    for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t c = 0; c < C; ++c) yd[r * C + c] = xd[r * C + c] * gamma.data()[c];
    return y;
}

LayerScaleGrads layer_scale_backward(const Tensor& x, const Array& gamma, const Tensor& grad_y) {
    require_grad_shape(grad_y, shape_of(x.values), "layer_scale");
    LayerScaleGrads g{layer_scale(grad_y, gamma), make_array(shape_of(gamma))};
    const std::size_t C = gamma.size(), rows = C ? x.values.size() / C : 0;
    std::vector<double> sum(C, 0.0);
    for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t c = 0; c < C; ++c) sum[c] += double(grad_y.values.data()[r * C + c]) * x.values.data()[r * C + c];
    for (std::size_t c = 0; c < C; ++c) g.gamma.data()[c] = static_cast<float>(sum[c]);
    return g;
}

Tensor add(const Tensor& a, const Tensor& b, const std::string& a_name, const std::string& b_name) {
    const Shape as = shape_of(a.values), bs = shape_of(b.values);
    Shape b_core(std::find_if(bs.begin(), bs.end(), [](std::size_t d) { return d != 1; }), bs.end());
    const bool fits = b_core.size() <= as.size() && std::equal(b_core.rbegin(), b_core.rend(), as.rbegin()) &&
                      bs.size() <= as.size();
    if (!fits)
        throw ShapeError(Message(Msg::add_mismatch, {{"b", b_name}, {"b_shape", format_shape(bs)}, {"a", a_name},
                                                     {"a_shape", format_shape(as)}}));
    Tensor y{make_array(as), a.axes};
    const std::size_t n = a.values.size(), period = b.values.size();
    const float* ad = a.values.data();
    const float* bd = b.values.data();
    float* yd = y.values.data();
    // b repeats over a's leading axes: each span is cut where b starts over.
    for_spans(n, [&](std::size_t begin, std::size_t end) {
        for (std::size_t i = begin; i < end;) {
            const std::size_t at = i % period, len = std::min(end - i, period - at);
            vmath::add(ad + i, bd + at, yd + i, len);
            i += len;
        }
    });
    return y;
}

AddGrads add_backward(const Tensor& b, const Tensor& grad_y) {
    const std::size_t n = grad_y.values.size(), period = b.values.size();
    if (period == 0 || n % period != 0)
        throw ShapeError(Message(Msg::add_backward, {{"shape", format_shape(shape_of(b.values))},
                                                     {"grad_shape", format_shape(shape_of(grad_y.values))}}));
    std::vector<double> sum(period, 0.0);
    for (std::size_t i = 0; i < n; ++i) sum[i % period] += grad_y.values.data()[i];
    AddGrads g{grad_y, Tensor{make_array(shape_of(b.values)), labels_or_blank(b)}};
    for (std::size_t i = 0; i < period; ++i) g.b.values.data()[i] = static_cast<float>(sum[i]);
    return g;
}

Tensor expand(const Tensor& x, const Shape& shape) {
    const Shape xs = shape_of(x.values);
    bool ok = xs.size() == shape.size();
    for (std::size_t d = 0; ok && d < xs.size(); ++d) ok = xs[d] == shape[d] || xs[d] == 1;
    if (!ok)
        throw ShapeError(Message(Msg::expand_mismatch, {{"shape", format_shape(xs)}, {"target", format_shape(shape)}}));
    Tensor y{make_array(shape), labels_or_blank(x)};
    const Strides src = contiguous_strides(xs);
    std::vector<std::size_t> index(shape.size(), 0);
    for (std::size_t i = 0, n = y.values.size(); i < n; ++i) {
        std::ptrdiff_t offset = 0;
        for (std::size_t d = 0; d < shape.size(); ++d)
            offset += xs[d] == 1 ? 0 : src[d] * static_cast<std::ptrdiff_t>(index[d]);
        y.values.data()[i] = x.values.data()[offset];
        for (std::size_t d = shape.size(); d-- > 0;) {  // odometer over the output axes
            if (++index[d] < shape[d]) break;
            index[d] = 0;
        }
    }
    return y;
}

Tensor concat(const Tensor& a, const Tensor& b, std::size_t axis, const std::string& a_name,
              const std::string& b_name) {
    const Shape as = shape_of(a.values), bs = shape_of(b.values);
    bool ok = as.size() == bs.size() && axis < as.size();
    for (std::size_t d = 0; ok && d < as.size(); ++d) ok = d == axis || as[d] == bs[d];
    if (!ok)
        throw ShapeError(Message(Msg::cat_mismatch, {{"a", a_name}, {"a_shape", format_shape(as)}, {"b", b_name},
                                                     {"b_shape", format_shape(bs)}, {"axis", std::to_string(axis)}}));
    Shape ys = as;
    ys[axis] += bs[axis];
    Tensor y{make_array(ys), labels_or_blank(a)};
    // Both viewed as [outer, size(axis) * inner]: each outer block is a's slab, then b's.
    std::size_t inner = 1;
    for (std::size_t d = axis + 1; d < as.size(); ++d) inner *= as[d];
    const std::size_t a_slab = as[axis] * inner, b_slab = bs[axis] * inner;
    const std::size_t outer = element_count(Shape(as.begin(), as.begin() + static_cast<std::ptrdiff_t>(axis)));
    float* yd = y.values.data();
    for (std::size_t o = 0; o < outer; ++o) {
        yd = std::copy(a.values.data() + o * a_slab, a.values.data() + (o + 1) * a_slab, yd);
        yd = std::copy(b.values.data() + o * b_slab, b.values.data() + (o + 1) * b_slab, yd);
    }
    return y;
}

ConcatGrads concat_backward(const Tensor& grad_y, std::size_t axis, std::size_t a_size) {
    const Shape gs = shape_of(grad_y.values);
    if (axis >= gs.size() || a_size > gs[axis])
        throw ShapeError(Message(Msg::select_range, {{"op", "cat"}, {"index", std::to_string(a_size)},
                                                     {"axis", std::to_string(axis)}, {"shape", format_shape(gs)}}));
    Shape as = gs, bs = gs;
    as[axis] = a_size;
    bs[axis] = gs[axis] - a_size;
    ConcatGrads g{Tensor{make_array(as), labels_or_blank(grad_y)}, Tensor{make_array(bs), labels_or_blank(grad_y)}};
    // As the forward: each outer block of grad_y is a's slab, then b's.
    std::size_t inner = 1;
    for (std::size_t d = axis + 1; d < gs.size(); ++d) inner *= gs[d];
    const std::size_t a_slab = as[axis] * inner, b_slab = bs[axis] * inner;
    const std::size_t outer = element_count(Shape(gs.begin(), gs.begin() + static_cast<std::ptrdiff_t>(axis)));
    const float* src = grad_y.values.data();
    for (std::size_t o = 0; o < outer; ++o) {
        std::copy(src, src + a_slab, g.a.values.data() + o * a_slab);
        src += a_slab;
        std::copy(src, src + b_slab, g.b.values.data() + o * b_slab);
        src += b_slab;
    }
    return g;
}

Tensor patchify(const Tensor& x, std::size_t p) {
    const Shape xs = shape_of(x.values);
    if (xs.size() != 4 || p == 0 || xs[2] % p != 0 || xs[3] % p != 0)
        throw ShapeError(Message(Msg::patchify_shape, {{"shape", format_shape(xs)}, {"patch", std::to_string(p)}}));
    const std::size_t B = xs[0], C = xs[1], H = xs[2], W = xs[3], rows = H / p, cols = W / p;
    Tensor y{make_array({B, rows * cols, C * p * p}), {"B", "P", "3pp"}};
    float* yd = y.values.data();
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t r = 0; r < rows; ++r)
            for (std::size_t c = 0; c < cols; ++c)  // one patch: C * p rows of p pixels
                for (std::size_t ch = 0; ch < C; ++ch)
                    for (std::size_t kh = 0; kh < p; ++kh) {
                        const float* src = x.values.data() + ((b * C + ch) * H + r * p + kh) * W + c * p;
                        yd = std::copy(src, src + p, yd);
                    }
    return y;
}

Tensor patchify_backward(const Tensor& grad_y, const Shape& xs, std::size_t p) {
    if (xs.size() != 4 || p == 0 || xs[2] % p != 0 || xs[3] % p != 0)
        throw ShapeError(Message(Msg::patchify_shape, {{"shape", format_shape(xs)}, {"patch", std::to_string(p)}}));
    const std::size_t B = xs[0], C = xs[1], H = xs[2], W = xs[3], rows = H / p, cols = W / p;
    require_grad_shape(grad_y, {B, rows * cols, C * p * p}, "patchify");
    Tensor g{make_array(xs), {"B", "3", "H", "W"}};
    const float* src = grad_y.values.data();
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t r = 0; r < rows; ++r)
            for (std::size_t c = 0; c < cols; ++c)  // the forward's order: C * p rows of p pixels
                for (std::size_t ch = 0; ch < C; ++ch)
                    for (std::size_t kh = 0; kh < p; ++kh, src += p)
                        std::copy(src, src + p, g.values.data() + ((b * C + ch) * H + r * p + kh) * W + c * p);
    return g;
}

}  // namespace attnscope
