// The Image panel's Drop path tab: timm's stochastic depth (DropPath) and LayerScale in the blocks:
// per block and branch, which samples lost their branch.
#include <imgui.h>

#include "fonts.hpp"
#include "logic/drop_path_view.hpp"
#include "panels/image_tabs.hpp"
#include "widgets.hpp"

namespace attnscope::image {

namespace {

// The drop-path controls: rate, train/eval, seed; a change asks the frame loop for the run.
void DropPathControls(UiState& ui) {
    VitDropPathChoice c = ui.vit.drop_path;
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 9.0f);
    ImGui::SliderFloat("##drop_path", &c.rate, 0.0f, 0.9f, _("drop path %.2f"));
    bool run = ImGui::IsItemDeactivatedAfterEdit();  // the slider runs once released
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip(_("timm's drop_path_rate P: block i drops a branch with p = linspace(0, P, depth)[i]\n"
                             "(attnscope vit --drop-path P)"));
    ImGui::SameLine();
    run |= ImGui::Checkbox(_("training"), &c.training);
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip(_("model.train(): every drop_path step draws a keep mask per sample;\n"
                             "model.eval(): DropPath is the identity"));
    SameLineIfFits(ImGui::CalcTextSize(_("seed")).x + ImGui::GetFontSize() * 6.5f);
    ImGui::TextDisabled(_("seed"));
    ImGui::SameLine();
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 6.0f);
    const std::uint64_t one = 1;
    run |= ImGui::InputScalar("##drop_seed", ImGuiDataType_U64, &c.seed, &one, nullptr, "%llu");
    ui.vit.drop_path = c;
    if (run) ui.ask(command::RunDropPath{c});
}

// One branch's cell: what each sample's branch did in this block.
void BranchCellText(const DropPathRecord& r) {
    for (std::size_t b = 0; b < r.mask.size(); ++b) {
        if (b) ImGui::SameLine();
        const ui::BranchCell cell = ui::branch_cell(r, b);
        const std::string who = r.mask.size() > 1 ? std::to_string(b) + ": " : std::string();
        if (cell.fate == ui::BranchFate::dropped)
            ImGui::TextColored(WarnColor(), "%s%s", who.c_str(), _("dropped"));
        else if (cell.fate == ui::BranchFate::kept)
            ImGui::TextColored(OkColor(), "%s%s %s", who.c_str(), _("kept"), ui::scale_text(cell.scale).c_str());
        else
            ImGui::TextDisabled("%s%s", who.c_str(), _("identity"));
    }
}

}  // namespace

void DropPathTab(const VitSnapshot& vit, UiState& ui, std::size_t block) {
    DropPathControls(ui);
    const VitTrace& t = vit.trace;
    const VitConfig& c = t.config;
    const VitBlockTrace& blk = t.blocks[block];
    ImGui::PushFont(fonts().small ? fonts().small : ImGui::GetFont());
    ImGui::TextDisabled("%s", blk.at(VitStep::residual1).code.c_str());
    ImGui::TextDisabled("%s", blk.at(VitStep::residual2).code.c_str());
    if (c.layer_scale)
        WrappedTextF("%s", _("LayerScale: every branch is multiplied by ls1.gamma / ls2.gamma [D] from the "
                                    "checkpoint (steps ls1, ls2) before DropPath."));
    else
        WrappedTextF("%s", _("No LayerScale in this checkpoint (timm init_values=None: ls1, ls2 are "
                                    "nn.Identity and record no step)."));
    if (!c.records_drop_path()) {
        WrappedTextF("%s", _("Drop-path rate 0: drop_path1 and drop_path2 are nn.Identity and record no "
                                    "step. Move the slider to give the blocks stochastic depth."));
        ImGui::PopFont();
        return;
    }
    if (!c.training) {
        ImGui::PushStyleColor(ImGuiCol_Text, WarnColor());
        WrappedTextF("%s", _("eval mode: every drop_path step is the identity (model.eval()); tick training to "
                                    "draw the masks."));
        ImGui::PopStyleColor();
    }
    const ImGuiTableFlags flags = ImGuiTableFlags_Borders | ImGuiTableFlags_SizingFixedFit | ImGuiTableFlags_RowBg;
    if (ImGui::BeginTable("##drop_paths", 4, flags)) {
        ImGui::TableSetupColumn(_("block"));
        ImGui::TableSetupColumn("p");
        ImGui::TableSetupColumn(_("attention (drop_path1)"));
        ImGui::TableSetupColumn(_("MLP (drop_path2)"));
        ImGui::TableHeadersRow();
        for (std::size_t i = 0; i < t.blocks.size(); ++i) {
            const auto& dps = t.blocks[i].drop_paths;
            if (dps.size() != 2) continue;
            ImGui::TableNextRow();
            if (i == block) ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg1, ImGui::GetColorU32(ImGuiCol_Header));
            ImGui::TableNextColumn();
            ImGui::Text("%zu", i);
            ImGui::TableNextColumn();
            ImGui::Text("%.3g", static_cast<double>(dps[0].rate));
            for (const DropPathRecord& r : dps) {
                ImGui::TableNextColumn();
                BranchCellText(r);
            }
        }
        ImGui::EndTable();
    }
    // The selected block, sample by sample: what the residual carries and what the branch's gradient is.
    ImGui::Text(_("block %zu:"), block);
    for (const DropPathRecord& r : blk.drop_paths) {
        const bool attn = r.step == vit_step_name(VitStep::drop_path1);
        const std::string residual = vit_step_name(attn ? VitStep::residual1 : VitStep::residual2);
        for (std::size_t b = 0; b < r.mask.size(); ++b) {
            const ui::BranchCell cell = ui::branch_cell(r, b);
            const std::string sample = r.mask.size() > 1 ? _("sample ") + std::to_string(b) + ", " : std::string();
            if (cell.fate == ui::BranchFate::dropped)
                WrappedTextF(
                    _("%s%s branch dropped: %s = x exactly (max |%s - x| = %.3g), the residual path still "
                       "carries x; d %s / d branch = 0, so the branch's weights get zero gradient from this sample."),
                    sample.c_str(), attn ? _("attention") : _("MLP"), residual.c_str(), residual.c_str(),
                    r.dropped_residual_vs_x, residual.c_str());
            else if (cell.fate == ui::BranchFate::kept)
                WrappedTextF(_("%s%s branch kept and scaled by 1/(1-p) = %.4g, so its expected value is "
                                      "unchanged; its gradient is scaled by the same %.4g."),
                                   sample.c_str(), attn ? _("attention") : _("MLP"),
                                   static_cast<double>(cell.scale), static_cast<double>(cell.grad_scale()));
            else
                WrappedTextF(_("%s%s branch: identity (p = %.3g%s)"), sample.c_str(),
                                   attn ? _("attention") : _("MLP"), static_cast<double>(r.rate),
                                   c.training ? "" : _(", eval"));
        }
    }
    ImGui::PopFont();
}

}  // namespace attnscope::image
