// Window backgrounds painted by the clear on a software rasterizer (softgl/backdrop_plan.hpp says why and
// how). Between NewFrame() and Render() the windows are begun with a transparent WindowBg, so ImGui
// fills none; arrange() then adds what the clear does not paint to the frame's draw data, as draw
// lists of its own. A GPU keeps ImGui's backgrounds (enabled = false), as does
// ATTNSCOPE_SOFTGL_OFF=backdrop (the pixel test compares the two).
#pragma once

#include <memory>
#include <unordered_map>
#include <vector>

#include <imgui.h>

struct ImGuiWindow;

namespace attnscope {

class Backdrop {
public:
    // backdrop: the colour between windows. enabled: a software renderer.
    Backdrop(ImVec4 backdrop, bool enabled);

    void begin_frame();  // right after ImGui::NewFrame()
    void end_frame();    // right before ImGui::Render()

    // After ImGui::Render() and DropCoveredWindows(): adds the fills to draw_data and returns the
    // colour to clear the framebuffer with. draw_data then points at this object's list of draw
    // lists until the next call.
    ImVec4 arrange(ImDrawData* draw_data);

    // The windows whose background the last arrange() left to the clear (--bench-gui reports it).
    std::size_t painted_by_clear() const { return painted_by_clear_; }

private:
    ImDrawList* fresh_list();  // an empty draw list of this frame (font texture, full-screen clip)

    ImVec4 backdrop_;
    bool enabled_;
    bool began_ = false;
    std::size_t used_ = 0;  // draw lists of the pool in this frame
    std::size_t painted_by_clear_ = 0;
    std::vector<std::unique_ptr<ImDrawList>> pool_;
    std::vector<ImDrawList*> lists_;
    std::unordered_map<const ImDrawList*, const ImGuiWindow*> owner_;  // this frame's lists' windows
};

}  // namespace attnscope
