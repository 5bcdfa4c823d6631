// Why a ViT needs position embeddings: the same model on a picture and on the picture with its
// patches shuffled, with and without the position embeddings.
//
// Self-attention is permutation-equivariant: it compares every token with every token, and nothing
// in q @ k.transpose(-2, -1), softmax or attn @ v knows where a token came from. LayerNorm, the MLP
// and the patch embedding act on each token alone. So without position embeddings, shuffling the
// patches shuffles every patch token's row and column of every attention map the same way and
// leaves the class token (and the prediction) unchanged, up to the float rounding of sums taken in
// another order. With them, each patch is added the embedding of the place it lands on, and the
// model sees a different picture.
//
// The permutation is a Fisher-Yates shuffle driven by splitmix64, simple enough to rewrite in a few
// lines of Python (tools/make_position_fixtures.py does):
//
//     state = seed
//     def next():                       # splitmix64, all arithmetic mod 2^64
//         state += 0x9E3779B97F4A7C15
//         z = state
//         z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
//         z = (z ^ (z >> 27)) * 0x94D049BB133111EB
//         return z ^ (z >> 31)
//     order = list(range(P))
//     for i in range(P - 1, 0, -1):
//         j = next() % (i + 1)
//         order[i], order[j] = order[j], order[i]
//
// Shuffled patch i (row-major on the grid) shows original patch order[i]: in PyTorch
// `x_shuffled = patches(x)[:, order]` before the patch embedding.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tensor.hpp"
#include "vit.hpp"

namespace attnscope {

// The permutation of P patches for `seed` (the generator above): order[i] is the original patch
// that shuffled patch i shows.
std::vector<std::size_t> patch_permutation(std::size_t patches, std::uint64_t seed);

// The picture with its p x p patches moved: shuffled patch i is original patch order[i].
//   pixels [B, 3, H, W] -> [B, 3, H, W]; order holds each of the (H/p)(W/p) patches once.
Tensor shuffle_patches(const Tensor& pixels, std::size_t patch, const std::vector<std::size_t>& order);

// The model with its position embeddings switched off: pos_embed set to zeros (in PyTorch
// `model.pos_embed.zero_()`), so `x = x + self.pos_embed` adds nothing to any token.
VitModel without_pos_embed(VitModel model);

// How far the shuffled run is from the original one once the permutation is undone.
struct ShuffleDifference {
    // max over blocks, heads, query t and key u of |attn_shuffled[t, u] - attn[o(t), o(u)]|, where
    // o keeps the class (and distillation) token and maps patch token i to order[i]
    float attn = 0.0f;
    std::size_t attn_block = 0;  // the block where that maximum is
    float cls = 0.0f;            // max |norm_shuffled[:, 0] - norm[:, 0]|: the class token's output
    float probs = 0.0f;          // max |probs_shuffled - probs| (0 without a head)
};

// Compares the runs of one model on a picture (`original`) and on shuffle_patches(picture, order).
ShuffleDifference shuffle_difference(const VitTrace& original, const VitTrace& shuffled,
                                     const std::vector<std::size_t>& order);

// The experiment: one model, with or without its position embeddings, on the picture and on the
// picture with its patches shuffled by `seed`.
struct PositionExperiment {
    bool pos_embed = true;           // the model's position embeddings are added
    std::uint64_t seed = 0;          // patch_permutation's seed
    std::vector<std::size_t> order;  // patch_permutation(P, seed)
    VitTrace shuffled;               // the model on shuffle_patches(pixels, p, order)
    Tensor shuffled_pixels;          // [1, 3, H, W], normalized
    ShuffleDifference difference;    // against the run on the picture itself
};

// Runs `model` (already without_pos_embed when pos_embed is false) on the shuffled pixels and
// compares with `original`, its run on `pixels`.
PositionExperiment run_shuffled(const VitModel& model, const Tensor& pixels, const VitTrace& original, bool pos_embed,
                                std::uint64_t seed, const RunHooks& hooks = {});

// The held-out accuracy of a model with and without position embeddings, on the pictures and on
// their shuffled patches (one permutation, `seed`, for every picture), as PyTorch measured it:
// `<model without extension>.positions.json` beside the model (tools/make_position_fixtures.py).
struct PositionAccuracy {
    std::size_t images = 0;
    std::uint64_t seed = 0;
    // correct predictions: [pos_embed on, off] x [as is, shuffled]
    std::size_t correct[2][2] = {{0, 0}, {0, 0}};
    double true_class_prob[2][2] = {{0, 0}, {0, 0}};  // the mean probability of the true class, same layout
    std::string source;                               // the file it was read from
};
// nullopt when the model has no such file; FileError("path: ...") when it is not readable.
std::optional<PositionAccuracy> read_position_accuracy(const std::string& model_path);

}  // namespace attnscope
