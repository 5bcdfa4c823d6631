// Row-sum panel: softmax rows must sum to 1. Per head: max |row sum - 1| and failing rows (read
// from the engine's RowSumCheck), a plot of one head's row sums, and in training mode with
// dropout an explanation of why the sums differ from 1.
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "fonts.hpp"
#include "logic/rowsum.hpp"
#include "panels/panels.hpp"
#include "widgets.hpp"

namespace attnscope {

namespace {

// The plot area: background, tolerance band, the line at 1, the row sums as a line and dots.
void DrawPlotArea(ImDrawList* dl, const std::vector<float>& sums, double tolerance, ImVec2 a, ImVec2 b, float lo,
                  float hi, float r) {
    dl->AddRectFilled(a, b, IM_COL32(25, 25, 30, 255));
    dl->AddRect(a, b, ImGui::GetColorU32(ImGuiCol_Border));
    if (sums.empty()) return;
    auto Y = [&](double v) { return b.y - static_cast<float>((v - lo) / (hi - lo)) * (b.y - a.y); };
    // Tolerance band around 1 and the line at 1.
    dl->AddRectFilled(ImVec2(a.x, Y(1.0 + tolerance)), ImVec2(b.x, Y(1.0 - tolerance)), IM_COL32(80, 200, 120, 60));
    dl->AddLine(ImVec2(a.x, Y(1.0)), ImVec2(b.x, Y(1.0)), IM_COL32(80, 200, 120, 200), 1.0f);
    const std::size_t n = sums.size();
    auto X = [&](std::size_t i) { return a.x + (n > 1 ? (b.x - a.x - 8) * i / (n - 1) + 4 : (b.x - a.x) / 2); };
    for (std::size_t i = 0; i + 1 < n; ++i)
        if (std::isfinite(sums[i]) && std::isfinite(sums[i + 1]))
            dl->AddLine(ImVec2(X(i), Y(sums[i])), ImVec2(X(i + 1), Y(sums[i + 1])), IM_COL32(180, 180, 255, 200), 1.5f);
    for (std::size_t i = 0; i < n; ++i) {
        const bool bad = !(std::fabs(sums[i] - 1.0) <= tolerance);
        const float y = std::isfinite(sums[i]) ? Y(sums[i]) : a.y;
        dl->AddCircleFilled(ImVec2(X(i), y), bad ? r + 1 : r, bad ? IM_COL32(255, 70, 60, 255) : IM_COL32(200, 200, 255, 255));
    }
}

void PlotRowSums(const std::vector<float>& sums, double tolerance, ImVec2 size) {
    ImDrawList* dl = ImGui::GetWindowDrawList();
    const ImVec2 p = ImGui::GetCursorScreenPos();
    const float fs = ImGui::GetFontSize();
    const float left = fs * 4.2f;  // y-axis labels
    const ImVec2 a(p.x + left, p.y + fs * 0.5f), b(p.x + size.x - 4, p.y + size.y - fs * 1.4f);
    ImGui::Dummy(size);
    float lo = 0.0f, hi = 1.0f;
    if (!sums.empty()) ui::plot_range(sums, tolerance, &lo, &hi);
    const std::size_t n = sums.size();
    const float r = n ? std::clamp((b.x - a.x) / n * 0.3f, 1.5f, 4.0f) : 1.5f;
    DrawPlotArea(dl, sums, tolerance, a, b, lo, hi, r);
    if (sums.empty()) return;
    auto Y = [&](double v) { return b.y - static_cast<float>((v - lo) / (hi - lo)) * (b.y - a.y); };
    const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text);
    for (double v : {static_cast<double>(lo), 1.0, static_cast<double>(hi)}) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.6g", v);
        const float w = ImGui::CalcTextSize(buf).x;
        float y = Y(v) - fs * 0.5f;
        if (v != 1.0 && std::fabs(Y(v) - Y(1.0)) < fs) continue;  // do not overlap the 1 label
        y = std::clamp(y, a.y - fs * 0.5f, b.y - fs * 0.5f);
        dl->AddText(ImVec2(a.x - w - 4, y), text, buf);
    }
    // x axis: row (query token) index.
    char buf[48];
    std::snprintf(buf, sizeof buf, _("row n = 0 .. %zu"), n - 1);
    dl->AddText(ImVec2(a.x, b.y + 2), ImGui::GetColorU32(ImGuiCol_TextDisabled), buf);
    const ImGuiIO& io = ImGui::GetIO();
    if (ImGui::IsItemHovered() && io.MousePos.x >= a.x && io.MousePos.x <= b.x) {
        const float f = (io.MousePos.x - a.x - 4) / std::max(b.x - a.x - 8, 1.0f) * (n - 1);
        const std::size_t i = static_cast<std::size_t>(std::clamp(std::lround(f), 0L, static_cast<long>(n - 1)));
        ImGui::SetTooltip(_("row %zu: sum = %.9g\n|sum - 1| = %.3g"), i, static_cast<double>(sums[i]),
                          std::fabs(static_cast<double>(sums[i]) - 1.0));
    }
}

}  // namespace

void DrawRowSumPanel(const Trace& trace, UiState& ui) {
    if (!ui.panels.row_sums) return;
    PlaceWindow(ui, ui::Panel::RowSums);
    if (!ImGui::Begin(ui::window_title(_("Row sums"), "Row sums").c_str(), &ui.panels.row_sums)) {
        ImGui::End();
        return;
    }
    const Step* step = SelectedStep(trace, ui);
    const RowSumCheck* check = step ? trace.checks.row_sum(step->name) : nullptr;
    if (!check) {
        const std::string title = step ? _("No row-sum check for ") + step->name : std::string(_("No trace"));
        EmptyState(title.c_str(),
                   _("Softmax makes every row of attn a probability distribution: its N' weights sum to 1. "
                      "The check runs on attn and on attn_drop. Select one of them to see the sums per head."));
        if (step && trace.find("attn")) {
            ImGui::SetCursorPos(ImVec2(ImGui::GetStyle().WindowPadding.x + 8, ImGui::GetCursorPosY() - ImGui::GetFrameHeight() * 2.5f));
            if (ImGui::Button(_("show attn"))) SelectStep(trace, ui, "attn");
        }
        ImGui::End();
        return;
    }
    const ui::RowSumSummary sum = ui::summarize(*check);
    const bool fail = check->failing_rows > 0 && !check->deviation_expected;
    const ImVec4 col = check->failing_rows == 0 ? OkColor() : (fail ? BadColor() : WarnColor());
    WrappedText(col, (std::string(check->failing_rows == 0 ? "\u2713 " : (fail ? "\u2717 " : "\u26A0 ")) + sum.headline).c_str());
    // The headline has the counts; under it, why (failing rows) or why it is expected (dropout).
    if (check->deviation_expected)
        WrappedText(ui::tr_core(check->explanation));
    else if (check->failing_rows > 0)
        WrappedText(ui::tr_core(check->cause));
    else if (trace.config.training && check->step == "attn")
        WrappedText(ImGui::GetStyle().Colors[ImGuiCol_TextDisabled], _("Training mode: attn itself still sums to 1; dropout acts on attn_drop."));

    // The (batch, head) the inspector shows.
    InspectorView& view = ViewFor(ui, *step);
    const std::size_t b = std::min<std::size_t>(view.spec.index.empty() ? 0 : view.spec.index[0], sum.batch ? sum.batch - 1 : 0);
    const std::size_t hd = std::min<std::size_t>(view.spec.index.size() > 1 ? view.spec.index[1] : 0, sum.heads ? sum.heads - 1 : 0);

    // The per-head table and the plot side by side; on a narrow panel the plot goes under the table,
    // which then takes only the height of its rows (scrolling past half the panel).
    const ImVec2 avail = ImGui::GetContentRegionAvail();
    const float table_w = ImGui::GetFontSize() * 13.5f;
    const bool side_by_side = avail.x - table_w - ImGui::GetStyle().ItemSpacing.x >= ImGui::GetFontSize() * 12.0f;
    const float rows_h = ImGui::GetTextLineHeightWithSpacing() * static_cast<float>(sum.heads + 1) + 4.0f;
    const float table_h = side_by_side ? avail.y : std::min(rows_h, avail.y * 0.5f);
    // Per-head table of batch item b.
    if (ImGui::BeginTable("heads", 3,
                          ImGuiTableFlags_RowBg | ImGuiTableFlags_ScrollY | ImGuiTableFlags_BordersInnerV |
                              ImGuiTableFlags_SizingFixedFit,
                          ImVec2(table_w, table_h))) {
        ImGui::TableSetupScrollFreeze(0, 1);
        ImGui::TableSetupColumn(_("head"));
        ImGui::TableSetupColumn(_("max |sum-1|"));
        ImGui::TableSetupColumn(_("fail"));
        ImGui::TableHeadersRow();
        ImGui::PushFont(fonts().mono);
        for (const auto& h : sum.per_head) {
            if (h.batch != b) continue;
            ImGui::TableNextRow();
            ImGui::TableNextColumn();
            char label[32];
            std::snprintf(label, sizeof label, "%zu##h", h.head);
            if (ImGui::Selectable(label, h.head == hd, ImGuiSelectableFlags_SpanAllColumns) && view.spec.index.size() > 1) {
                view.spec.index[1] = h.head;
                view.spec.row_axis = 2;
                view.spec.col_axis = 3;
            }
            ImGui::TableNextColumn();
            ImGui::Text("%.2e", h.max_error);
            ImGui::TableNextColumn();
            if (h.failing)
                ImGui::TextColored(check->deviation_expected ? WarnColor() : BadColor(), "%zu", h.failing);
            else
                ImGui::TextColored(OkColor(), "0");
        }
        ImGui::PopFont();
        ImGui::EndTable();
    }
    if (side_by_side) ImGui::SameLine();
    ImGui::BeginGroup();
    char title[96];
    std::snprintf(title, sizeof title, _("row sums of batch %zu, head %zu"), b, hd);
    ImGui::BeginGroup();
    WrappedText(title);
    ImGui::EndGroup();
    SameLineIfFits(ImGui::CalcTextSize("(?)").x);
    HelpMarker(_("Each dot is one row of attn[b, head]: the sum of its N' weights. The green band is 1 \u00B1 "
                  "tolerance. Red dots are rows outside it; the inspector outlines them in the heatmap."));
    const std::vector<float> sums = ui::head_row_sums(*check, b, hd);
    PlotRowSums(sums, check->tolerance, ImVec2(ImGui::GetContentRegionAvail().x, ImGui::GetContentRegionAvail().y));
    ImGui::EndGroup();
    ImGui::End();
}

}  // namespace attnscope
