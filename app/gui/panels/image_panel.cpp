// Image panel: the ViT on its picture, in three tabs (Attention, Positions, Drop path; one file each,
// image_*_tab.cpp), and the picture and maps of presentation mode's ViT slide.
// Everything is read from the VitSnapshot; overlays are made once per (block, query, fusion).

#include <imgui.h>

#include <algorithm>
#include <cstdio>

#include "attention_maps.hpp"
#include "fonts.hpp"
#include "gfx/rgb_textures.hpp"
#include "logic/vit_view.hpp"
#include "panels/image_tabs.hpp"
#include "panels/panels.hpp"
#include "widgets.hpp"

namespace attnscope {

using image::ClickablePicture;
using image::PatchName;

namespace {

// One captioned square of the slide: the picture (with its patch grid) or a map.
// `mark` names the square (without its caption) for the live tests.
void SlideTile(const VitSnapshot& vit, UiState& ui, const char* id, const std::string& title, std::uintptr_t tex,
               float side, bool grid_lines, const char* mark) {
    ImGui::BeginGroup();
    ImGui::TextUnformatted(title.c_str());
    std::optional<ui::PatchPick> hovered;
    ClickablePicture(id, tex, side, vit.trace.grid, grid_lines, ui, &hovered);
    if (mark) MarkItem(ui, mark);
    if (hovered) ImGui::SetTooltip("%s", PatchName(vit.trace.grid, *hovered).c_str());
    ImGui::EndGroup();
}

}  // namespace

void DrawVitSlidePicture(const VitSnapshot& vit, UiState& ui, float side) {
    if (vit.trace.blocks.empty() || !ui.pictures) return;
    const std::uintptr_t tex =
        ui.pictures->texture("vit/slide0", ui::OverlayKey::picture(ui.vit.generation).str(), [&] { return vit.input; });
    SlideTile(vit, ui, "##slide_picture", _("picture"), tex, side, true, "slide:picture");
}

void DrawVitSlideMaps(const VitSnapshot& vit, UiState& ui, float width, float height) {
    const VitTrace& t = vit.trace;
    if (t.blocks.empty() || !ui.pictures) return;
    const std::size_t heads = t.config.heads, block = std::min(ui.vit.block, t.blocks.size() - 1);
    const std::size_t maps = heads + 1;  // each head, their mean
    ImGui::PushFont(fonts().small ? fonts().small : ImGui::GetFont());
    const float caption_w = std::max(ImGui::CalcTextSize((_("head ") + std::to_string(heads - 1)).c_str()).x,
                                     ImGui::CalcTextSize(_("mean")).x);
    const ui::SlideTiles size = ui::vit_slide_tiles(width, height, ImGui::GetTextLineHeightWithSpacing(),
                                                    ImGui::GetStyle().ItemSpacing.x, maps, caption_w);
    if (!size.fits) {
        ImGui::PopFont();
        return;
    }
    const std::uint64_t gen = ui.vit.generation;
    const Array& attn = t.blocks[block].attn();  // [1, h, N, N]
    constexpr std::size_t kClassToken = 0;
    ImGui::TextDisabled(_("class token's attention, block %zu"), block);
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", _("attn[0, h, 0, 1:] on the patch grid, each map scaled to its own max (yellow = most)"));
    for (std::size_t i = 0; i < maps; ++i) {
        const bool mean = i == heads;
        const ui::OverlayKey key =
            mean ? ui::OverlayKey::head_mean(gen, block, kClassToken) : ui::OverlayKey::head(gen, block, i, kClassToken);
        const std::uintptr_t tex = ui.pictures->texture(("vit/slide" + std::to_string(i + 1)).c_str(), key.str(), [&] {
            const Array map = mean ? fuse_heads(attn, 0, HeadFusion::mean) : head_attention(attn, 0, i);
            return heat_overlay(ui::overlay_backdrop(vit.input), token_map(map, kClassToken, t.grid));
        });
        ImGui::PushID(static_cast<int>(i));
        SlideTile(vit, ui, "##slide_map", mean ? std::string(_("mean")) : _("head ") + std::to_string(i), tex, size.tile, false,
                  i == 0 ? "slide:map" : nullptr);
        ImGui::PopID();
        if (i + 1 < maps && (i + 1) % size.per_row != 0) ImGui::SameLine();
    }
    ImGui::PopFont();
}

void DrawImagePanel(const VitSnapshot* vit, UiState& ui) {
    if (!ui.vit.on_screen && !ui.vit.loading) return;
    if (!ui.panels.image) return;
    PlaceWindow(ui, ui::Panel::Image);
    // The title names the model and the picture, or only the picture when the panel is too narrow for
    // both (its width on the last frame; the (i) tooltip names both).
    static float panel_w = 0.0f;
    std::string title = _("Image");
    if (vit) {
        const std::string picture = _("Image: ") + ui::display_name(vit->image_path);
        title = _("Image: ") + ui::display_name(vit->model_path) + _(" on ") + ui::display_name(vit->image_path);
        if (panel_w > 0.0f && ImGui::CalcTextSize(title.c_str()).x > panel_w - ImGui::GetFontSize() * 3.0f) title = picture;
    }
    // The scrollbar's room always kept: its coming and going (a caption one line longer) would
    // resize the pictures under the mouse.
    const bool open =
        ImGui::Begin((title + "###Image").c_str(), &ui.panels.image, ImGuiWindowFlags_AlwaysVerticalScrollbar);
    panel_w = ImGui::GetWindowWidth();
    if (!open) {
        ImGui::End();
        return;
    }
    if (!vit) {
        EmptyState(ui.vit.loading ? _("Running the ViT on the picture ...") : _("No ViT"),
                   _("attnscope --model MODEL.safetensors --image PICTURE.png shows what a Vision Transformer "
                      "predicts for a picture and where its attention goes."));
        ImGui::End();
        return;
    }
    const VitTrace& t = vit->trace;
    const PatchGrid& grid = t.grid;
    const std::size_t block = std::min(ui.vit.block, t.blocks.size() - 1);
    if (ui.vit.query >= grid.tokens()) ui.vit.query = 0;

    // The rollout's fusion, then the head count with where it came from (a state dict never says it);
    // the block is the menu bar's, and the query is named under the pictures, so picking one moves
    // nothing above them.
    ImGui::TextDisabled(_("rollout:"));
    ImGui::SameLine();
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 4.5f);
    int fusion = static_cast<int>(ui.vit.fusion);
    if (ImGui::Combo("##fusion", &fusion, "mean\0max\0min\0")) ui.vit.fusion = static_cast<HeadFusion>(fusion);
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip(
            _("attention rollout (Abnar & Zuidema 2020): per block the heads fused (mean, max or min),\n"
               "plus the identity for the residual, rows renormalized, multiplied over all blocks"));
    const std::string heads_from = ui::tr_message(vit->heads_from);
    char heads[256];
    std::snprintf(heads, sizeof heads, _("%zu heads (%s)"), vit->trained_config.heads,
                  vit->heads_from.code == Msg::heads_from_option ? _("chosen") : heads_from.c_str());
    const std::string facts = std::string(heads) + " (i)";
    SameLineIfFits(ImGui::CalcTextSize(facts.c_str()).x);
    ImGui::PushTextWrapPos(0.0f);
    ImGui::TextDisabled("%s", facts.c_str());
    ImGui::PopTextWrapPos();
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip(
            _("model: %s\npicture: %s (%zu x %zu)\n%zu blocks, dim %zu, %zu heads (%s), patch %zu, %zu x %zu input"),
            vit->model_path.c_str(), vit->image_path.c_str(), vit->source.width, vit->source.height,
            vit->trained_config.depth, vit->trained_config.dim, vit->trained_config.heads, heads_from.c_str(),
            vit->trained_config.patch_size, vit->trained_config.image_size, vit->trained_config.image_size);
    MarkItem(ui, "image:heads");

    if (ImGui::BeginTabBar("##image_tabs")) {
        // One tab: selected once when `select` asks for it (an experiment started from the command line).
        auto tab = [&](const char* label, const char* tooltip, bool* select, auto draw) {
            const ImGuiTabItemFlags flags = select && *select ? ImGuiTabItemFlags_SetSelected : 0;
            if (select) *select = false;
            if (ImGui::BeginTabItem(label, nullptr, flags)) {
                draw(*vit, ui, block);
                ImGui::EndTabItem();
            }
            if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", tooltip);
        };
        tab(_("Attention"), _("where one query token looks, per head, and the rollout"), nullptr, image::AttentionTab);
        tab(_("Positions"), _("why position embeddings matter: shuffle the patches with and without them"),
            &ui.vit.positions_tab, image::PositionsTab);
        tab(_("Drop path"), _("stochastic depth: which samples lost a block's branch, and LayerScale"),
            &ui.vit.drop_path_tab, image::DropPathTab);
        tab(_("Gradient flow"),
            _("check gradient flow: per block, ||grad|| of the predicted class's logit entering and leaving each branch"),
            nullptr, image::GradientFlowTab);
        ImGui::EndTabBar();
    }
    ImGui::End();
}

}  // namespace attnscope
