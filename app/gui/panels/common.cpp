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

ui::Rect DefaultRect(const UiState& ui, ui::Panel p) {
    ui::LayoutInput in;
    in.display_w = ImGui::GetIO().DisplaySize.x;
    in.display_h = ImGui::GetIO().DisplaySize.y;
    in.menu_h = ImGui::GetFrameHeight();  // the main menu bar's height follows the font, so the UI scale
    in.scale = ui.display_scale * ui.ui_scale;
    return ui::default_rect(p, in);
}

bool TakeLayoutReset(UiState& ui, ui::Panel p) {
    std::uint64_t& placed = ui.layout_placed[static_cast<std::size_t>(p)];
    if (placed == ui.layout_generation) return false;
    placed = ui.layout_generation;
    return true;
}

void ResetLayout(UiState& ui) {
    ++ui.layout_generation;
    ui.set_status(tr("layout reset: every panel is back in its place"));
}

void PlaceWindow(UiState& ui, ui::Panel p) {
    const ImGuiCond cond = TakeLayoutReset(ui, p) ? ImGuiCond_Always : ImGuiCond_FirstUseEver;
    const ui::Rect r = DefaultRect(ui, p);
    ImGui::SetNextWindowPos(ImVec2(r.x, r.y), cond);
    ImGui::SetNextWindowSize(ImVec2(r.w, r.h), cond);
}

const StepDifference* FirstDivergence(const Trace& trace) {
    for (const Step& s : trace.steps)  // pipeline order
        if (const StepDifference* d = trace.difference(s.name); d && !d->ok) return d;
    return nullptr;
}

}  // namespace attnscope
