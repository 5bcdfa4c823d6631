// The Image panel's Attention tab: the picture as the model sees it (scaled up, patch grid), the
// prediction beside it, and where one query token looks: per head and their mean in the selected
// block, and the attention rollout over all blocks. Click a patch to make it the query.
#include <imgui.h>

#include <algorithm>
#include <cstdio>
#include <functional>

#include "attention_maps.hpp"
#include "fonts.hpp"
#include "gfx/rgb_textures.hpp"
#include "logic/vit_view.hpp"
#include "panels/image_tabs.hpp"
#include "panels/panels.hpp"
#include "widgets.hpp"

namespace attnscope::image {

namespace {

// The prediction: its title and the `classes` most likely classes, each with its bar.
void Prediction(const VitSnapshot& vit, float width, std::size_t classes, bool title_inline = false) {
    if (!vit.trace.has_head()) {
        ImGui::TextDisabled(_("no classifier"));
        if (ImGui::IsItemHovered())
            ImGui::SetTooltip(_("this checkpoint is the encoder alone (a Hugging Face ViTModel): it has no head, so no "
                                 "prediction; every block's attention is here"));
        return;
    }
    const auto top = ranked_classes(vit.trace.probs(), 0, classes, vit.labels);
    const char* title = vit.fresh_patch ? _("prediction (random weights: chance)") : _("prediction");
    if (title_inline) ImGui::AlignTextToFramePadding();  // one class on the title's row: "prediction  triangle [bar]"
    ImGui::TextColored(vit.fresh_patch ? WarnColor() : ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled), "%s", title);
    if (ImGui::IsItemHovered()) ImGui::SetTooltip(_("probs = softmax(head(norm(x)[:, 0])): the class token decides"));
    const float spacing = ImGui::GetStyle().ItemSpacing.x;
    float label_w = title_inline ? ImGui::CalcTextSize(title).x + spacing : 0.0f;
    float names_w = 0.0f;
    for (const ClassProb& c : top) names_w = std::max(names_w, ImGui::CalcTextSize(ui::tr_core(c.label)).x);
    label_w += names_w + spacing;
    for (std::size_t i = 0; i < top.size(); ++i) {
        const ClassProb& c = top[i];
        char pct[32];
        std::snprintf(pct, sizeof pct, "%.1f %%", 100.0 * c.prob);
        const bool best = i == 0 && !vit.fresh_patch;
        if (title_inline) ImGui::SameLine();
        else ImGui::AlignTextToFramePadding();
        if (best) ImGui::TextColored(OkColor(), "%s", ui::tr_core(c.label));
        else ImGui::TextUnformatted(ui::tr_core(c.label));
        ImGui::SameLine(label_w);  // drawn inside a group: the offset counts from the group's left edge
        if (best) ImGui::PushStyleColor(ImGuiCol_PlotHistogram, ImVec4(0.25f, 0.65f, 0.35f, 1.0f));
        ImGui::ProgressBar(c.prob, ImVec2(std::max(40.0f, width - label_w), 0), pct);
        if (best) ImGui::PopStyleColor();
    }
}

// The prediction under the strip, across the region (a group: its bars line up from its left edge).
void StackedPrediction(const VitSnapshot& vit, std::size_t classes) {
    ImGui::BeginGroup();
    Prediction(vit, ImGui::GetContentRegionAvail().x, classes, classes == 1);
    ImGui::EndGroup();
}

// The fresh-model slider: the same picture through a random ViT with patch 8, 16 or 32, or with a
// CNN stem (two 3x3 stride-2 convs: patch 4); shows N and the N^2 attention cost for the choice.
void PatchSlider(const VitSnapshot& vit, UiState& ui, float width) {
    const VitConfig& trained = vit.trained_config;
    const std::vector<std::size_t> sizes = ui::fresh_patch_sizes(trained.image_size);
    if (sizes.empty()) return;
    const std::size_t p_now = ui.pending_fresh_vit().first;
    bool fresh = p_now != 0;
    const float x_start = ImGui::GetCursorPosX();
    if (ImGui::Checkbox(_("random weights"), &fresh))
        ui.ask(command::FreshVit{fresh ? (std::find(sizes.begin(), sizes.end(), trained.patch_size) != sizes.end()
                                              ? trained.patch_size
                                              : sizes.front())
                                       : 0,
                                 std::nullopt});
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip(_("a fresh, untrained ViT (fresh_vit_model) of the same size on the same picture:\n"
                          "move the slider to see how the patch size changes the number of tokens N"));
    // The patch embedding: linear patches (the slider) or a CNN stem (with_cnn_stem).
    int embedding = (fresh ? ui.pending_fresh_vit().second : trained.has_stem()) ? 1 : 0;
    const bool stem = embedding == 1;
    const char* embeddings[] = {_("linear patches"), _("CNN stem")};
    ImGui::BeginDisabled(!fresh);
    // The combo with its label after it, beside the check box when both fit; under its label when
    // even the whole width is too narrow for the two.
    const float label_w = ImGui::CalcTextSize(_("patch embedding")).x + ImGui::GetStyle().ItemInnerSpacing.x;
    const float combo_w = ImGui::GetFontSize() * 8.0f;
    SameLineIfFits(combo_w + label_w);
    const bool label_above = width - label_w < combo_w;
    if (label_above) ImGui::TextDisabled("%s", _("patch embedding"));
    ImGui::SetNextItemWidth(label_above ? width : combo_w);
    if (ImGui::Combo(label_above ? "##embedding" : _("patch embedding"), &embedding, embeddings, 2)) {
        std::optional<std::size_t> patch;  // back to linear patches: the trained size, or the nearest
        if (embedding == 0)
            patch = std::find(sizes.begin(), sizes.end(), trained.patch_size) != sizes.end() ? trained.patch_size
                                                                                               : sizes.front();
        ui.ask(command::FreshVit{patch, embedding == 1});
    }
    ImGui::EndDisabled();
    if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
        ImGui::SetTooltip(_("linear patches: a stride-p conv cuts the picture into p x p patches (ViT)\n"
                          "CNN stem: conv 3x3 stride 2 -> BatchNorm -> ReLU, twice, then a 1x1 conv to D\n"
                          "(the ViT paper's hybrid): every position of its feature map is a token"));
    const std::size_t p_shown = fresh ? ui.pending_fresh_vit().first : trained.patch_size;
    int index = static_cast<int>(std::find(sizes.begin(), sizes.end(), p_shown) - sizes.begin());
    index = std::clamp(index, 0, static_cast<int>(sizes.size()) - 1);
    char format[32];
    std::snprintf(format, sizeof format, _("patch %zu"), sizes[static_cast<std::size_t>(index)]);
    if (stem) std::snprintf(format, sizeof format, "%s", _("stride 4 (CNN stem)"));
    SameLineIfFits(ImGui::GetFontSize() * 6.0f);  // the slider after the combo, or under it
    ImGui::BeginDisabled(!fresh || stem);
    ImGui::SetNextItemWidth(std::max(ImGui::GetFontSize() * 6.0f, width - (ImGui::GetCursorPosX() - x_start)));
    if (ImGui::SliderInt("##patch", &index, 0, static_cast<int>(sizes.size()) - 1, fresh ? format : _("patch (trained)"),
                         ImGuiSliderFlags_NoInput))
        ui.ask(command::FreshVit{sizes[static_cast<std::size_t>(index)], std::nullopt});
    ImGui::EndDisabled();
    VitConfig c = trained;
    if (fresh) {
        c.stem_channels.clear();
        c.patch_size = sizes[static_cast<std::size_t>(index)];
        if (stem) c = with_cnn_stem(c);
    }
    const std::size_t n = c.tokens();
    if (c.has_stem()) {  // where the grid comes from: C x H x W, the image halved once per stage
        std::size_t side = c.image_size;
        std::string chain = _("stem: ") + std::string("3x") + std::to_string(side) + "x" + std::to_string(side);
        for (const std::size_t ch : c.stem_channels) {
            side = (side + 1) / 2;
            chain += " -> " + std::to_string(ch) + "x" + std::to_string(side) + "x" + std::to_string(side);
        }
        WrappedTextF("%s -> %zuxD", chain.c_str(), c.patches());
    }
    ImGui::BeginGroup();
    WrappedTextF(_("N = (%zu/%zu)\u00b2+1 = %zu, N\u00b2 = %zu"), c.image_size, c.patch_size, n, n * n);
    ImGui::EndGroup();
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip(_("N tokens: (H/p)(W/p) patches + the class token.\n"
                          "Attention compares every token with every token: N\u00b2 = %zu weights per head and image,\n"
                          "so halving the patch size multiplies the cost by about 16."),
                          n * n);
}

// One of the Attention tab's maps: where the query looks in one head, the heads' mean, or the rollout.
struct AttentionMap {
    std::string title, tip;
    ui::OverlayKey key;
    std::function<Array()> map;  // [rows, cols] on the patch grid
};

AttentionMap AttentionMapAt(const VitTrace& t, const UiState& ui, std::size_t block, std::size_t i) {
    const std::size_t heads = t.config.heads, query = ui.vit.query;
    const std::uint64_t gen = ui.vit.generation;
    const Array& attn = t.blocks[block].attn();  // [1, h, N, N]
    const PatchGrid& grid = t.grid;
    AttentionMap m;
    if (i < heads) {
        m.title = _("head ") + std::to_string(i);
        m.key = ui::OverlayKey::head(gen, block, i, query);
        m.map = [&attn, &grid, i, query] { return token_map(head_attention(attn, 0, i), query, grid); };
        m.tip = "attn[0, " + std::to_string(i) + ", " + std::to_string(query) + _(", 1:] on the patch grid");
    } else if (i == heads) {
        m.title = _("mean of heads");
        m.key = ui::OverlayKey::head_mean(gen, block, query);
        m.map = [&attn, &grid, query] { return token_map(fuse_heads(attn, 0, HeadFusion::mean), query, grid); };
        m.tip = "attn[0, :, " + std::to_string(query) + _(", 1:].mean(heads) on the patch grid");
    } else {
        m.title = std::string(_("rollout (")) + head_fusion_name(ui.vit.fusion) + ")";
        m.key = ui::OverlayKey::rollout(gen, query, ui.vit.fusion);
        const HeadFusion fusion = ui.vit.fusion;
        m.map = [&t, &grid, query, fusion] {
            std::vector<const Array*> attns;
            for (const VitBlockTrace& b : t.blocks) attns.push_back(&b.attn());
            return token_map(attention_rollout(attns, 0, fusion), query, grid);
        };
        m.tip = _("attention rollout over all ") + std::to_string(t.blocks.size()) +
                _(" blocks: how much each patch reaches the query through the residual stream");
    }
    return m;
}

}  // namespace

// The picture and the selected map large, side by side, so single patches show even on a 14 x 14
// grid (the patch under the mouse is named under them); the prediction beside them; under them
// every map small (heads, their mean, the rollout): a click on one enlarges it.
void AttentionTab(const VitSnapshot& snapshot, UiState& ui, std::size_t block) {
    const VitSnapshot* vit = &snapshot;
    const VitTrace& t = vit->trace;
    const PatchGrid& grid = t.grid;
    const std::size_t n_maps = t.config.heads + 2;  // heads, their mean, the rollout
    ui.vit.map = std::min(ui.vit.map, n_maps - 1);
    const ImGuiStyle& style = ImGui::GetStyle();
    const ImVec2 avail = ImGui::GetContentRegionAvail();
    const float line = ImGui::GetTextLineHeightWithSpacing();
    // The prediction column: its title and up to 5 classes; narrower in a narrow panel (its bars
    // shrink), so the pictures keep some of the width. The fresh-model controls go under the strip.
    const float right = ImGui::GetFontSize() * (avail.x < ImGui::GetFontSize() * 40.0f ? 10.0f : 13.0f);
    // Up to 5 classes, fewer in a short region: the column beside the squares leaves the caption and
    // one row of small maps (at their smallest) under it. Fewer still when that is what keeps the
    // squares at a third of the panel's height.
    const float row_h = ImGui::GetFrameHeightWithSpacing();
    const float strip_min = 2.0f * line + 2.0f * style.ItemSpacing.y + 28.0f + style.ItemSpacing.y;
    const std::size_t fit = static_cast<std::size_t>(std::max(avail.y - strip_min - row_h, row_h) / row_h);
    const std::size_t most =
        t.has_head() ? std::clamp<std::size_t>(std::min<std::size_t>(t.probs().shape()[1], fit), 1, 5) : 0;
    const float min_side = std::floor(ImGui::GetWindowHeight() / 3.0f);
    auto arrange = [&](std::size_t classes) {
        const float beside = static_cast<float>(classes + 1) * row_h;  // the title's row, then one per class
        return ui::attention_tab_sizes(avail.x, avail.y, line, style.ItemSpacing.x, right + style.ItemSpacing.x, beside,
                                       n_maps, min_side, classes == 1 ? row_h : beside);
    };
    std::size_t classes = most;
    ui::AttentionTabSizes size = arrange(classes);
    for (std::size_t k = most > 0 ? most - 1 : 0; k >= 1 && size.side < min_side; --k) {
        const ui::AttentionTabSizes fewer = arrange(k);
        if (fewer.side > size.side) {
            size = fewer;
            classes = k;
        }
    }

    gfx::RgbTextures* pics = ui.pictures;
    auto texture = [&](const ui::OverlayKey& key, const char* slot, const std::function<RgbImage()>& make) {
        return pics ? pics->texture(slot, key.str(), make) : std::uintptr_t{0};
    };
    auto overlay = [&](const AttentionMap& m, const std::string& slot) {
        return texture(m.key, slot.c_str(), [&] { return heat_overlay(ui::overlay_backdrop(vit->input), m.map()); });
    };
    std::optional<ui::PatchPick> hovered;

    // The picture and the selected map, each under its title.
    const std::uintptr_t picture =
        texture(ui::OverlayKey::picture(ui.vit.generation), "vit/picture", [&] { return vit->input; });
    ImGui::BeginGroup();
    ImGui::TextDisabled("%s", _("picture"));
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", _("click a patch: where it looks; right-click: the class token"));
    ClickablePicture("##picture", picture, size.side, grid, true, ui, &hovered);
    MarkItem(ui, "image:picture");
    ImGui::EndGroup();
    ImGui::SameLine();
    const AttentionMap large = AttentionMapAt(t, ui, block, ui.vit.map);
    ImGui::BeginGroup();
    ImGui::TextUnformatted(large.title.c_str());
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", large.tip.c_str());
    ClickablePicture("##large", overlay(large, "vit/large"), size.side, grid, true, ui, &hovered);
    ImGui::EndGroup();
    if (!size.stacked) {
        ImGui::SameLine();
        ImGui::BeginGroup();
        Prediction(*vit, std::max(80.0f, ImGui::GetContentRegionAvail().x), classes);
        ImGui::EndGroup();
    }

    // The patch under the mouse, else what the maps show; the way back to the class token first.
    ImGui::BeginGroup();
    if (ui.vit.query != 0) {
        if (ImGui::SmallButton(_("class token"))) ui.vit.query = 0;
        if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", _("the class token as the query again (or right-click the picture)"));
        ImGui::SameLine();
    }
    if (hovered) {
        WrappedText(PatchName(grid, *hovered).c_str());
    } else {
        char caption[256];
        std::snprintf(caption, sizeof caption, _("where the %s looks in block %zu (yellow = most)"),
                      ui::query_name(ui.vit.query, grid).c_str(), block);
        WrappedText(DimColor(), caption);
    }
    ImGui::EndGroup();
    if (!hovered && ImGui::IsItemHovered())
        ImGui::SetTooltip(_("each map is the query's row of attn over the patches, scaled to its own max;\n"
                             "click a small map to show it large, a patch to make it the query, right-click for the "
                             "class token.\nFile > Back to the demo / config leaves the ViT."));

    // A short region: every map as a button (the large square shows the one chosen).
    if (size.buttons) {
        for (std::size_t i = 0; i < n_maps; ++i) {
            const AttentionMap m = AttentionMapAt(t, ui, block, i);
            const std::string label = i < t.config.heads ? std::to_string(i) : i == t.config.heads ? _("mean") : _("rollout");
            if (i > 0) SameLineIfFits(ButtonWidth(label.c_str()));
            const bool chosen = i == ui.vit.map;
            if (chosen) ImGui::PushStyleColor(ImGuiCol_Button, ImGui::GetStyleColorVec4(ImGuiCol_ButtonActive));
            ImGui::PushID(static_cast<int>(i));
            if (ImGui::SmallButton(label.c_str())) ui.vit.map = i;
            ImGui::PopID();
            if (chosen) ImGui::PopStyleColor();
            if (ImGui::IsItemHovered()) ImGui::SetTooltip(_("%s: %s\nclick: show it large"), m.title.c_str(), m.tip.c_str());
        }
        if (size.stacked) StackedPrediction(*vit, classes);
        PatchSlider(*vit, ui, ImGui::GetContentRegionAvail().x);
        return;
    }

    // Every map small; the enlarged one outlined.
    ImGui::PushFont(fonts().small ? fonts().small : ImGui::GetFont());
    for (std::size_t i = 0; i < n_maps; ++i) {
        const AttentionMap m = AttentionMapAt(t, ui, block, i);
        const std::uintptr_t tex = overlay(m, "vit/overlay" + std::to_string(i));
        // The title within the tile's width (the tooltip has it whole), so the strip keeps its columns:
        // a short name, in a smaller font when even that is wider than the tile.
        ImGui::BeginGroup();
        ImDrawList* dl = ImGui::GetWindowDrawList();
        const ImVec2 t0 = ImGui::GetCursorScreenPos();
        const ImVec4 clip(t0.x, t0.y, t0.x + size.tile, t0.y + line);
        const std::string title = ImGui::CalcTextSize(m.title.c_str()).x <= size.tile ? m.title
                                  : i < t.config.heads                               ? std::to_string(i)
                                  : i == t.config.heads                              ? _("mean")
                                                                                     : _("rollout");
        const float title_w = ImGui::CalcTextSize(title.c_str()).x;
        const float title_size = ImGui::GetFontSize() * std::max(0.6f, std::min(1.0f, size.tile / std::max(title_w, 1.0f)));
        dl->AddText(ImGui::GetFont(), title_size, t0, ImGui::GetColorU32(ImGuiCol_Text), title.c_str(), nullptr, 0.0f, &clip);
        const ImVec2 p0(t0.x, t0.y + ImGui::GetTextLineHeight());
        ImGui::PushID(static_cast<int>(i));
        ImGui::SetCursorScreenPos(p0);
        if (ImGui::InvisibleButton("##small", ImVec2(size.tile, size.tile))) ui.vit.map = i;
        ImGui::PopID();
        const ImVec2 p1 = Add(p0, ImVec2(size.tile, size.tile));
        if (tex) dl->AddImage(Tex(tex), p0, p1);
        dl->AddRect(p0, p1, i == ui.vit.map ? IM_COL32(255, 255, 255, 255) : IM_COL32(255, 255, 255, 60), 0.0f, 0,
                    i == ui.vit.map ? 2.0f : 1.0f);
        if (ImGui::IsItemHovered()) ImGui::SetTooltip(_("%s: %s\nclick: show it large"), m.title.c_str(), m.tip.c_str());
        ImGui::EndGroup();
        if (i + 1 < n_maps && (i + 1) % size.per_row != 0) ImGui::SameLine();
    }
    ImGui::PopFont();
    if (size.stacked) StackedPrediction(*vit, classes);
    PatchSlider(*vit, ui, ImGui::GetContentRegionAvail().x);
}

}  // namespace attnscope::image
