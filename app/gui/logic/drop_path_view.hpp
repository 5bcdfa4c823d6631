// Window-free logic of the Image panel's stochastic-depth view (timm's DropPath, core/vit/vit.hpp):
// the choice its controls stand for, and what one sample's branch did in one drop_path step.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "vit.hpp"

namespace attnscope {

// The drop-path run asked for: timm's drop_path_rate, model.train() or eval, the masks' seed.
struct VitDropPathChoice {
    float rate = 0.0f;
    bool training = false;
    std::uint64_t seed = 0;
    bool operator==(const VitDropPathChoice& o) const {
        return rate == o.rate && training == o.training && seed == o.seed;
    }
    bool operator!=(const VitDropPathChoice& o) const { return !(*this == o); }
    void apply(VitConfig& config) const {
        config.drop_path_rate = rate;
        config.training = training;
        config.seed = seed;
    }
};

}  // namespace attnscope

namespace attnscope::ui {

// One sample's branch in one drop_path step, for the table (English; the panel translates).
enum class BranchFate { identity, kept, dropped };
struct BranchCell {
    BranchFate fate = BranchFate::identity;
    float scale = 1.0f;  // the mask's value: 0 dropped, 1 / (1 - p) kept, 1 identity
    // d residual / d branch for this sample: the mask's value again (x + mask * f), so 0 when dropped.
    float grad_scale() const { return scale; }
};
BranchCell branch_cell(const DropPathRecord& r, std::size_t sample);

// "x1.33" for a kept branch's scale.
std::string scale_text(float scale);

}  // namespace attnscope::ui
