// --bench-gui: the app's own timings, headless (issue 8). The frame loop calls before_frame()
// ahead of drawing and after_frame() once the frame is finished on the GL side (glFinish), until
// after_frame() returns false; result() is one JSON line for bench/run_all.sh.
//
// Frames: the first frame (timed from process start), a few to settle, then step switches (the
// selected step moves on, so the inspector and heads grid upload new textures), head switches
// (the inspector opens the next head of attn), and idle frames (nothing changes). On the flash
// path also the Attention map panel: pans of an exact view (tiles computed in that frame) and
// head switches at overview zoom (the whole overview of the new head computed in that frame).
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
    bool after_frame(std::size_t uploads);  // false when every figure is measured
    std::string result() const;

private:
    enum class Phase { First, Settle, Steps, Heads, Idle, MapPans, MapHeads, Done };
    Phase phase_ = Phase::First;
    int frame_ = 0;  // within the phase
    bool have_trace_ = false;
    bool flash_ = false;  // the trace has the flash path's map
    double wall_start_ = 0.0, cpu_start_ = 0.0, process_cpu_start_ = 0.0;
    double first_frame_ms_ = 0.0;
    std::size_t uploads_before_ = 0, switch_uploads_ = 0;
    std::vector<double> step_ms_, head_ms_, idle_ms_, idle_cpu_ms_, idle_process_cpu_ms_;
    std::vector<double> map_pan_ms_, map_head_ms_;
    std::vector<double> map_pan_panel_ms_, map_head_panel_ms_;  // the panel's own share (read a frame later)
    Phase last_phase_ = Phase::First;
};

}  // namespace attnscope
