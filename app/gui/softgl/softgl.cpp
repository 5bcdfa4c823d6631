#include "softgl/softgl.hpp"

#include "softgl/backdrop.hpp"
#include "softgl/occlusion.hpp"
#include "softgl/pieces.hpp"

namespace attnscope {

SoftGl::SoftGl(bool software, ImVec4 backdrop)
    : software_(software), backdrop_(std::make_unique<Backdrop>(backdrop, software)) {}

SoftGl::~SoftGl() = default;

void SoftGl::adjust_style(ImGuiStyle& style) const {
    style.AntiAliasedFill = !(software_ && softgl_piece_on(SoftGlPiece::fringe));
}

void SoftGl::begin_frame() { backdrop_->begin_frame(); }

void SoftGl::before_render() { backdrop_->end_frame(); }

ImVec4 SoftGl::after_render(ImDrawData* draw_data) {
    if (softgl_piece_on(SoftGlPiece::occlusion)) DropCoveredWindows(draw_data);  // e.g. Heads under Follow
    return backdrop_->arrange(draw_data);
}

bool SoftGl::skipped_window_uncovered() { return SkippedWindowUncovered(); }

std::size_t SoftGl::painted_by_clear() const { return backdrop_->painted_by_clear(); }

}  // namespace attnscope
