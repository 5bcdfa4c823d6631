// What the ViT tests share: the tolerance of their PyTorch comparisons and reading a JSON fixture.
#pragma once

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "tensor.hpp"

namespace attnscope::testing {

inline nlohmann::json read_json(const std::filesystem::path& p) {
    std::ifstream in(p);
    REQUIRE(in.good());
    return nlohmann::json::parse(in);
}

// The tolerance of the PyTorch comparison: |ours - torch| <= 1e-4 * max(|torch|, 0.01), i.e. 1e-4
// relative for values from 0.01 up, 1e-6 absolute below. Returns the worst ratio to that bound.
inline double worst_vs_torch(const Array& ours, const Array& torch) {
    REQUIRE(shape_of(ours) == shape_of(torch));
    double worst = 0;
    for (std::size_t i = 0; i < ours.size(); ++i) {
        const double t = torch.data()[i], d = std::fabs(double(ours.data()[i]) - t);
        worst = std::max(worst, d / (1e-4 * std::max(std::fabs(t), 0.01)));
    }
    return worst;
}

}  // namespace attnscope::testing
