// The ops of a hybrid ViT's CNN stem (timm's HybridEmbed): a convolution as im2col + one GEMM,
// BatchNorm2d in eval, ReLU, and the feature map read as tokens. Each checks its operands' shapes
// and throws a ShapeError naming the op and both shapes.
#pragma once

#include <cstddef>
#include <string>

#include "tensor.hpp"

namespace attnscope {

// The windows a k x k convolution with `stride` and zero padding `pad` reads, one row per output
// position (row by row), each flattened in the (c, kh, kw) order of the conv weight; pixels outside
// the image read 0. Ho = (H + 2 pad - k) / stride + 1, Wo likewise.
//   x [B, C, H, W] -> [B, Ho*Wo, C*k*k]
Tensor im2col(const Tensor& x, std::size_t k, std::size_t stride, std::size_t pad);

// nn.Conv2d(C, C_out, k, stride, pad): linear(im2col(x), weight) laid out as channels.
//   x [B, C, H, W], weight [C_out, C*k*k], bias [C_out] or null -> [B, C_out, Ho, Wo]
Tensor conv2d(const Tensor& x, const Array& weight, const Array* bias, std::size_t k, std::size_t stride,
              std::size_t pad, const std::string& weight_name = "weight");

// nn.BatchNorm2d in eval: (x - running_mean) / sqrt(running_var + eps) * weight + bias, per channel.
//   x [B, C, H, W], weight, bias, mean, var [C] -> [B, C, H, W]
Tensor batch_norm_eval(const Tensor& x, const Array& weight, const Array& bias, const Array& mean, const Array& var,
                       float eps, const std::string& name = "bn");

// max(x, 0), elementwise.   x [...] -> [...]
Tensor relu(const Tensor& x);

// x.flatten(2).transpose(1, 2): one row of C channels per position, row by row (a copy).
//   x [B, C, h, w] -> [B, h*w, C]
Tensor channels_to_tokens(const Tensor& x);

}  // namespace attnscope
