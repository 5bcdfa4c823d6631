// What the app does for a software GL renderer (Mesa's llvmpipe, softpipe), where every pixel ImGui
// fills costs CPU. The frame loop calls this around ImGui's frame, and a panel asks whether it may
// skip its work; the pieces behind it patch ImGui's draw data with the help of ImGui's internals,
// which nothing outside softgl/ includes for them. Each piece is on unless ATTNSCOPE_SOFTGL_OFF names
// it (softgl/pieces.hpp), so that --bench-gui measures what each buys (docs/benchmark.md):
//
//   backdrop   software GL: the clear paints the panels' backgrounds where nothing overlaps them
//              (softgl/backdrop_plan.hpp)
//   fringe     software GL: convex fills (rounded frames, circles) without their anti-aliased fringe
//   occlusion  a window wholly covered by another is not drawn (softgl/occlusion.hpp)
#pragma once

#include <cstddef>
#include <memory>

#include <imgui.h>

namespace attnscope {

class Backdrop;

class SoftGl {
public:
    // software: the GL renderer rasterizes on the CPU (logic/renderer.hpp: software_renderer).
    // backdrop: the colour between windows.
    SoftGl(bool software, ImVec4 backdrop);
    ~SoftGl();
    SoftGl(const SoftGl&) = delete;
    SoftGl& operator=(const SoftGl&) = delete;

    // The style's part: convex fills without their fringe.
    void adjust_style(ImGuiStyle& style) const;

    void begin_frame();    // right after ImGui::NewFrame()
    void before_render();  // right before ImGui::Render()
    // Right after ImGui::Render(): drops the covered windows' draw lists, adds the backdrop's fills,
    // and returns the colour to clear the framebuffer with. draw_data then points at this object's
    // list of draw lists until the next call.
    ImVec4 after_render(ImDrawData* draw_data);
    // After after_render(): a window skipped its work this frame (SkipCoveredWindow) but is no longer
    // covered (the window in front was closed or moved), so one more frame must be drawn.
    bool skipped_window_uncovered();

    // The windows whose background the last frame left to the clear (--bench-gui reports it).
    std::size_t painted_by_clear() const;

private:
    bool software_;
    std::unique_ptr<Backdrop> backdrop_;
};

// Inside a panel's Begin()/End(): the window was completely covered at the end of the last frame.
// The panel may then skip its work (the Heads grid its slices and texture uploads: nothing of it is
// on screen); the call notes that it did.
bool SkipCoveredWindow();

}  // namespace attnscope
