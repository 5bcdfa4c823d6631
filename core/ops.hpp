// The op set of the attention pipeline. Each op checks its operands' shapes and throws a
// ShapeError naming the op, both shapes and the axis that disagrees; each returns an evaluated
// row-major Tensor whose axis labels follow the op (permute permutes them, and so on).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "random.hpp"
#include "tensor.hpp"

namespace attnscope {

// y = x @ weight^T + bias over the last axis.   x [..., in], weight [out, in], bias [out] -> [..., out]
Tensor linear(const Tensor& x, const Array& weight, const Array* bias, const std::string& out_axis,
              const std::string& weight_name = "weight");

// Same values in row-major order, new shape and labels (the element counts must agree).
Tensor reshape(const Tensor& x, const Shape& shape, const Axes& axes);

// out.shape[i] = x.shape[dims[i]]
Tensor permute(const Tensor& x, const std::vector<std::size_t>& dims);

// x[..., index, ...] along axis: one result of torch.unbind(axis).
Tensor select(const Tensor& x, std::size_t axis, std::size_t index);

// Swaps two axes.
Tensor transpose(const Tensor& x, std::size_t dim0, std::size_t dim1);

// Batched matrix product.   a [..., n, k] @ b [..., k, m] -> [..., n, m] (equal batch axes)
Tensor matmul(const Tensor& a, const Tensor& b, const Axes& out_axes,
              const std::string& a_name = "a", const std::string& b_name = "b");

// x * s
Tensor scale(const Tensor& x, float s);

// Softmax over the last axis; subtracts each row's max first, so large inputs do not overflow.
Tensor softmax_last(const Tensor& x);

// attn.masked_fill(keep == 0, -inf): hidden (query, key) pairs get -inf so softmax gives them 0.
// x [B, h, N, N'], keep [B, N, N'] (1 keep, 0 hide; the same for every head) -> [B, h, N, N']
Tensor mask_fill(const Tensor& x, const Array& keep);

// Inverted dropout: in training, each element is kept with probability 1 - p and scaled by
// 1 / (1 - p), zeroed otherwise; outside training, the identity.
Tensor dropout(const Tensor& x, float p, bool training, Rng& rng);

// Sum over the last axis, accumulated in double.   x [..., n] -> [...]
Tensor sum_last(const Tensor& x);

// ---- Vision Transformer ops -----------------------------------------------------------------

// LayerNorm over the last axis: (x - mean) / sqrt(var + eps) * weight + bias, with the biased
// variance, as torch.nn.LayerNorm.   x [..., C], weight [C], bias [C] -> [..., C]
Tensor layer_norm(const Tensor& x, const Array& weight, const Array& bias, float eps,
                  const std::string& weight_name = "weight");

// The exact GELU of nn.GELU(): 0.5 * x * (1 + erf(x / sqrt(2))).
Tensor gelu(const Tensor& x);

// a + b, where b's shape without its leading 1s is a's trailing shape (a residual, or
// x + pos_embed with pos_embed [1, N, C] against x [B, N, C]). The result has a's labels.
Tensor add(const Tensor& a, const Tensor& b, const std::string& a_name = "a", const std::string& b_name = "b");

// x.expand(shape): axes of size 1 repeated to the given size (copied).
Tensor expand(const Tensor& x, const Shape& shape);

// torch.cat((a, b), dim=axis): every other axis must agree.
Tensor concat(const Tensor& a, const Tensor& b, std::size_t axis, const std::string& a_name = "a",
              const std::string& b_name = "b");

// What a stride-p convolution (kernel p) sees: the image cut into p x p patches, row by row, each
// flattened in the (c, kh, kw) order of the conv weight [D, C, p, p], so that the conv is
// linear(patchify(x, p), weight.reshape(D, C*p*p)).   x [B, C, H, W] -> [B, (H/p)*(W/p), C*p*p]
Tensor patchify(const Tensor& x, std::size_t p);

}  // namespace attnscope
