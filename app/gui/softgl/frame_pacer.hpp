// Draws a frame only when something can have changed. Drawing every frame would run as fast as
// software GL can (it ignores vsync) even with nobody touching the app, and each frame costs
// milliseconds of CPU for ImGui and llvmpipe. The pacer waits for input
// (glfwWaitEventsTimeout) when nothing animates, and draws:
//   - for a few frames after any input event (mouse, keys, scroll, resize, expose, focus), so
//     ImGui settles (hover, popups, auto-sized windows, requests the panels leave for the loop);
//   - continuously while something moves: playback, the axis animation after a step change, a
//     worker run (progress bar), a mouse button or key held, an active widget (text cursor, drag),
//     the pipeline list scrolling to the selected step, a panel that says it animates (ui.frame.animating);
//   - once at each deadline (the status line disappearing, ImGui saving the window layout).
// --screenshot and --bench-gui never wait: every frame they ask for is drawn.
#pragma once

#include <cstdint>

struct GLFWwindow;

namespace attnscope {

struct UiState;

class FramePacer {
public:
    // Installs the input callbacks; call before ImGui_ImplGlfw_InitForOpenGL (which chains to them).
    void install(GLFWwindow* window);
    // Blocks until input arrives or a frame is due; returns true when the frame must be drawn.
    // Times are seconds on the clock of FrameState::now.
    bool wait(double now);
    // After a frame: what the frame left moving, its deadlines, and whether it changed the trace or
    // the selection or a run started or ended (then a few more frames follow, as after input).
    void frame_done(const UiState& ui);
    // Draw the next frame whatever happens (a request from outside the input callbacks: a file
    // dropped on the window, a signal).
    void wake() { settle_frames_ = kSettleFrames; }
    long long frames_drawn() const { return drawn_; }
    long long waits() const { return waits_; }

private:
    static constexpr int kSettleFrames = 3;
    static constexpr double kMaxWait = 0.25;  // seconds: SIGINT/SIGTERM are seen within this
    int settle_frames_ = kSettleFrames;
    bool moving_ = true;
    double deadline_ = 0.0;  // 0: none
    unsigned long long seen_events_ = 0;
    std::uint64_t seen_generation_ = 0;
    int seen_step_ = -1;
    bool seen_busy_ = false;
    long long drawn_ = 0, waits_ = 0;
};

}  // namespace attnscope
