// A random number generator that gives the same numbers on every machine and compiler.
//
// std::mt19937_64's output is fixed by the C++ standard; the distributions in <random> are not,
// so uniform and normal variates are derived here by hand.
#pragma once

#include <cstdint>
#include <random>

namespace attnscope {

class Rng {
public:
    // stream separates independent uses of one seed (input, each weight, each dropout mask).
    Rng(std::uint64_t seed, std::uint64_t stream);

    float uniform();                       // [0, 1), 24 random bits
    float uniform(float low, float high);  // [low, high)
    float normal();                        // N(0, 1), Box-Muller

private:
    std::mt19937_64 engine_;
    bool has_spare_ = false;
    float spare_ = 0.0f;
};

}  // namespace attnscope
