#include "logic/drop_path_view.hpp"

#include <cstdio>

namespace attnscope::ui {

BranchCell branch_cell(const DropPathRecord& r, std::size_t sample) {
    BranchCell c;
    if (!r.active || sample >= r.mask.size()) return c;
    c.scale = r.mask.data()[sample];
    c.fate = c.scale == 0.0f ? BranchFate::dropped : BranchFate::kept;
    return c;
}

std::string scale_text(float scale) {
    char text[32];
    std::snprintf(text, sizeof text, "x%.3g", static_cast<double>(scale));
    return text;
}

}  // namespace attnscope::ui
