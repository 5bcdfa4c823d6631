// Window-free logic of the Image panel's position experiment (core/vit/positions.hpp): the choice
// its controls stand for, the recorded attention matrices as pictures (the shuffled run's also with
// its tokens put back in the picture's order), what happened to the prediction, and the held-out
// accuracy table.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "image.hpp"
#include "positions.hpp"
#include "tensor.hpp"

namespace attnscope {

// The position experiment asked for: the checkpoint with or without its position embeddings and,
// with a seed, also on the picture with its patches shuffled.
struct VitPositionChoice {
    bool pos_embed = true;
    std::optional<std::uint64_t> shuffle_seed;
    bool operator==(const VitPositionChoice& o) const {
        return pos_embed == o.pos_embed && shuffle_seed == o.shuffle_seed;
    }
    bool operator!=(const VitPositionChoice& o) const { return !(*this == o); }
};

}  // namespace attnscope

namespace attnscope::ui {

// The choice of the controls: the seed only counts while "shuffle patches" is ticked.
VitPositionChoice position_choice(bool pos_embed, bool shuffle, std::uint64_t seed);

// The shuffled run's matrix with its tokens put back where they are in the picture: the weight of
// shuffled query t on shuffled key u goes to (o(t), o(u)), o keeping the first `prefix` tokens
// (class token) and sending patch token prefix + i to prefix + order[i].   [N, N] -> [N, N]
// Without position embeddings this is the unshuffled run's matrix again.
Array unshuffle_tokens(const Array& matrix, const std::vector<std::size_t>& order, std::size_t prefix);

// An attention matrix [N, N'] as a picture, one block of `scale` x `scale` pixels per weight: the
// sequential colormap over [0, max of the matrix] (dark = 0, yellow = the largest weight).
RgbImage attention_matrix_image(const Array& matrix, std::size_t scale);

// The most probable class of image 0 of probs [B, K] as is and shuffled.
struct PredictionChange {
    std::size_t as_is = 0, shuffled = 0;  // class indices
    float as_is_prob = 0.0f, shuffled_prob = 0.0f;
    bool changed() const { return as_is != shuffled; }
};
PredictionChange prediction_change(const Array& probs, const Array& shuffled_probs);

// What the held-out table says about the model. A model whose answer does not depend on where
// things are (the demo: the kind of the red shape) keeps its accuracy without position embeddings
// and on shuffled patches; one that must know where (the quadrant of the red shape) loses it. The
// line is drawn at a tenth of the images.
enum class PositionLesson { unused, needed };
PositionLesson position_lesson(const PositionAccuracy& table);

// "160/160 = 100.0%"
std::string accuracy_text(std::size_t correct, std::size_t images);

// A difference for people: "9.5e-07", "0.178", "0".
std::string difference_text(float value);

}  // namespace attnscope::ui
