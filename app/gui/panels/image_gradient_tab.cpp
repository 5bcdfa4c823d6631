// The Image panel's Gradient flow tab: the whole ViT's backward pass (core/vit/vit_backward.hpp) of
// the predicted class's logit, per block the gradient norms entering (at the output) and leaving (at
// the input) its MLP and attention branches and along its residual stream, on a log scale.
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "fonts.hpp"
#include "logic/colormap.hpp"
#include "panels/image_tabs.hpp"
#include "widgets.hpp"

namespace attnscope::image {

namespace {

struct FlowRow {
    std::size_t block;
    const char* what;  // null: the block's header row
    double norm;
    bool residual;
};

// The rows in the order the gradient flows: the last block first, each from its output down.
std::vector<FlowRow> flow_rows(const VitGradients& g) {
    std::vector<FlowRow> rows;
    for (std::size_t i = g.blocks.size(); i-- > 0;) {
        const VitBlockFlow& f = g.blocks[i].flow;
        rows.push_back({i, nullptr, 0.0, false});
        rows.push_back({i, _("residual out"), f.residual_out, true});
        rows.push_back({i, _("MLP out"), f.mlp_out, false});
        rows.push_back({i, _("MLP in"), f.mlp_in, false});
        rows.push_back({i, _("residual mid"), f.residual_mid, true});
        rows.push_back({i, _("attention out"), f.attn_out, false});
        rows.push_back({i, _("attention in"), f.attn_in, false});
        rows.push_back({i, _("residual in"), f.residual_in, true});
    }
    return rows;
}

// One bar of log10 ||grad|| per row; the selected block's rows are highlighted.
void PlotFlow(const std::vector<FlowRow>& rows, std::size_t block) {
    const float fs = ImGui::GetFontSize();
    const float row_h = fs * 1.05f, value_w = fs * 4.2f;
    const float width = ImGui::GetContentRegionAvail().x;
    auto name_of = [](const FlowRow& r) {  // "block 3" over its rows, each indented: "  MLP in"
        if (r.what) return std::string("  ") + r.what;
        char label[96];
        std::snprintf(label, sizeof label, _("block %zu"), r.block);
        return std::string(label);
    };
    float label_w = fs * 4.0f;  // the widest name, at most half the room
    for (const FlowRow& r : rows) label_w = std::max(label_w, ImGui::CalcTextSize(name_of(r).c_str()).x + fs * 0.5f);
    label_w = std::min(label_w, width * 0.5f);
    const ImVec2 p = ImGui::GetCursorScreenPos();
    ImGui::InvisibleButton("##flow", ImVec2(width, row_h * static_cast<float>(rows.size()) + fs * 1.4f));
    const bool hovered = ImGui::IsItemHovered();
    ImDrawList* dl = ImGui::GetWindowDrawList();
    double lo = 1e300, hi = 0.0;  // decades covering every non-zero norm
    for (const auto& r : rows)
        if (r.norm > 0 && std::isfinite(r.norm)) lo = std::min(lo, r.norm), hi = std::max(hi, r.norm);
    const LogAxis axis(lo, hi, p.x + label_w, p.x + width - value_w);
    const float x0 = axis.x0, x1 = axis.x1;
    const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text), dim = ImGui::GetColorU32(ImGuiCol_TextDisabled);
    const float bottom = p.y + row_h * static_cast<float>(rows.size());
    DrawDecades(dl, axis, p.y, bottom);
    const ImVec2 mouse = ImGui::GetIO().MousePos;
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const FlowRow& r = rows[i];
        const float y = p.y + row_h * static_cast<float>(i);
        const bool row_hovered = hovered && mouse.y >= y && mouse.y < y + row_h;
        if (r.block == block || row_hovered)
            dl->AddRectFilled(ImVec2(p.x, y), ImVec2(p.x + width, y + row_h),
                              r.block == block ? IM_COL32(70, 110, 180, 60) : IM_COL32(255, 255, 255, 20));
        const std::string name = name_of(r);
        dl->AddText(ImVec2(p.x + 2, y + (row_h - fs) / 2), r.residual || !r.what ? text : dim, name.c_str());
        if (!r.what) continue;  // a header row has no bar
        const ImU32 bar = r.residual ? IM_COL32(110, 160, 240, 230) : IM_COL32(240, 160, 70, 230);
        if (r.norm > 0 && std::isfinite(r.norm))
            dl->AddRectFilled(ImVec2(x0, y + row_h * 0.18f), ImVec2(std::max(axis.x(r.norm), x0 + 1.0f), y + row_h * 0.82f), bar);
        const std::string value = std::isfinite(r.norm) ? ui::format_value(r.norm) : std::string("NaN/Inf");
        dl->AddText(ImVec2(x1 + 4, y + (row_h - fs) / 2), text, value.c_str());
        if (row_hovered) ImGui::SetTooltip(_("block %zu, %s: ||grad|| = %.6g"), r.block, r.what, r.norm);
    }
}

}  // namespace

void GradientFlowTab(const VitSnapshot& vit, UiState& ui, std::size_t block) {
    (void)ui;
    if (!vit.trace.has_head()) {
        WrappedTextF("%s", _("No classifier in this model (a Hugging Face ViTModel): there is no class logit to "
                             "differentiate."));
        return;
    }
    if (!vit.gradients) {
        WrappedTextF("%s", _("The backward pass was not run: it would need more than half the memory budget."));
        return;
    }
    const VitGradients& g = *vit.gradients;
    const std::size_t k = g.classes.front();
    const std::string label = k < vit.labels.size() ? vit.labels[k] : std::to_string(k);
    ImGui::PushFont(fonts().small ? fonts().small : ImGui::GetFont());
    char title[256];
    std::snprintf(title, sizeof title,
                  _("gradient of the logit of %s (the prediction), per block from the head down (log scale)"), label.c_str());
    WrappedTextF("%s", title);
    ImGui::PopFont();
    PlotFlow(flow_rows(g), block);
}

}  // namespace attnscope::image
