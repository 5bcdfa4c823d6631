#include "softgl/frame_pacer.hpp"

#define GLFW_INCLUDE_NONE
#include <GLFW/glfw3.h>
#include <imgui.h>
#include <imgui_internal.h>

#include <algorithm>
#include <atomic>

#include "ui_state.hpp"

namespace attnscope {

namespace {

std::atomic<unsigned long long> g_events{0};  // input events seen by the callbacks below

void Count() { ++g_events; }
void OnCursorPos(GLFWwindow*, double, double) { Count(); }
void OnCursorEnter(GLFWwindow*, int) { Count(); }
void OnMouseButton(GLFWwindow*, int, int, int) { Count(); }
void OnScroll(GLFWwindow*, double, double) { Count(); }
void OnKey(GLFWwindow*, int, int, int, int) { Count(); }
void OnChar(GLFWwindow*, unsigned int) { Count(); }
void OnFocus(GLFWwindow*, int) { Count(); }
void OnSize(GLFWwindow*, int, int) { Count(); }
void OnRefresh(GLFWwindow*) { Count(); }  // exposed: the window needs its picture again
void OnIconify(GLFWwindow*, int) { Count(); }
void OnScale(GLFWwindow*, float, float) { Count(); }

// Something on screen moves by itself, or ImGui tracks a held button or key.
bool Moving(const UiState& ui, double now) {
    const ImGuiIO& io = ImGui::GetIO();
    bool held = ImGui::IsAnyItemActive();
    for (bool down : io.MouseDown) held = held || down;
    for (bool down : io.KeysDown) held = held || down;
    const bool step_animation = ui.frame.animate && now - ui.selection.changed_at < 0.8;  // the shape view's 0.7 s
    const bool working = ui.engine.busy || ui.vit.loading || !ui.file.loading.empty();
    return held || step_animation || working || ui.selection.stepper.playing || ui.frame.animating ||
           ui.selection.scroll_into_view;
}

}  // namespace

void FramePacer::install(GLFWwindow* window) {
    glfwSetCursorPosCallback(window, OnCursorPos);
    glfwSetCursorEnterCallback(window, OnCursorEnter);
    glfwSetMouseButtonCallback(window, OnMouseButton);
    glfwSetScrollCallback(window, OnScroll);
    glfwSetKeyCallback(window, OnKey);
    glfwSetCharCallback(window, OnChar);
    glfwSetWindowFocusCallback(window, OnFocus);
    glfwSetFramebufferSizeCallback(window, OnSize);
    glfwSetWindowRefreshCallback(window, OnRefresh);
    glfwSetWindowIconifyCallback(window, OnIconify);
    glfwSetWindowContentScaleCallback(window, OnScale);
}

bool FramePacer::wait(double now) {
    const double started = glfwGetTime();
    const bool due = moving_ || settle_frames_ > 0 || (deadline_ > 0.0 && now >= deadline_);
    if (due) {
        glfwPollEvents();
    } else {
        const double until = deadline_ > 0.0 ? std::min(deadline_ - now, kMaxWait) : kMaxWait;
        ++waits_;
        glfwWaitEventsTimeout(std::max(until, 0.001));
    }
    const unsigned long long events = g_events.load();
    if (events != seen_events_) {
        seen_events_ = events;
        settle_frames_ = kSettleFrames;
    }
    const double t = now + (glfwGetTime() - started);
    const bool draw = due || settle_frames_ > 0 || (deadline_ > 0.0 && t >= deadline_);
    if (draw) ++drawn_;
    return draw;
}

void FramePacer::frame_done(const UiState& ui) {
    const double now = ui.frame.now;
    if (settle_frames_ > 0) --settle_frames_;
    const std::uint64_t generation = ui.frame.trace_generation + ui.vit.generation;
    // A run that ended without a new trace (an error, the head-count question) opens a modal, which
    // ImGui shows a frame later: the end of any run settles like a new trace.
    const bool busy = ui.engine.busy || ui.vit.loading;
    if (generation != seen_generation_ || ui.selection.stepper.selected != seen_step_ || busy != seen_busy_) {
        seen_generation_ = generation;
        seen_step_ = ui.selection.stepper.selected;
        seen_busy_ = busy;
        settle_frames_ = kSettleFrames;
    }
    moving_ = Moving(ui, now);
    deadline_ = 0.0;
    auto at = [&](double t) {
        if (t > now) deadline_ = deadline_ > 0.0 ? std::min(deadline_, t) : t;
    };
    if (!ui.status.text.empty()) at(ui.status.time + 8.0 + 0.01);                        // menus.cpp shows it for 8 s
    if (GImGui->SettingsDirtyTimer > 0.0f) at(now + GImGui->SettingsDirtyTimer + 0.01);  // imgui.ini
}

}  // namespace attnscope
