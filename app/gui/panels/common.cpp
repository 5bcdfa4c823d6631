#include <imgui.h>

#include <algorithm>

#include "layout_report.hpp"
#include "logic/display_fit.hpp"
#include "panels/panels.hpp"

namespace attnscope {

const Step* SelectedStep(const Trace& trace, const UiState& ui) {
    if (trace.steps.empty()) return nullptr;
    if (const Step* s = trace.find(ui.selection.step)) return s;
    const int i = std::clamp(ui.selection.stepper.selected, 0, static_cast<int>(trace.steps.size()) - 1);
    return &trace.steps[static_cast<std::size_t>(i)];
}

void TogglePlay(UiState& ui) {
    if (!ui.selection.stepper.playing && ui.selection.start_hint) ui.selection.stepper.select(0);
    ui.selection.stepper.key(ui::StepKey::TogglePlay);
}

void MarkItem(UiState& ui, const std::string& name) {
    if (!ui.frame.record_items) return;
    const ImVec2 a = ImGui::GetItemRectMin(), b = ImGui::GetItemRectMax();
    ui.frame.item_rects[name] = ui::Rect{a.x, a.y, b.x - a.x, b.y - a.y};
}

bool BeginMarkedMenu(UiState& ui, const char* label, const char* id, bool enabled) {
    if (ui.frame.record_items) {  // the label drawn next, as BeginMenu lays it out in a menu bar
        const ImVec2 at = ImGui::GetCursorScreenPos();
        ui.frame.item_rects[std::string("menu:") + id] = ui::Rect{
            at.x, at.y, ImGui::CalcTextSize(label).x + ImGui::GetStyle().ItemSpacing.x, ImGui::GetFrameHeight()};
    }
    return ImGui::BeginMenu(label, enabled);
}

InspectorView& ViewFor(UiState& ui, const Step& step) {
    InspectorView& v = ui.inspector.views[step.name];
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
    in.scale = ui.scale.display * ui.scale.zoom;
    in.vit = ui.layout.vit;
    in.divergence = ui.layout.divergence;
    return ui::default_rect(p, in);
}

bool TakeLayoutReset(UiState& ui, ui::Panel p) {
    std::uint64_t& placed = ui.layout.placed[static_cast<std::size_t>(p)];
    if (placed == ui.layout.generation) return false;
    placed = ui.layout.generation;
    return true;
}

void ResetLayout(UiState& ui) {
    ++ui.layout.generation;
    ui.set_status(_("layout reset: every panel is back in its place"));
}

void PlaceWindow(UiState& ui, ui::Panel p) {
    const std::size_t i = static_cast<std::size_t>(p);
    const bool reset = TakeLayoutReset(ui, p);
    const ui::Rect r = DefaultRect(ui, p);
    if (reset || ui.layout.asked[i].w <= 0.0f) ui.layout.asked[i] = r;  // the first time: unless imgui.ini has it
    if (!reset && ui.layout.kept_inside[i] != ui.layout.keep_inside_generation) {
        // The user's arrangement on a changed window: the panel as it is, moved inside the display
        // under the menu bar. Checked once its window exists (a saved one is made by its first Begin).
        if (const std::optional<PanelWindow> w = FindPanelWindow(p)) {
            ui.layout.kept_inside[i] = ui.layout.keep_inside_generation;
            const ImVec2 d = ImGui::GetIO().DisplaySize;
            const float top = ImGui::GetFrameHeight();
            const ui::Rect now = w->rect;
            const ui::Rect in = ui::keep_inside(now, {0.0f, top, d.x, std::max(d.y - top, 1.0f)});
            if (ui::moved_from(now, in)) {
                ImGui::SetNextWindowPos(ImVec2(in.x, in.y), ImGuiCond_Always);
                ImGui::SetNextWindowSize(ImVec2(in.w, in.h), ImGuiCond_Always);
            }
            return;
        }
    }
    const ImGuiCond cond = reset ? ImGuiCond_Always : ImGuiCond_FirstUseEver;
    ImGui::SetNextWindowPos(ImVec2(r.x, r.y), cond);
    ImGui::SetNextWindowSize(ImVec2(r.w, r.h), cond);
}

bool PanelsArrangedByUser(const UiState& ui) {
    for (ui::Panel p : ui::kAllPanels) {
        const ui::Rect& asked = ui.layout.asked[static_cast<std::size_t>(p)];
        if (p == ui::Panel::Quiz || asked.w <= 0.0f) continue;  // the quiz sizes itself to its text
        const std::optional<PanelWindow> w = FindPanelWindow(p);
        if (w && w->active && ui::moved_from(asked, w->rect)) return true;
    }
    return false;
}

}  // namespace attnscope
