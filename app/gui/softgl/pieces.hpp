// The software-GL work-arounds that change what a frame draws (softgl.hpp lists them), as switches.
// Each piece is on unless ATTNSCOPE_SOFTGL_OFF names it (a comma-separated list: backdrop, fringe,
// occlusion), so that --bench-gui can measure what each one buys under llvmpipe
// (docs/benchmark.md). Screenshots are the same with any piece off, but for fringe's anti-aliased
// edges.
#pragma once

#include <string_view>

namespace attnscope {

enum class SoftGlPiece { backdrop, fringe, occlusion };

bool softgl_piece_on(SoftGlPiece piece);

// For tests: the pieces a value of ATTNSCOPE_SOFTGL_OFF turns off, as softgl_piece_on reads it.
bool softgl_piece_on(SoftGlPiece piece, std::string_view off_list);

}  // namespace attnscope
