// The bug zoo: the menu that switches one classic mistake on (the frame loop runs the correct and
// the buggy pipeline in the worker), and the panel that says what the bug is, which check catches
// it and at which step it first shows. The other panels show the buggy trace; the inspector's
// difference view shows buggy - correct (Trace::differences, as for a user's file).
#include <imgui.h>

#include <cstdio>
#include <string>

#include "fonts.hpp"
#include "logic/i18n.hpp"
#include "panels/panels.hpp"
#include "widgets.hpp"

namespace attnscope {

using ui::_;

void DrawBugZooMenu(const Trace& /*trace*/, UiState& ui) {
    if (!BeginMarkedMenu(ui, _("Bug zoo"), "Bug zoo")) return;
    ImGui::TextDisabled("%s", _("one classic mistake at a time, run beside the correct pipeline"));
    ImGui::Separator();
    for (const BugInfo& b : bug_infos()) {
        const bool on = ui.zoo.bug == b.bug && (b.bug == Bug::None || ui.zoo.run);
        if (ImGui::MenuItem(b.bug == Bug::None ? _("None (the correct pipeline)") : ui::tr_core(b.title), nullptr, on))
            ui.ask(command::ShowBug{b.bug});
        MarkItem(ui, std::string("bug:") + b.key);
        if (b.bug != Bug::None && ImGui::IsItemHovered()) {
            ImGui::BeginTooltip();
            ImGui::PushFont(fonts().mono);
            ImGui::TextUnformatted(b.wrong_line);
            ImGui::PopFont();
            ImGui::TextDisabled(_("caught by: %s"), ui::tr_core(caught_by_name(b.caught_by)));
            ImGui::EndTooltip();
        }
        if (b.bug == Bug::None) ImGui::Separator();
    }
    ImGui::EndMenu();
}

void DrawZooPanel(const Trace& trace, UiState& ui) {
    if (!ui.zoo.run || ui.zoo.run->bug == Bug::None) return;
    const ZooRun& z = *ui.zoo.run;
    const BugInfo& info = bug_info(z.bug);
    static Bug shown = Bug::None;  // bring the panel to the front when another bug is switched on
    if (shown != z.bug) ImGui::SetNextWindowFocus();
    shown = z.bug;
    PlaceWindow(ui, ui::Panel::Zoo);
    bool open = true;
    if (!ImGui::Begin(_("Bug zoo###zoo"), &open)) {
        ImGui::End();
        return;
    }
    if (!open) ui.ask(command::ShowBug{Bug::None});  // closing the panel switches the bug off

    WrappedText(BadColor(), (std::string(_("Bug:")) + " " + ui::tr_core(info.title)).c_str());
    ImGui::PushFont(fonts().mono);
    WrappedText(BadColor(), (std::string("- ") + info.wrong_line).c_str());
    WrappedText(OkColor(), (std::string("+ ") + info.right_line).c_str());
    ImGui::PopFont();
    WrappedText(ui::tr_core(info.symptom));
    ImGui::Separator();

    // What catches it: the three checks, measured on this run.
    const RowSumCheck* rows = z.buggy.checks.row_sum("attn");
    const bool shape_fails = !z.failure.empty() || !z.shape_problem.empty();
    const bool rows_fail = rows && !rows->ok();
    const bool differs = z.comparison.first_divergence() != nullptr || !z.failure.empty();
    auto check = [](const char* name, bool fails, bool catches) {
        ImGui::TextColored(fails ? BadColor() : OkColor(), "%s %s", fails ? "\u2717" : "\u2713", name);
        if (catches) {
            SameLineIfFits(ImGui::CalcTextSize(_("\u2190 catches it first")).x);
            ImGui::TextColored(WarnColor(), "%s", _("\u2190 catches it first"));
        }
    };
    check(_("shape check"), shape_fails, z.caught_by == CaughtBy::ShapeError || z.caught_by == CaughtBy::ShapeCheck);
    if (rows) check(_("row-sum check (attn)"), rows_fail, z.caught_by == CaughtBy::RowSumCheck);
    else WrappedText(DimColor(), (std::string("- ") + _("row-sum check (attn): not reached, the run stopped before attn")).c_str());
    check(_("difference from the correct pipeline"), differs, z.caught_by == CaughtBy::Difference);
    WrappedText(WarnColor(), ui::tr_core(z.caught_text));
    if (!z.first_step.empty()) {
        ImGui::TextUnformatted(_("first shows at"));
        ImGui::SameLine();
        ImGui::TextColored(BadColor(), "%s", z.first_step.c_str());
        if (trace.find(z.first_step)) {
            SameLineIfFits(ButtonWidth(_("show it")));
            if (ImGui::SmallButton(_("show it"))) SelectStep(trace, ui, z.first_step);
        }
    }
    if (!z.failure.empty()) {  // the TensorSensor-style message: the operands and their shapes
        ImGui::Separator();
        WrappedText(BadColor(), _("ShapeError: the run stops here; the trace holds the steps before it"));
        ImGui::PushFont(fonts().mono);
        WrappedText(ui::tr_core(z.failure));
        ImGui::PopFont();
    }
    ImGui::Separator();
    WrappedText(DimColor(), _("step by step against the correct run (inspector: difference view)"));
    if (ImGui::BeginTable("zoo_steps", 3, ImGuiTableFlags_RowBg | ImGuiTableFlags_ScrollY | ImGuiTableFlags_SizingFixedFit)) {
        for (const StepComparison& c : z.comparison.steps) {
            ImGui::TableNextRow();
            ImGui::TableNextColumn();
            if (ImGui::Selectable(c.step.c_str(), c.step == ui.selection.step, ImGuiSelectableFlags_SpanAllColumns))
                SelectStep(trace, ui, c.step);
            if (!c.ok() && ImGui::IsItemHovered()) ImGui::SetTooltip("%s", ui::tr_core(c.diagnosis));
            ImGui::TableNextColumn();
            ImGui::TextColored(c.ok() ? OkColor() : BadColor(), "%s", c.ok() ? _("same") : ui::tr_core(finding_name(c.finding)));
            ImGui::TableNextColumn();
            if (!c.ok() && c.max_error == c.max_error) ImGui::TextDisabled(_("max |diff| %.3g"), c.max_error);
            else if (!c.ok()) ImGui::TextDisabled("%s", _("other shape"));
        }
        ImGui::EndTable();
    }
    ImGui::End();
}

}  // namespace attnscope
