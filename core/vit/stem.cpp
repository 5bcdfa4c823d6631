// The CNN stem's ops: im2col, conv2d (im2col + the linear op's GEMM), BatchNorm2d in eval, ReLU and
// the feature map as tokens.
#include "stem.hpp"

#include <algorithm>
#include <cmath>

#include "ops.hpp"

namespace attnscope {

namespace {

void check_image(const Tensor& x, const char* op) {
    const Shape xs = shape_of(x.values);
    if (xs.size() != 4) throw ShapeError(Message(Msg::stem_input_shape, {{"op", op}, {"shape", format_shape(xs)}}));
}

void check_channels(const Array& a, std::size_t C, const std::string& what, const Shape& xs) {
    if (a.dimension() != 1 || a.size() != C)
        throw ShapeError(Message(Msg::stem_channels, {{"name", what}, {"shape", format_shape(shape_of(a))},
                                                      {"channels", std::to_string(C)}, {"x_shape", format_shape(xs)}}));
}

}  // namespace

Tensor im2col(const Tensor& x, std::size_t k, std::size_t stride, std::size_t pad) {
    check_image(x, "im2col");
    const Shape xs = shape_of(x.values);
    const std::size_t B = xs[0], C = xs[1], H = xs[2], W = xs[3];
    if (k == 0 || stride == 0 || H + 2 * pad < k || W + 2 * pad < k)
        throw ShapeError(Message(Msg::im2col_fit, {{"kernel", std::to_string(k)}, {"stride", std::to_string(stride)},
                                                   {"pad", std::to_string(pad)}, {"shape", format_shape(xs)}}));
    const std::size_t Ho = (H + 2 * pad - k) / stride + 1, Wo = (W + 2 * pad - k) / stride + 1;
    Tensor y{make_array({B, Ho * Wo, C * k * k}), {"B", "P", "Ckk"}};
    float* yd = y.values.data();
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t oy = 0; oy < Ho; ++oy)
            for (std::size_t ox = 0; ox < Wo; ++ox)  // one window: C * k rows of k pixels
                for (std::size_t ch = 0; ch < C; ++ch) {
                    const float* plane = x.values.data() + (b * C + ch) * H * W;
                    for (std::size_t kh = 0; kh < k; ++kh) {
                        const std::ptrdiff_t iy = static_cast<std::ptrdiff_t>(oy * stride + kh) - static_cast<std::ptrdiff_t>(pad);
                        for (std::size_t kw = 0; kw < k; ++kw) {
                            const std::ptrdiff_t ix =
                                static_cast<std::ptrdiff_t>(ox * stride + kw) - static_cast<std::ptrdiff_t>(pad);
                            const bool inside = iy >= 0 && ix >= 0 && iy < static_cast<std::ptrdiff_t>(H) &&
                                                ix < static_cast<std::ptrdiff_t>(W);
                            *yd++ = inside ? plane[static_cast<std::size_t>(iy) * W + static_cast<std::size_t>(ix)] : 0.0f;
                        }
                    }
                }
    return y;
}

Tensor im2col_backward(const Tensor& grad_y, const Shape& xs, std::size_t k, std::size_t stride, std::size_t pad) {
    if (xs.size() != 4) throw ShapeError(Message(Msg::stem_input_shape, {{"op", "im2col"}, {"shape", format_shape(xs)}}));
    const std::size_t B = xs[0], C = xs[1], H = xs[2], W = xs[3];
    if (k == 0 || stride == 0 || H + 2 * pad < k || W + 2 * pad < k)
        throw ShapeError(Message(Msg::im2col_fit, {{"kernel", std::to_string(k)}, {"stride", std::to_string(stride)},
                                                   {"pad", std::to_string(pad)}, {"shape", format_shape(xs)}}));
    const std::size_t Ho = (H + 2 * pad - k) / stride + 1, Wo = (W + 2 * pad - k) / stride + 1;
    if (shape_of(grad_y.values) != Shape{B, Ho * Wo, C * k * k})
        throw ShapeError(Message(Msg::op_grad_shape, {{"op", "im2col"}, {"shape", format_shape(shape_of(grad_y.values))},
                                                      {"expected", format_shape({B, Ho * Wo, C * k * k})}}));
    Tensor g{make_array(xs), {"B", "C", "H", "W"}};
    std::fill(g.values.begin(), g.values.end(), 0.0f);
    const float* gy = grad_y.values.data();
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t oy = 0; oy < Ho; ++oy)
            for (std::size_t ox = 0; ox < Wo; ++ox)  // the forward's window order
                for (std::size_t ch = 0; ch < C; ++ch) {
                    float* plane = g.values.data() + (b * C + ch) * H * W;
                    for (std::size_t kh = 0; kh < k; ++kh) {
                        const std::ptrdiff_t iy = static_cast<std::ptrdiff_t>(oy * stride + kh) - static_cast<std::ptrdiff_t>(pad);
                        for (std::size_t kw = 0; kw < k; ++kw, ++gy) {
                            const std::ptrdiff_t ix =
                                static_cast<std::ptrdiff_t>(ox * stride + kw) - static_cast<std::ptrdiff_t>(pad);
                            if (iy >= 0 && ix >= 0 && iy < static_cast<std::ptrdiff_t>(H) && ix < static_cast<std::ptrdiff_t>(W))
                                plane[static_cast<std::size_t>(iy) * W + static_cast<std::size_t>(ix)] += *gy;
                        }
                    }
                }
    return g;
}

Tensor conv2d(const Tensor& x, const Array& weight, const Array* bias, std::size_t k, std::size_t stride,
              std::size_t pad, const std::string& weight_name) {
    check_image(x, "conv2d");
    const Shape xs = shape_of(x.values), ws = shape_of(weight);
    if (ws.size() != 2 || ws[1] != xs[1] * k * k)
        throw ShapeError(Message(Msg::conv2d_weight, {{"name", weight_name}, {"shape", format_shape(ws)},
                                                      {"channels", std::to_string(xs[1])}, {"kernel", std::to_string(k)},
                                                      {"x_shape", format_shape(xs)}}));
    const Tensor windows = im2col(x, k, stride, pad);                                  // [B, Ho*Wo, C*k*k]
    const Tensor rows = linear(windows, weight, bias, "C", weight_name);               // [B, Ho*Wo, C_out]
    const std::size_t B = xs[0], Ho = (xs[2] + 2 * pad - k) / stride + 1, Wo = (xs[3] + 2 * pad - k) / stride + 1;
    return reshape(permute(rows, {0, 2, 1}), {B, ws[0], Ho, Wo}, {"B", "C", "H", "W"});  // [B, C_out, Ho, Wo]
}

LinearGrads conv2d_backward(const Tensor& x, const Array& weight, bool has_bias, std::size_t k, std::size_t stride,
                            std::size_t pad, const Tensor& grad_y) {
    check_image(x, "conv2d backward");
    check_image(grad_y, "conv2d backward");
    const Shape xs = shape_of(x.values), gs = shape_of(grad_y.values);
    const Tensor windows = im2col(x, k, stride, pad);  // [B, Ho*Wo, C*k*k]
    const Tensor rows = permute(reshape(grad_y, {gs[0], gs[1], gs[2] * gs[3]}, {"B", "C", "P"}), {0, 2, 1});  // [B, Ho*Wo, C_out]
    LinearGrads g = linear_backward(windows, weight, has_bias, rows);
    g.x = im2col_backward(g.x, xs, k, stride, pad);  // [B, C, H, W]
    return g;
}

Tensor batch_norm_eval(const Tensor& x, const Array& weight, const Array& bias, const Array& mean, const Array& var,
                       float eps, const std::string& name) {
    check_image(x, "batch_norm");
    const Shape xs = shape_of(x.values);
    const std::size_t B = xs[0], C = xs[1], HW = xs[2] * xs[3];
    check_channels(weight, C, "batch_norm: " + name + ".weight", xs);
    check_channels(bias, C, "batch_norm: " + name + ".bias", xs);
    check_channels(mean, C, "batch_norm: " + name + ".running_mean", xs);
    check_channels(var, C, "batch_norm: " + name + ".running_var", xs);
    Tensor y{make_array(xs), x.axes};
    // As PyTorch's CPU kernel in eval: y = x * alpha + beta, alpha = weight / sqrt(var + eps),
    // beta = bias - mean * alpha.
    for (std::size_t c = 0; c < C; ++c) {
        const float alpha = weight(c) / std::sqrt(var(c) + eps), beta = bias(c) - mean(c) * alpha;
        for (std::size_t b = 0; b < B; ++b) {
            const float* src = x.values.data() + (b * C + c) * HW;
            float* dst = y.values.data() + (b * C + c) * HW;
            for (std::size_t i = 0; i < HW; ++i) dst[i] = src[i] * alpha + beta;
        }
    }
    return y;
}

Tensor batch_norm_eval_backward(const Array& weight, const Array& var, float eps, const Tensor& grad_y) {
    check_image(grad_y, "batch_norm backward");
    const Shape gs = shape_of(grad_y.values);
    const std::size_t B = gs[0], C = gs[1], HW = gs[2] * gs[3];
    check_channels(weight, C, "batch_norm backward: weight", gs);
    check_channels(var, C, "batch_norm backward: running_var", gs);
    Tensor g{make_array(gs), grad_y.axes};
    for (std::size_t c = 0; c < C; ++c) {
        const float alpha = weight(c) / std::sqrt(var(c) + eps);  // the forward's alpha
        for (std::size_t b = 0; b < B; ++b) {
            const float* src = grad_y.values.data() + (b * C + c) * HW;
            float* dst = g.values.data() + (b * C + c) * HW;
            for (std::size_t i = 0; i < HW; ++i) dst[i] = src[i] * alpha;
        }
    }
    return g;
}

Tensor relu(const Tensor& x) {
    Tensor y{make_array(shape_of(x.values)), x.axes};
    std::transform(x.values.begin(), x.values.end(), y.values.begin(), [](float v) { return v > 0.0f ? v : 0.0f; });
    return y;
}

Tensor relu_backward(const Tensor& y, const Tensor& grad_y) {
    if (shape_of(grad_y.values) != shape_of(y.values))
        throw ShapeError(Message(Msg::op_grad_shape, {{"op", "relu"}, {"shape", format_shape(shape_of(grad_y.values))},
                                                      {"expected", format_shape(shape_of(y.values))}}));
    Tensor g{make_array(shape_of(y.values)), y.axes};
    for (std::size_t i = 0, n = y.values.size(); i < n; ++i)
        g.values.data()[i] = y.values.data()[i] > 0.0f ? grad_y.values.data()[i] : 0.0f;
    return g;
}

Tensor channels_to_tokens(const Tensor& x) {
    check_image(x, "flatten(2).transpose(1, 2)");
    const Shape xs = shape_of(x.values);
    const Tensor flat = reshape(x, {xs[0], xs[1], xs[2] * xs[3]}, {"B", "C", "P"});  // [B, C, h*w]
    return permute(flat, {0, 2, 1});                                                   // [B, h*w, C]
}

Tensor channels_to_tokens_backward(const Tensor& grad_y, const Shape& xs) {
    if (xs.size() != 4) throw ShapeError(Message(Msg::stem_input_shape, {{"op", "transpose"}, {"shape", format_shape(xs)}}));
    if (shape_of(grad_y.values) != Shape{xs[0], xs[2] * xs[3], xs[1]})
        throw ShapeError(Message(Msg::op_grad_shape, {{"op", "transpose"}, {"shape", format_shape(shape_of(grad_y.values))},
                                                      {"expected", format_shape({xs[0], xs[2] * xs[3], xs[1]})}}));
    const Tensor flat = permute(grad_y, {0, 2, 1});      // [B, C, h*w]
    return reshape(flat, xs, {"B", "C", "H", "W"});  // [B, C, h, w]
}

}  // namespace attnscope
