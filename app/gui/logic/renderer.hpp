// What the GL renderer costs the app thread. On a software rasterizer (Mesa's llvmpipe under a VM
// or a remote desktop) every triangle is set up on the CPU, much of it on the thread that draws; the
// anti-aliased fringe of ImGui's rounded frames and filled circles is about a third of the triangles
// of a frame there. A GPU draws them for nothing.
#pragma once

#include <string_view>

namespace attnscope::ui {

// True when GL_RENDERER names a software rasterizer (llvmpipe, softpipe, swrast, Windows' GDI
// Generic, Apple's Software Renderer); case-insensitive.
bool software_renderer(std::string_view gl_renderer);

}  // namespace attnscope::ui
