// The op set of the attention pipeline. Each op checks its operands' shapes and throws a
// ShapeError naming the op, both shapes and the axis that disagrees; each returns an evaluated
// row-major Tensor whose axis labels follow the op (permute permutes them, and so on).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "packed_linear.hpp"
#include "random.hpp"
#include "tensor.hpp"

namespace attnscope {

// y = x @ weight^T + bias over the last axis.   x [..., in], weight [out, in], bias [out] -> [..., out]
// With `packed` (pack_weight(weight), core/kernels/packed_linear) and at most kPackedLinearMaxRows rows, the
// AVX-512 kernel computes it; else OpenBLAS.
Tensor linear(const Tensor& x, const Array& weight, const Array* bias, const std::string& out_axis,
              const std::string& weight_name = "weight", const PackedWeight* packed = nullptr);
// Backward of linear: grad_x = grad_y @ weight, grad_weight = grad_y^T @ x (summed over every
// leading axis), grad_bias = grad_y summed over every leading axis.
//   grad_y [..., out] -> grad_x [..., in], grad_weight [out, in], grad_bias [out]
struct LinearGrads {
    Tensor x;
    Array weight;
    Array bias;  // shape [0] when has_bias is false
};
LinearGrads linear_backward(const Tensor& x, const Array& weight, bool has_bias, const Tensor& grad_y);

// Same values in row-major order, new shape and labels (the element counts must agree).
Tensor reshape(const Tensor& x, const Shape& shape, const Axes& axes);
// Backward of reshape: the gradient gets x's shape and labels back (the same row-major values).
Tensor reshape_backward(const Tensor& grad_y, const Tensor& x);

// out.shape[i] = x.shape[dims[i]]
Tensor permute(const Tensor& x, const std::vector<std::size_t>& dims);
// Backward of permute: the inverse permutation (grad_x.shape[dims[i]] = grad_y.shape[i]).
Tensor permute_backward(const Tensor& grad_y, const std::vector<std::size_t>& dims);

// x[..., index, ...] along axis: one result of torch.unbind(axis).
Tensor select(const Tensor& x, std::size_t axis, std::size_t index);
// Backward of select: a tensor of x's shape, zero except the selected slice, which is grad_y.
// unbind's three outputs give three of these, summed.
Tensor select_backward(const Tensor& grad_y, const Tensor& x, std::size_t axis, std::size_t index);

// Swaps two axes.
Tensor transpose(const Tensor& x, std::size_t dim0, std::size_t dim1);
// Backward of transpose: the same swap again.
Tensor transpose_backward(const Tensor& grad_y, std::size_t dim0, std::size_t dim1);

// Batched matrix product.   a [..., n, k] @ b [..., k, m] -> [..., n, m] (equal batch axes)
// The view form reads strided operands in place, as PyTorch's matmul reads q and k.transpose(-2, -1).
Tensor matmul(const TensorView& a, const TensorView& b, const Axes& out_axes, const std::string& a_name,
              const std::string& b_name);
Tensor matmul(const Tensor& a, const Tensor& b, const Axes& out_axes, const std::string& a_name = "a",
              const std::string& b_name = "b");
// Backward of matmul: grad_a = grad_y @ b^T, grad_b = a^T @ grad_y (per batch).
//   grad_y [..., n, m] -> grad_a [..., n, k] (a's labels), grad_b [..., k, m] (b's labels)
struct MatmulGrads {
    Tensor a, b;
};
MatmulGrads matmul_backward(const Tensor& a, const Tensor& b, const Tensor& grad_y);

// x * s
Tensor scale(const Tensor& x, float s);
// Backward of scale: grad_y * s.
Tensor scale_backward(const Tensor& grad_y, float s);

// Softmax over the last axis; subtracts each row's max first, so large inputs do not overflow.
Tensor softmax_last(const Tensor& x);
// Backward of softmax from its output y: grad_x = y * (grad_y - sum_j(grad_y * y)) per row.
// A saturated row (y one-hot) gives grad_x = 0 whatever grad_y is: the vanishing gradient.
Tensor softmax_last_backward(const Tensor& y, const Tensor& grad_y);

// attn.masked_fill(keep == 0, -inf): hidden (query, key) pairs get -inf so softmax gives them 0.
// x [B, h, N, N'], keep [B, N, N'] (1 keep, 0 hide; the same for every head) -> [B, h, N, N']
Tensor mask_fill(const Tensor& x, const Array& keep);

// Inverted dropout: in training, each element is kept with probability 1 - p and scaled by
// 1 / (1 - p), zeroed otherwise; outside training, the identity.
Tensor dropout(const Tensor& x, float p, bool training, Rng& rng);
// Backward of dropout: the same mask times 1 / (1 - p). rng must start where the forward's did
// (Rng(seed, stream) constructed the same way): the mask is drawn again, element by element, in
// the same order, so it is exactly the forward's.
Tensor dropout_backward(const Tensor& grad_y, float p, bool training, Rng& rng);

// timm's DropPath (stochastic depth) mask: one draw per sample, dropped when u < p (as dropout),
// kept ones scaled by 1 / (1 - p). B uniforms are drawn whatever p is, so a sample's draw does not
// depend on the rate.   -> [B, 1, 1] of 0 and 1 / (1 - p)
Array drop_path_mask(std::size_t batch, float p, Rng& rng);
// x.div(keep_prob) * random_tensor: every sample's whole branch times its mask value.
// x [B, ...], mask [B, 1, 1] -> [B, ...]
Tensor drop_path(const Tensor& x, const Array& mask);
// Backward of drop_path: grad_y times the same mask; a dropped sample's branch gets exactly 0.
Tensor drop_path_backward(const Tensor& grad_y, const Array& mask);

// Sum over the last axis, accumulated in double.   x [..., n] -> [...]
Tensor sum_last(const Tensor& x);
// Backward of sum_last: grad_y repeated along a new last axis of size n.
Tensor sum_last_backward(const Tensor& grad_y, std::size_t n, const std::string& axis = "");

// ---- Vision Transformer ops -----------------------------------------------------------------

// LayerNorm over the last axis: (x - mean) / sqrt(var + eps) * weight + bias, with the biased
// variance, as torch.nn.LayerNorm.   x [..., C], weight [C], bias [C] -> [..., C]
Tensor layer_norm(const Tensor& x, const Array& weight, const Array& bias, float eps,
                  const std::string& weight_name = "weight");
// Backward of layer_norm (recomputes mean and 1/std from x).
struct LayerNormGrads {
    Tensor x;
    Array weight, bias;
};
LayerNormGrads layer_norm_backward(const Tensor& x, const Array& weight, float eps, const Tensor& grad_y);

// The exact GELU of nn.GELU(): 0.5 * x * (1 + erf(x / sqrt(2))).
Tensor gelu(const Tensor& x);
// Backward of gelu: grad_y * (Phi(x) + x * phi(x)).
Tensor gelu_backward(const Tensor& x, const Tensor& grad_y);

// a + b, where b's shape without its leading 1s is a's trailing shape (a residual, or
// x + pos_embed with pos_embed [1, N, C] against x [B, N, C]). The result has a's labels.
Tensor add(const Tensor& a, const Tensor& b, const std::string& a_name = "a", const std::string& b_name = "b");
// Backward of add: grad_a = grad_y; grad_b = grad_y summed over the leading repeats, in b's shape.
struct AddGrads {
    Tensor a, b;
};
AddGrads add_backward(const Tensor& b, const Tensor& grad_y);

// timm's LayerScale: x * gamma, one learned factor per channel.   x [..., C], gamma [C] -> [..., C]
Tensor layer_scale(const Tensor& x, const Array& gamma, const std::string& gamma_name = "gamma");
// Backward of layer_scale: grad_x = grad_y * gamma; grad_gamma = grad_y * x summed over all but C.
struct LayerScaleGrads {
    Tensor x;
    Array gamma;
};
LayerScaleGrads layer_scale_backward(const Tensor& x, const Array& gamma, const Tensor& grad_y);

// x.expand(shape): axes of size 1 repeated to the given size (copied).
Tensor expand(const Tensor& x, const Shape& shape);

// torch.cat((a, b), dim=axis): every other axis must agree.
Tensor concat(const Tensor& a, const Tensor& b, std::size_t axis, const std::string& a_name = "a",
              const std::string& b_name = "b");
// Backward of concat: grad_y cut back along axis, the first a_size slices a's, the rest b's.
//   grad_y [..., A + B', ...] -> grad_a [..., A, ...], grad_b [..., B', ...] (grad_y's labels)
struct ConcatGrads {
    Tensor a, b;
};
ConcatGrads concat_backward(const Tensor& grad_y, std::size_t axis, std::size_t a_size);

// What a stride-p convolution (kernel p) sees: the image cut into p x p patches, row by row, each
// flattened in the (c, kh, kw) order of the conv weight [D, C, p, p], so that the conv is
// linear(patchify(x, p), weight.reshape(D, C*p*p)).   x [B, C, H, W] -> [B, (H/p)*(W/p), C*p*p]
Tensor patchify(const Tensor& x, std::size_t p);
// Backward of patchify: every patch's gradient back on the pixels it was cut from (the patches do
// not overlap, so each pixel gets exactly one value).   grad_y [B, P, C*p*p] -> [B, C, H, W]
Tensor patchify_backward(const Tensor& grad_y, const Shape& x_shape, std::size_t p);

}  // namespace attnscope
