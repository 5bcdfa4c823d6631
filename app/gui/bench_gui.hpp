// --bench-gui: the app's own timings, headless. The frame loop calls before_frame()
// ahead of drawing, before_finish() once the frame's GL calls are issued (ImGui built, textures
// uploaded, draw lists submitted) and after_frame() once the frame is finished on the GL side
// (glFinish), until after_frame() returns false; result() is one JSON line for bench/run_all.sh.
//
// Frames: the first frame (timed from process start), a few to settle, then step switches (the
// selected step moves on, so the inspector and heads grid upload new textures), head switches
// (the inspector opens the next head of attn), and idle frames (nothing changes). Every idle frame
// is drawn in full ("idle_frame": "drawn"): the bench never takes the live app's shortcut of not
// drawing a frame in which nothing changed. On the flash path also the Attention map panel: pans of
// an exact view (tiles computed in that frame) and head switches at overview zoom (the whole
// overview of the new head computed in that frame).
//
// Per frame: wall time (before_frame to after glFinish), the app thread's CPU up to glFinish
// ("cpu": ImGui, panels, texture uploads, the GL calls including llvmpipe's vertex work on this
// thread), the wait in glFinish ("finish": llvmpipe's rasterizer threads finishing the frame) and
// the whole process's CPU. ATTNSCOPE_BENCH_GUI_FRAMES=N runs N switches of each kind and N idle
// frames instead of 16 and 30, S,I runs S and I (for profilers).
#pragma once

#include <string>
#include <vector>

#include "trace.hpp"
#include "ui_state.hpp"

namespace attnscope {

class GuiBench {
public:
    GuiBench();
    void before_frame(const Trace& trace, UiState& ui);
    // The frame's GL calls are issued; backgrounds_by_clear: windows whose background the clear painted.
    void before_finish(int vertices, int draw_commands, int backgrounds_by_clear);
    bool after_frame(std::size_t uploads);  // false when every figure is measured
    std::string result() const;

private:
    enum class Phase { First, Settle, Steps, Heads, Idle, MapPans, MapHeads, Done };
    struct Samples {
        std::vector<double> wall_ms, cpu_ms, finish_ms, thread_cpu_ms, process_cpu_ms;
    };
    Phase phase_ = Phase::First;
    int frame_ = 0;  // within the phase
    int switches_ = 16, idle_frames_ = 30;
    bool have_trace_ = false;
    bool flash_ = false;  // the trace has the flash path's map
    double wall_start_ = 0.0, cpu_start_ = 0.0, process_cpu_start_ = 0.0;
    double wall_issued_ = 0.0, cpu_issued_ = 0.0;
    int vertices_ = 0, draw_commands_ = 0, backgrounds_by_clear_ = 0;
    double first_frame_ms_ = 0.0, first_frame_cpu_ms_ = 0.0;
    std::size_t uploads_before_ = 0, switch_uploads_ = 0;
    Samples steps_, heads_, idle_;
    int idle_vertices_ = 0, idle_draw_commands_ = 0, idle_backgrounds_by_clear_ = 0;
    std::vector<double> map_pan_ms_, map_head_ms_;
    std::vector<double> map_pan_panel_ms_, map_head_panel_ms_;  // the panel's own share (read a frame later)
    Phase last_phase_ = Phase::First;
};

}  // namespace attnscope
