// Pipeline panel: every recorded step as a row (name, shape before -> after, check status),
// playback controls. Mouse selects; the frame loop maps ←/→ Home End Space to the stepper.
#include <imgui.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "fonts.hpp"
#include "panels/panels.hpp"
#include "widgets.hpp"

namespace attnscope {

namespace {

const ShapeCheck* ShapeCheckFor(const Trace& trace, const std::string& step) {
    for (const auto& c : trace.checks.shapes)
        if (c.step == step) return &c;
    return nullptr;
}

// A step's check: "✓", "✗ shape", "⚠ rows" ..., its colour, and the reason for the tooltip.
struct Status {
    ImVec4 color;
    std::string label;
    std::string tip;
};

Status StatusOf(const Trace& trace, const Step& step) {
    const ShapeCheck* sc = ShapeCheckFor(trace, step.name);
    const RowSumCheck* rs = trace.checks.row_sum(step.name);
    const bool nonfinite_here = trace.checks.nonfinite.first_step == step.name;
    const StepDifference* diff = trace.difference(step.name);
    if (diff && !diff->ok)  // the user's tensor differs from the reference: what the bug is
        return {BadColor(), std::string("\u2717 ") + ui::tr_core(diff->finding),
                std::string(ui::tr_core(diff->diagnosis)) + _("\nmax |yours - reference| = ") +
                    ui::format_value(diff->max_error) + _(" (tolerance ") + ui::format_value(diff->tolerance) + ")"};
    if (sc && !sc->ok)
        return {BadColor(), _("\u2717 shape"),
                _("expected ") + sc->formula + " = " + format_shape(sc->expected) + _(", got ") + format_shape(sc->actual)};
    if (nonfinite_here) return {BadColor(), _("\u2717 NaN/Inf"), ui::tr_core(trace.checks.nonfinite.message)};
    if (rs && rs->failing_rows > 0 && !rs->deviation_expected)
        return {BadColor(), _("\u2717 rows"), std::to_string(rs->failing_rows) + _(" rows do not sum to 1")};
    if (rs && rs->failing_rows > 0) return {WarnColor(), _("\u26A0 rows"), ui::tr_core(rs->explanation)};
    const std::string sums = rs ? _("\nevery softmax row sums to 1") : "";
    if (diff)
        return {OkColor(), _("\u2713 ref"),
                _("equals the reference's ") + step.name + _(" (max |yours - reference| = ") +
                    ui::format_value(diff->max_error) + " <= " + ui::format_value(diff->tolerance) + ")" + sums};
    const std::string tip = sc ? _("shape ") + format_shape(sc->actual) + " = " + sc->formula
                            : step.origin == StepOrigin::Loaded ? _("loaded, not compared: the file has no input and "
                                                                     "weights to run the reference on")
                                                                : _("no check for this step");
    return {OkColor(), rs ? _("\u2713 rows") : "\u2713", tip + sums};
}

// The check's symbol alone ("✗" of "✗ scale after softmax"): the column when the panel is narrow.
std::string Symbol(const std::string& label) { return label.substr(0, label.find(' ')); }

}  // namespace

void DrawPipelinePanel(const Trace& trace, UiState& ui) {
    if (!ui.panels.pipeline) return;
    PlaceWindow(ui, ui::Panel::Pipeline);
    if (!ImGui::Begin(ui::window_title(_("Pipeline"), "Pipeline").c_str(), &ui.panels.pipeline)) {
        ImGui::End();
        return;
    }
    if (trace.steps.empty()) {
        const std::string error = ui::tr_message(ui.engine.error);
        const char* why = !ui.engine.error.empty() ? error.c_str()
                          : ui.engine.busy      ? _("The engine is running; its trace appears here when it is done.")
                                                : _("The engine has not produced a trace. Check the config panel.");
        EmptyState(_("No trace yet"), why);
        ImGui::End();
        return;
    }
    // A config the engine refused: why, above the steps it did not replace.
    if (!ui.config.errors.empty() && trace.source_path.empty() && !ui.vit.on_screen) {
        ImGui::BeginGroup();
        char why[512];
        std::snprintf(why, sizeof why, _("\u2717 not run: %s; the steps below are the last good trace"),
                      ui::tr_message(ui.config.errors.front()).c_str());
        WrappedText(BadColor(), why);
        ImGui::EndGroup();
        MarkItem(ui, "pipeline:config_error");
    }
    // Playback controls.
    const char* keys = _("\u2190/\u2192 Home End Space");
    if (ImGui::ArrowButton("##prev", ImGuiDir_Left)) ui.selection.stepper.key(ui::StepKey::Prev);
    ImGui::SameLine();
    if (ImGui::Button(ui.selection.stepper.playing ? _("Pause") : _("Play"), ImVec2(ImGui::GetFontSize() * 4, 0)))
        TogglePlay(ui);
    if (ImGui::IsItemHovered()) ImGui::SetTooltip(_("keys: %s"), keys);
    ImGui::SameLine();
    if (ImGui::ArrowButton("##next", ImGuiDir_Right)) ui.selection.stepper.key(ui::StepKey::Next);
    ImGui::SameLine();
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 9);
    float pace = static_cast<float>(ui.selection.stepper.interval);
    if (ImGui::SliderFloat("##pace", &pace, 0.2f, 5.0f, _("%.1f s / step"))) ui.selection.stepper.interval = pace;
    // The keys beside the controls when they fit; always in the Play button's tooltip.
    if (FitsOnThisLine(ImGui::CalcTextSize(keys).x)) {
        ImGui::SameLine();
        ImGui::TextDisabled("%s", keys);
    }

    const ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_ScrollY |
                                  ImGuiTableFlags_SizingFixedFit;
    // A file: the first divergence, its finding on one line and the whole diagnosis on hover (the
    // check column and the inspector say it too), so the table keeps its rows.
    const bool from_file = !trace.source_path.empty();
    const StepDifference* first = FirstDivergence(trace);
    if (from_file) {
        if (first) {
            char text[1024];
            std::snprintf(text, sizeof text, _("first divergence: %s \u2014 %s"), first->step.c_str(), ui::tr_core(first->finding));
            ImGui::BeginGroup();
            WrappedText(BadColor(), text);
            ImGui::EndGroup();
            if (ImGui::IsItemHovered()) WrappedTooltip(ui::tr_core(first->diagnosis));
        } else if (!trace.differences.empty()) {
            WrappedText(OkColor(), _("\u2713 every step of the file equals the reference"));
        } else {
            WrappedText(ImGui::GetStyle().Colors[ImGuiCol_TextDisabled], _("the file's steps are not compared (see the Config panel for why)"));
        }
    }
    // The check column names the check ("✗ scale after softmax") when the columns fit the panel with
    // each step's result shape; on a narrow panel it shows the symbol, the name in its tooltip.
    std::vector<Status> status;
    float step_w = 0.0f, shape_w = 0.0f, check_w = 0.0f;
    for (const Step& step : trace.steps) {
        status.push_back(StatusOf(trace, step));
        step_w = std::max(step_w, ImGui::CalcTextSize(step.name.c_str()).x);
        shape_w = std::max(shape_w, ImGui::CalcTextSize(("\u2192 " + format_shape(step.shape())).c_str()).x);
        check_w = std::max(check_w, ImGui::CalcTextSize(status.back().label.c_str()).x);
    }
    // A bug whose code stops with a shape error: a last row for the step that failed.
    const bool stopped = ui.zoo.run && ui.zoo.run->bug == ui.zoo.bug && !ui.zoo.run->failure.empty() &&
                         !ui.zoo.run->first_step.empty() && !trace.find(ui.zoo.run->first_step);
    const std::string stops = _("\u2717 shape error: the run stops here");
    if (stopped) check_w = std::max(check_w, ImGui::CalcTextSize(stops.c_str()).x);
    const float cell = 2.0f * ImGui::GetStyle().CellPadding.x + 1.0f;
    const bool named_checks = ImGui::CalcTextSize("00").x + step_w + shape_w + ImGui::GetFontSize() + check_w +
                                  4.0f * cell + ImGui::GetStyle().ScrollbarSize <=
                              ImGui::GetContentRegionAvail().x;
    // Rows one text line high with no vertical cell padding: the 17 steps fit at 1280 x 720.
    ImGui::PushStyleVar(ImGuiStyleVar_CellPadding, ImVec2(ImGui::GetStyle().CellPadding.x, 0.0f));
    const bool table = ImGui::BeginTable("steps", 4, flags, ImVec2(0, 0));
    ImGui::PopStyleVar();
    if (table) {
        ImGui::TableSetupScrollFreeze(0, 1);
        ImGui::TableSetupColumn("#", ImGuiTableColumnFlags_WidthFixed);
        ImGui::TableSetupColumn(_("step"), ImGuiTableColumnFlags_WidthFixed);
        ImGui::TableSetupColumn(_("shape before \u2192 after"), ImGuiTableColumnFlags_WidthStretch);
        ImGui::TableSetupColumn(_("check"), ImGuiTableColumnFlags_WidthFixed);
        ImGui::TableHeadersRow();
        const Step* selected = SelectedStep(trace, ui);
        for (std::size_t i = 0; i < trace.steps.size(); ++i) {
            const Step& step = trace.steps[i];
            ImGui::TableNextRow();
            ImGui::TableNextColumn();
            ImGui::TextDisabled("%zu", i);
            ImGui::TableNextColumn();
            const bool is_selected = &step == selected;
            // From a file, the steps read from it are named in blue; the others the reference computed.
            const bool loaded = from_file && step.origin == StepOrigin::Loaded;
            char label[64];
            std::snprintf(label, sizeof label, "%s##row%zu", step.name.c_str(), i);
            if (loaded) ImGui::PushStyleColor(ImGuiCol_Text, LoadedColor());
            const bool clicked = ImGui::Selectable(label, is_selected, ImGuiSelectableFlags_SpanAllColumns);
            if (loaded) ImGui::PopStyleColor();
            if (clicked) {
                ui.selection.stepper.set_count(static_cast<int>(trace.steps.size()));
                ui.selection.stepper.select(static_cast<int>(i));
            }
            if (is_selected && (ui.selection.stepper.playing || ui.selection.scroll_into_view)) {
                ImGui::SetScrollHereY(0.5f);
                // Tables are laid out a frame late: keep asking until the row is really on screen.
                if (ImGui::IsItemVisible() && ImGui::GetFrameCount() > 2) ui.selection.scroll_into_view = false;
            }
            if (ImGui::IsItemHovered()) {
                ImGui::BeginTooltip();
                ImGui::Text("%s: %s", op_name(step.op), ui::tr_code(step.code).c_str());
                ImGui::TextDisabled("%s", ui::tr_formula(step.formula).c_str());
                if (loaded)
                    ImGui::TextColored(LoadedColor(), "%s", (_("your tensor: ") + std::string(ui::tr_core(step.origin_detail))).c_str());
                else if (from_file)
                    ImGui::TextDisabled("%s", _("not in the file: computed by the reference from the file's "
                                                 "input and weights"));
                ImGui::EndTooltip();
            }
            if (first && first->step == step.name)  // the first divergence stands out
                ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg1, IM_COL32(150, 40, 40, 110));
            if (const int role = FollowRole(trace, ui, step.name))  // the followed element's sources / feeds
                ImGui::TableSetBgColor(ImGuiTableBgTarget_CellBg, (FollowColor(role) & 0x00FFFFFF) | (110u << 24), 0);
            ImGui::TableNextColumn();
            if (QuizHidesShape(ui, static_cast<int>(i), step.name)) {  // the quiz asks it later
                ImGui::TextDisabled("?");
                ImGui::TableNextColumn();
                continue;
            }
            // Shape before -> after on one line: the inputs' shapes (a matmul shows both operands),
            // then the result. When that does not fit the column, the result alone, with the whole
            // line in its tooltip, so every step keeps one row (all 17 fit at 1280 x 720).
            std::vector<const Step*> inputs;  // a file may lack a step's inputs: then only its own shape
            std::string whole;
            for (const std::string& name : step.inputs)
                if (const Step* in = trace.find(name)) {
                    whole += (inputs.empty() ? "" : std::string(" ") + op_symbol(step.op) + " ") + format_shape(in->shape());
                    inputs.push_back(in);
                }
            whole += (inputs.empty() ? "" : " \u2192 ") + format_shape(step.shape());
            const bool fits =  // drawn in pieces, a little wider than the text: one character of slack
                ImGui::CalcTextSize(whole.c_str()).x + ImGui::GetFontSize() <= ImGui::GetContentRegionAvail().x;
            if (fits) {
                for (std::size_t k = 0; k < inputs.size(); ++k) {
                    if (k > 0) {
                        ImGui::SameLine(0, 4);
                        ImGui::TextUnformatted(op_symbol(step.op));
                        ImGui::SameLine(0, 4);
                    }
                    ColoredShape(inputs[k]->shape(), inputs[k]->axes());
                    ImGui::SameLine(0, 6);
                }
            }
            if (!inputs.empty()) {
                ImGui::TextUnformatted("\u2192");
                ImGui::SameLine(0, 6);
            }
            ColoredShape(step.shape(), step.axes());
            if (!fits && ImGui::IsItemHovered()) ImGui::SetTooltip("%s", whole.c_str());
            ImGui::TableNextColumn();
            const Status& st = status[i];
            ImGui::TextColored(st.color, "%s", named_checks ? st.label.c_str() : Symbol(st.label).c_str());
            if (ImGui::IsItemHovered())
                WrappedTooltip((named_checks ? st.tip : st.label + "\n" + st.tip).c_str());
        }
        // The step that failed: "ShapeError", the whole error in its tooltip (and in the Bug zoo panel).
        if (stopped) {
            ImGui::TableNextRow();
            ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg1, IM_COL32(150, 40, 40, 110));
            ImGui::TableNextColumn();
            ImGui::TextDisabled("%zu", trace.steps.size());
            ImGui::TableNextColumn();
            ImGui::TextColored(BadColor(), "%s", ui.zoo.run->first_step.c_str());
            ImGui::TableNextColumn();
            const std::string& failure = ui.zoo.run->failure;
            ImGui::TextColored(BadColor(), "ShapeError");
            if (ImGui::IsItemHovered()) {
                ImGui::BeginTooltip();
                ImGui::PushFont(fonts().mono);
                ImGui::TextUnformatted(ui::tr_core(failure));
                ImGui::PopFont();
                ImGui::EndTooltip();
            }
            ImGui::TableNextColumn();
            ImGui::TextColored(BadColor(), "%s", named_checks ? stops.c_str() : Symbol(stops).c_str());
            if (!named_checks && ImGui::IsItemHovered()) ImGui::SetTooltip("%s", stops.c_str());
        }
        ImGui::EndTable();
    }
    ImGui::End();
}

}  // namespace attnscope
