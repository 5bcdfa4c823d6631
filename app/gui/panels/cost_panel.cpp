// Cost: parameters, FLOPs and memory of every step of the layer on screen, as formulas in
// B, N, C, h and as numbers (core/teach/cost), the layer's totals, and what changes with h when C is
// fixed (the parameters do not; the reference article's last table says they grow).
#include <imgui.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "cost.hpp"
#include "fonts.hpp"
#include "logic/core_text.hpp"
#include "logic/i18n.hpp"
#include "panels/panels.hpp"
#include "widgets.hpp"

namespace attnscope {

using ui::_;

namespace {

void Cell(const std::string& text, bool mono = true) {
    ImGui::TableNextColumn();
    if (mono) ImGui::PushFont(fonts().mono);
    ImGui::TextUnformatted(text.c_str());
    if (mono) ImGui::PopFont();
}

// A cost formula with its closing remark in the reader's language: "0 (eval: identity)",
// "2 B h N N c = 2 B N^2 C  (any h)"; the formula itself stays as written.
std::string Formula(const std::string& formula) {
    const std::size_t open = formula.rfind(" (");
    if (open == std::string::npos || formula.back() != ')') return formula;
    return formula.substr(0, open + 1) + ui::tr_core(formula.substr(open + 1));
}

void RightCell(const std::string& text) {
    ImGui::TableNextColumn();
    const float w = ImGui::CalcTextSize(text.c_str()).x;
    ImGui::SetCursorPosX(ImGui::GetCursorPosX() + std::max(0.0f, ImGui::GetContentRegionAvail().x - w));
    ImGui::TextUnformatted(text.c_str());
}

}  // namespace

void DrawCostPanel(const Trace& trace, UiState& ui) {
    if (!ui.panels.cost) return;
    PlaceWindow(ui, ui::Panel::Cost);
    if (!ImGui::Begin(ui::window_title(_("Cost"), "Cost").c_str(), &ui.panels.cost)) {
        ImGui::End();
        return;
    }
    const AttentionConfig& cfg = trace.config;
    if (!cfg.batch || !cfg.tokens || !cfg.dim || !cfg.heads || cfg.dim % cfg.heads) {
        EmptyState(_("No sizes to cost"), _("The trace on screen does not say B, N, C and h (a file of attention maps only)."));
        ImGui::End();
        return;
    }
    const CostTable t = attention_cost(cfg);
    ImGui::Text(_("one attention layer: B = %zu, N = %zu, C = %zu, h = %zu (c = %zu)%s"), cfg.batch, cfg.tokens, cfg.dim,
                cfg.heads, cfg.head_dim(), cfg.qkv_bias ? _(", qkv bias") : "");
    ImGui::TextDisabled("%s", _("multiply-add = 2 FLOPs; bias, scale, dropout 1 per element; softmax 5 per element; "
                                 "float32 = 4 bytes; a view allocates nothing"));

    const ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_SizingFixedFit |
                                  ImGuiTableFlags_ScrollY;
    const float table_h = ImGui::GetTextLineHeightWithSpacing() * (t.steps.size() + 1.6f);
    if (ImGui::BeginTable("cost", 7, flags, ImVec2(0, table_h))) {
        ImGui::TableSetupScrollFreeze(0, 1);
        ImGui::TableSetupColumn(_("step"));
        ImGui::TableSetupColumn(_("params"));
        ImGui::TableSetupColumn("##pn");
        ImGui::TableSetupColumn(_("FLOPs"), ImGuiTableColumnFlags_WidthStretch);
        ImGui::TableSetupColumn("##fn");
        ImGui::TableSetupColumn(_("memory of the intermediate"));
        ImGui::TableSetupColumn("##mn");
        ImGui::TableHeadersRow();
        for (const StepCost& s : t.steps) {
            ImGui::TableNextRow();
            ImGui::TableNextColumn();
            if (ImGui::Selectable(s.step.c_str(), s.step == ui.selection.step, ImGuiSelectableFlags_SpanAllColumns))
                SelectStep(trace, ui, s.step);
            Cell(Formula(s.params_formula));
            RightCell(s.params ? format_count(s.params) : "");
            Cell(Formula(s.flops_formula));
            RightCell(s.flops ? format_count(s.flops) : "");
            Cell(Formula(s.bytes_formula));
            ImGui::TableNextColumn();
            if (s.step == "input") ImGui::TextDisabled(_("%s (the input)"), format_bytes(s.bytes).c_str());
            else if (s.view) ImGui::TextDisabled(_("%s (view)"), format_bytes(s.bytes).c_str());
            else ImGui::TextUnformatted(format_bytes(s.bytes).c_str());
            if (s.view && s.step != "input" && ImGui::IsItemHovered())
                ImGui::SetTooltip("%s", _("a view of an earlier tensor (or eval-mode dropout): no new memory"));
        }
        ImGui::TableNextRow();
        ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg0, IM_COL32(60, 70, 100, 160));
        Cell(_("layer"), false);
        Cell(cfg.qkv_bias ? "4C^2 + 4C" : "4C^2 + C");
        RightCell(format_count(t.params));
        Cell(Formula(t.flops_formula));
        RightCell(format_count(t.flops));
        Cell(_("new memory (views excluded)"), false);
        RightCell(format_bytes(t.new_bytes));
        ImGui::EndTable();
    }

    // With C fixed: what h changes and what it does not.
    ImGui::Separator();
    ImGui::TextUnformatted(_("With C fixed, the number of heads h:"));
    if (ImGui::BeginTable("heads", 5, ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingFixedFit | ImGuiTableFlags_BordersInnerV)) {
        ImGui::TableSetupColumn("h");
        ImGui::TableSetupColumn("c = C / h");
        ImGui::TableSetupColumn(_("params"));
        ImGui::TableSetupColumn(_("QK^T FLOPs"));
        ImGui::TableSetupColumn(_("attention maps [B, h, N, N']"));
        ImGui::TableHeadersRow();
        std::vector<std::size_t> hs;  // divisors of C, at most 7, always with the h on screen
        for (std::size_t h = 1; h <= cfg.dim && hs.size() < 7; ++h)
            if (cfg.dim % h == 0) hs.push_back(h);
        if (std::find(hs.begin(), hs.end(), cfg.heads) == hs.end()) hs.back() = cfg.heads;
        for (std::size_t h : hs) {
            AttentionConfig other = cfg;
            other.heads = h;
            const CostTable o = attention_cost(other);
            ImGui::TableNextRow();
            if (h == cfg.heads) ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg0, IM_COL32(60, 70, 100, 160));
            Cell(std::to_string(h));
            Cell(std::to_string(cfg.dim / h));
            Cell(format_count(o.params));
            Cell(format_count(o.find("scores")->flops));
            Cell(format_bytes(o.find("scores")->bytes));
        }
        ImGui::EndTable();
    }
    ImGui::PushTextWrapPos(0.0f);
    ImGui::TextColored(OkColor(), "%s",
                       _("The parameters do not depend on h: qkv is one Linear(C, 3C) and proj one Linear(C, C) whatever "
                          "h is (params = 4C^2 + 4C with both biases); the heads only cut the same 3C outputs into h "
                          "pieces of c = C / h. The reference article's last table (4 heads 7.5M, 8 heads 8.1M, 12 heads "
                          "8.7M parameters) is wrong on this point: with C fixed, adding heads adds no weights."));
    ImGui::TextColored(OkColor(), "%s",
                       _("QK^T costs 2 B h N^2 c = 2 B N^2 C FLOPs for any h (h c = C): more heads means more, "
                          "smaller dot products. What grows with h is the softmax and the memory of the [B, h, N, N'] "
                          "attention maps."));
    ImGui::PopTextWrapPos();
    ImGui::End();
}

}  // namespace attnscope
