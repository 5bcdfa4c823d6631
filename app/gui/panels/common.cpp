#include <imgui.h>

#include <algorithm>

#include "panels/panels.hpp"

namespace attnscope {

const Step* SelectedStep(const Trace& trace, const UiState& ui) {
    if (trace.steps.empty()) return nullptr;
    if (const Step* s = trace.find(ui.selected_step)) return s;
    const int i = std::clamp(ui.stepper.selected, 0, static_cast<int>(trace.steps.size()) - 1);
    return &trace.steps[static_cast<std::size_t>(i)];
}

void SelectStep(const Trace& trace, UiState& ui, const std::string& name) {
    for (std::size_t i = 0; i < trace.steps.size(); ++i)
        if (trace.steps[i].name == name) {
            ui.stepper.set_count(static_cast<int>(trace.steps.size()));
            ui.stepper.select(static_cast<int>(i));
            return;
        }
}

InspectorView& ViewFor(UiState& ui, const Step& step) {
    InspectorView& v = ui.views[step.name];
    const Shape shape = step.shape();
    if (!v.has_spec) {
        v.spec = ui::default_slice(shape);
        v.has_spec = true;
    }
    v.spec = ui::normalized(v.spec, shape);
    return v;
}

void PlaceWindow(float x, float y, float w, float h) {
    const ImVec2 d = ImGui::GetIO().DisplaySize;
    // The design's rows start under its 22 px menu bar; they are mapped under the real one, whose
    // height follows the font (and the UI scale), so no title bar covers the menu's text.
    constexpr float kDesignMenu = 22.0f;
    const float menu = ImGui::GetFrameHeight();
    const float sx = d.x / 1600.0f, sy = (d.y - menu) / (1000.0f - kDesignMenu);
    ImGui::SetNextWindowPos(ImVec2(x * sx, menu + (y - kDesignMenu) * sy), ImGuiCond_FirstUseEver);
    ImGui::SetNextWindowSize(ImVec2(w * sx, h * sy), ImGuiCond_FirstUseEver);
}

const StepDifference* FirstDivergence(const Trace& trace) {
    for (const Step& s : trace.steps)  // pipeline order
        if (const StepDifference* d = trace.difference(s.name); d && !d->ok) return d;
    return nullptr;
}

}  // namespace attnscope
