// The ops of a hybrid ViT's CNN stem (timm's HybridEmbed): a convolution as im2col + one GEMM,
// BatchNorm2d in eval, ReLU, and the feature map read as tokens. Each checks its operands' shapes
// and throws a ShapeError naming the op and both shapes.
#pragma once

#include <cstddef>
#include <string>

#include "ops.hpp"
#include "tensor.hpp"

namespace attnscope {

// The windows a k x k convolution with `stride` and zero padding `pad` reads, one row per output
// position (row by row), each flattened in the (c, kh, kw) order of the conv weight; pixels outside
// the image read 0. Ho = (H + 2 pad - k) / stride + 1, Wo likewise.
//   x [B, C, H, W] -> [B, Ho*Wo, C*k*k]
Tensor im2col(const Tensor& x, std::size_t k, std::size_t stride, std::size_t pad);
// Backward of im2col: every window's gradient added back onto the pixels it read (windows that
// overlap add up; padding's zeros get none).   grad_y [B, Ho*Wo, C*k*k] -> [B, C, H, W]
Tensor im2col_backward(const Tensor& grad_y, const Shape& x_shape, std::size_t k, std::size_t stride, std::size_t pad);

// nn.Conv2d(C, C_out, k, stride, pad): linear(im2col(x), weight) laid out as channels.
//   x [B, C, H, W], weight [C_out, C*k*k], bias [C_out] or null -> [B, C_out, Ho, Wo]
Tensor conv2d(const Tensor& x, const Array& weight, const Array* bias, std::size_t k, std::size_t stride,
              std::size_t pad, const std::string& weight_name = "weight");
// Backward of conv2d: linear's backward on the windows, then im2col's.
//   grad_y [B, C_out, Ho, Wo] -> grad_x [B, C, H, W], grad_weight [C_out, C*k*k], grad_bias [C_out]
LinearGrads conv2d_backward(const Tensor& x, const Array& weight, bool has_bias, std::size_t k, std::size_t stride,
                            std::size_t pad, const Tensor& grad_y);

// nn.BatchNorm2d in eval: (x - running_mean) / sqrt(running_var + eps) * weight + bias, per channel.
//   x [B, C, H, W], weight, bias, mean, var [C] -> [B, C, H, W]
Tensor batch_norm_eval(const Tensor& x, const Array& weight, const Array& bias, const Array& mean, const Array& var,
                       float eps, const std::string& name = "bn");
// Backward of batch_norm_eval with respect to x: grad_y * weight / sqrt(var + eps) per channel (the
// running statistics are constants in eval).   grad_y [B, C, H, W] -> [B, C, H, W]
Tensor batch_norm_eval_backward(const Array& weight, const Array& var, float eps, const Tensor& grad_y);

// max(x, 0), elementwise.   x [...] -> [...]
Tensor relu(const Tensor& x);
// Backward of relu from its output y: grad_y where y > 0, else 0 (PyTorch's threshold_backward).
Tensor relu_backward(const Tensor& y, const Tensor& grad_y);

// x.flatten(2).transpose(1, 2): one row of C channels per position, row by row (a copy).
//   x [B, C, h, w] -> [B, h*w, C]
Tensor channels_to_tokens(const Tensor& x);
// Backward of channels_to_tokens: the rows laid out as channels again.   grad_y [B, h*w, C] -> [B, C, h, w]
Tensor channels_to_tokens_backward(const Tensor& grad_y, const Shape& x_shape);

}  // namespace attnscope
