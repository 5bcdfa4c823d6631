#include "random.hpp"

#include <cmath>

namespace attnscope {

namespace {
// splitmix64 finaliser: spreads (seed, stream) over the whole 64-bit state space.
std::uint64_t mix(std::uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}
}  // namespace

Rng::Rng(std::uint64_t seed, std::uint64_t stream) : engine_(mix(mix(seed) ^ (stream * 0xD1B54A32D192ED03ull))) {}

float Rng::uniform() { return static_cast<float>(engine_() >> 40) * (1.0f / 16777216.0f); }

float Rng::uniform(float low, float high) { return low + (high - low) * uniform(); }

float Rng::normal() {
    if (has_spare_) {
        has_spare_ = false;
        return spare_;
    }
    // u1 in (0, 1] so that log(u1) is finite.
    const double u1 = (static_cast<double>(engine_() >> 11) + 1.0) * (1.0 / 9007199254740992.0);
    const double u2 = static_cast<double>(engine_() >> 11) * (1.0 / 9007199254740992.0);
    const double r = std::sqrt(-2.0 * std::log(u1));
    const double theta = 6.283185307179586 * u2;
    spare_ = static_cast<float>(r * std::sin(theta));
    has_spare_ = true;
    return static_cast<float>(r * std::cos(theta));
}

}  // namespace attnscope
