// Image panel: the ViT on its picture. The "Attention" tab: the picture as the model sees it (scaled
// up, patch grid), the prediction beside it, and where one query token looks: per head and their
// mean in the selected block, and the attention rollout over all blocks. Click a patch to make it
// the query. The "Positions" tab: the experiment of core/vit/positions.hpp (shuffled patches, with
// and without position embeddings). The "Drop path" tab: timm's stochastic depth (DropPath) and
// LayerScale in the blocks: per block and branch, which samples lost their branch.
// Everything is read from the VitSnapshot; overlays are made once per (block, query, fusion).
#include <imgui.h>

#include <algorithm>
#include <cstdio>
#include <functional>

#include "about.hpp"
#include "attention_maps.hpp"
#include "logic/engine_runner.hpp"
#include "fonts.hpp"
#include "gfx/rgb_textures.hpp"
#include "logic/drop_path_view.hpp"
#include "logic/file_browser.hpp"
#include "logic/position_view.hpp"
#include "logic/vit_view.hpp"
#include "panels/panels.hpp"
#include "widgets.hpp"

namespace attnscope {

namespace {

ImTextureID Tex(std::uintptr_t id) { return reinterpret_cast<ImTextureID>(id); }

ImVec2 Add(ImVec2 a, ImVec2 b) { return ImVec2(a.x + b.x, a.y + b.y); }

// The rectangle of patch (row, col) on a picture drawn at p0 with side `side`.
void PatchRect(const PatchGrid& grid, ImVec2 p0, float side, ui::PatchPick p, ImVec2* a, ImVec2* b) {
    const float cw = side / static_cast<float>(grid.cols), ch = side / static_cast<float>(grid.rows);
    *a = ImVec2(p0.x + cw * static_cast<float>(p.col), p0.y + ch * static_cast<float>(p.row));
    *b = ImVec2(a->x + cw, a->y + ch);
}

std::optional<ui::PatchPick> QueryPatch(std::size_t token, const PatchGrid& grid) {
    if (token < grid.prefix || token >= grid.tokens() || grid.cols == 0) return std::nullopt;
    return ui::PatchPick{(token - grid.prefix) / grid.cols, (token - grid.prefix) % grid.cols};
}

// A square picture the user can click: hover outlines a patch and names it under the pictures, a
// click makes it the query, a right-click goes back to the class token.
void ClickablePicture(const char* id, std::uintptr_t tex, float side, const PatchGrid& grid, bool grid_lines,
                      UiState& ui, std::optional<ui::PatchPick>* hovered_patch) {
    const ImVec2 p0 = ImGui::GetCursorScreenPos();
    ImGui::InvisibleButton(id, ImVec2(side, side), ImGuiButtonFlags_MouseButtonLeft | ImGuiButtonFlags_MouseButtonRight);
    const bool hovered = ImGui::IsItemHovered();
    ImDrawList* dl = ImGui::GetWindowDrawList();
    const ImVec2 p1 = Add(p0, ImVec2(side, side));
    if (tex) dl->AddImage(Tex(tex), p0, p1);
    for (std::size_t i = 1; grid_lines && i < std::max(grid.rows, grid.cols); ++i) {
        if (i < grid.cols) {
            const float x = p0.x + side * static_cast<float>(i) / static_cast<float>(grid.cols);
            dl->AddLine(ImVec2(x, p0.y), ImVec2(x, p1.y), IM_COL32(255, 255, 255, 70));
        }
        if (i < grid.rows) {
            const float y = p0.y + side * static_cast<float>(i) / static_cast<float>(grid.rows);
            dl->AddLine(ImVec2(p0.x, y), ImVec2(p1.x, y), IM_COL32(255, 255, 255, 70));
        }
    }
    ImVec2 a, b;
    if (const auto q = QueryPatch(ui.vit_query, grid)) {
        PatchRect(grid, p0, side, *q, &a, &b);
        dl->AddRect(a, b, IM_COL32(0, 230, 255, 255), 0.0f, 0, 2.0f);
    }
    dl->AddRect(p0, p1, IM_COL32(255, 255, 255, 60));
    if (!hovered) return;
    const ImVec2 m = ImGui::GetIO().MousePos;
    if (const auto p = ui::patch_at(m.x - p0.x, m.y - p0.y, side, side, grid)) {
        PatchRect(grid, p0, side, *p, &a, &b);
        dl->AddRect(a, b, IM_COL32(255, 255, 255, 220), 0.0f, 0, 1.5f);
        *hovered_patch = p;
        if (ImGui::IsItemClicked(ImGuiMouseButton_Left)) ui.vit_query = grid.token(p->row, p->col);
    }
    if (ImGui::IsItemClicked(ImGuiMouseButton_Right)) ui.vit_query = 0;
}

// The prediction: its title and the `classes` most likely classes, each with its bar.
void Prediction(const VitSnapshot& vit, float width, std::size_t classes, bool title_inline = false) {
    if (!vit.trace.has_head()) {
        ImGui::TextDisabled(tr("no classifier"));
        if (ImGui::IsItemHovered())
            ImGui::SetTooltip(tr("this checkpoint is the encoder alone (a Hugging Face ViTModel): it has no head, so no "
                                 "prediction; every block's attention is here"));
        return;
    }
    const auto top = ranked_classes(vit.trace.probs(), 0, classes, vit.labels);
    const char* title = vit.fresh_patch ? tr("prediction (random weights: chance)") : tr("prediction");
    if (title_inline) ImGui::AlignTextToFramePadding();  // one class on the title's row: "prediction  triangle [bar]"
    ImGui::TextColored(vit.fresh_patch ? WarnColor() : ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled), "%s", title);
    if (ImGui::IsItemHovered()) ImGui::SetTooltip(tr("probs = softmax(head(norm(x)[:, 0])): the class token decides"));
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
    const std::size_t p_now = ui.vit_patch_request.value_or(ui.vit_patch);
    bool fresh = p_now != 0;
    const float x_start = ImGui::GetCursorPosX();
    if (ImGui::Checkbox(tr("random weights"), &fresh))
        ui.vit_patch_request = fresh ? (std::find(sizes.begin(), sizes.end(), trained.patch_size) != sizes.end()
                                            ? trained.patch_size
                                            : sizes.front())
                                     : 0;
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip(tr("a fresh, untrained ViT (fresh_vit_model) of the same size on the same picture:\n"
                          "move the slider to see how the patch size changes the number of tokens N"));
    // The patch embedding: linear patches (the slider) or a CNN stem (with_cnn_stem).
    int embedding = (fresh ? ui.vit_stem_request.value_or(ui.vit_stem) : trained.has_stem()) ? 1 : 0;
    const bool stem = embedding == 1;
    const char* embeddings[] = {tr("linear patches"), tr("CNN stem")};
    ImGui::BeginDisabled(!fresh);
    // The combo with its label after it, beside the check box when both fit; under its label when
    // even the whole width is too narrow for the two.
    const float label_w = ImGui::CalcTextSize(tr("patch embedding")).x + ImGui::GetStyle().ItemInnerSpacing.x;
    const float combo_w = ImGui::GetFontSize() * 8.0f;
    SameLineIfFits(combo_w + label_w);
    const bool label_above = width - label_w < combo_w;
    if (label_above) ImGui::TextDisabled("%s", tr("patch embedding"));
    ImGui::SetNextItemWidth(label_above ? width : combo_w);
    if (ImGui::Combo(label_above ? "##embedding" : tr("patch embedding"), &embedding, embeddings, 2)) {
        ui.vit_stem_request = embedding == 1;
        if (embedding == 0)
            ui.vit_patch_request = std::find(sizes.begin(), sizes.end(), trained.patch_size) != sizes.end()
                                       ? trained.patch_size
                                       : sizes.front();
    }
    ImGui::EndDisabled();
    if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
        ImGui::SetTooltip(tr("linear patches: a stride-p conv cuts the picture into p x p patches (ViT)\n"
                          "CNN stem: conv 3x3 stride 2 -> BatchNorm -> ReLU, twice, then a 1x1 conv to D\n"
                          "(the ViT paper's hybrid): every position of its feature map is a token"));
    const std::size_t p_shown = fresh ? ui.vit_patch_request.value_or(ui.vit_patch) : trained.patch_size;
    int index = static_cast<int>(std::find(sizes.begin(), sizes.end(), p_shown) - sizes.begin());
    index = std::clamp(index, 0, static_cast<int>(sizes.size()) - 1);
    char format[32];
    std::snprintf(format, sizeof format, tr("patch %zu"), sizes[static_cast<std::size_t>(index)]);
    if (stem) std::snprintf(format, sizeof format, "%s", tr("stride 4 (CNN stem)"));
    SameLineIfFits(ImGui::GetFontSize() * 6.0f);  // the slider after the combo, or under it
    ImGui::BeginDisabled(!fresh || stem);
    ImGui::SetNextItemWidth(std::max(ImGui::GetFontSize() * 6.0f, width - (ImGui::GetCursorPosX() - x_start)));
    if (ImGui::SliderInt("##patch", &index, 0, static_cast<int>(sizes.size()) - 1, fresh ? format : tr("patch (trained)"),
                         ImGuiSliderFlags_NoInput))
        ui.vit_patch_request = sizes[static_cast<std::size_t>(index)];
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
        std::string chain = tr("stem: ") + std::string("3x") + std::to_string(side) + "x" + std::to_string(side);
        for (const std::size_t ch : c.stem_channels) {
            side = (side + 1) / 2;
            chain += " -> " + std::to_string(ch) + "x" + std::to_string(side) + "x" + std::to_string(side);
        }
        WrappedTextF("%s -> %zuxD", chain.c_str(), c.patches());
    }
    ImGui::BeginGroup();
    WrappedTextF(tr("N = (%zu/%zu)\u00b2+1 = %zu, N\u00b2 = %zu"), c.image_size, c.patch_size, n, n * n);
    ImGui::EndGroup();
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip(tr("N tokens: (H/p)(W/p) patches + the class token.\n"
                          "Attention compares every token with every token: N\u00b2 = %zu weights per head and image,\n"
                          "so halving the patch size multiplies the cost by about 16."),
                          n * n);
}

// "patch row 7, column 9 = token 108 (pixels [112, 128) x [144, 160))"
std::string PatchName(const PatchGrid& grid, ui::PatchPick p) {
    char text[256];
    std::snprintf(text, sizeof text, tr("patch row %zu, column %zu = token %zu (pixels [%zu, %zu) x [%zu, %zu))"), p.row,
                  p.col, grid.token(p.row, p.col), p.row * grid.patch, (p.row + 1) * grid.patch, p.col * grid.patch,
                  (p.col + 1) * grid.patch);
    return text;
}

// One of the Attention tab's maps: where the query looks in one head, the heads' mean, or the rollout.
struct AttentionMap {
    std::string title, tip;
    ui::OverlayKey key;
    std::function<Array()> map;  // [rows, cols] on the patch grid
};

AttentionMap AttentionMapAt(const VitTrace& t, const UiState& ui, std::size_t block, std::size_t i) {
    const std::size_t heads = t.config.heads, query = ui.vit_query;
    const std::uint64_t gen = ui.vit_generation;
    const Array& attn = t.blocks[block].attn();  // [1, h, N, N]
    const PatchGrid& grid = t.grid;
    AttentionMap m;
    if (i < heads) {
        m.title = tr("head ") + std::to_string(i);
        m.key = ui::OverlayKey::head(gen, block, i, query);
        m.map = [&attn, &grid, i, query] { return token_map(head_attention(attn, 0, i), query, grid); };
        m.tip = "attn[0, " + std::to_string(i) + ", " + std::to_string(query) + tr(", 1:] on the patch grid");
    } else if (i == heads) {
        m.title = tr("mean of heads");
        m.key = ui::OverlayKey::head_mean(gen, block, query);
        m.map = [&attn, &grid, query] { return token_map(fuse_heads(attn, 0, HeadFusion::mean), query, grid); };
        m.tip = "attn[0, :, " + std::to_string(query) + tr(", 1:].mean(heads) on the patch grid");
    } else {
        m.title = std::string(tr("rollout (")) + head_fusion_name(ui.vit_fusion) + ")";
        m.key = ui::OverlayKey::rollout(gen, query, ui.vit_fusion);
        const HeadFusion fusion = ui.vit_fusion;
        m.map = [&t, &grid, query, fusion] {
            std::vector<const Array*> attns;
            for (const VitBlockTrace& b : t.blocks) attns.push_back(&b.attn());
            return token_map(attention_rollout(attns, 0, fusion), query, grid);
        };
        m.tip = tr("attention rollout over all ") + std::to_string(t.blocks.size()) +
                tr(" blocks: how much each patch reaches the query through the residual stream");
    }
    return m;
}

// The picture and the selected map large, side by side, so single patches show even on a 14 x 14
// grid (the patch under the mouse is named under them); the prediction beside them; under them
// every map small (heads, their mean, the rollout): a click on one enlarges it.
void AttentionTab(const VitSnapshot& snapshot, UiState& ui, std::size_t block) {
    const VitSnapshot* vit = &snapshot;
    const VitTrace& t = vit->trace;
    const PatchGrid& grid = t.grid;
    const std::size_t n_maps = t.config.heads + 2;  // heads, their mean, the rollout
    ui.vit_map = std::min(ui.vit_map, n_maps - 1);
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
        texture(ui::OverlayKey::picture(ui.vit_generation), "vit/picture", [&] { return vit->input; });
    ImGui::BeginGroup();
    ImGui::TextDisabled("%s", tr("picture"));
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", tr("click a patch: where it looks; right-click: the class token"));
    ClickablePicture("##picture", picture, size.side, grid, true, ui, &hovered);
    MarkItem(ui, "image:picture");
    ImGui::EndGroup();
    ImGui::SameLine();
    const AttentionMap large = AttentionMapAt(t, ui, block, ui.vit_map);
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
    if (ui.vit_query != 0) {
        if (ImGui::SmallButton(tr("class token"))) ui.vit_query = 0;
        if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", tr("the class token as the query again (or right-click the picture)"));
        ImGui::SameLine();
    }
    if (hovered) {
        WrappedText(PatchName(grid, *hovered).c_str());
    } else {
        char caption[256];
        std::snprintf(caption, sizeof caption, tr("where the %s looks in block %zu (yellow = most)"),
                      ui::query_name(ui.vit_query, grid).c_str(), block);
        WrappedText(DimColor(), caption);
    }
    ImGui::EndGroup();
    if (!hovered && ImGui::IsItemHovered())
        ImGui::SetTooltip(tr("each map is the query's row of attn over the patches, scaled to its own max;\n"
                             "click a small map to show it large, a patch to make it the query, right-click for the "
                             "class token.\nFile > Back to the demo / config leaves the ViT."));

    // A short region: every map as a button (the large square shows the one chosen).
    if (size.buttons) {
        for (std::size_t i = 0; i < n_maps; ++i) {
            const AttentionMap m = AttentionMapAt(t, ui, block, i);
            const std::string label = i < t.config.heads ? std::to_string(i) : i == t.config.heads ? tr("mean") : tr("rollout");
            if (i > 0) SameLineIfFits(ButtonWidth(label.c_str()));
            const bool chosen = i == ui.vit_map;
            if (chosen) ImGui::PushStyleColor(ImGuiCol_Button, ImGui::GetStyleColorVec4(ImGuiCol_ButtonActive));
            ImGui::PushID(static_cast<int>(i));
            if (ImGui::SmallButton(label.c_str())) ui.vit_map = i;
            ImGui::PopID();
            if (chosen) ImGui::PopStyleColor();
            if (ImGui::IsItemHovered()) ImGui::SetTooltip(tr("%s: %s\nclick: show it large"), m.title.c_str(), m.tip.c_str());
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
                                  : i == t.config.heads                              ? tr("mean")
                                                                                     : tr("rollout");
        const float title_w = ImGui::CalcTextSize(title.c_str()).x;
        const float title_size = ImGui::GetFontSize() * std::max(0.6f, std::min(1.0f, size.tile / std::max(title_w, 1.0f)));
        dl->AddText(ImGui::GetFont(), title_size, t0, ImGui::GetColorU32(ImGuiCol_Text), title.c_str(), nullptr, 0.0f, &clip);
        const ImVec2 p0(t0.x, t0.y + ImGui::GetTextLineHeight());
        ImGui::PushID(static_cast<int>(i));
        ImGui::SetCursorScreenPos(p0);
        if (ImGui::InvisibleButton("##small", ImVec2(size.tile, size.tile))) ui.vit_map = i;
        ImGui::PopID();
        const ImVec2 p1 = Add(p0, ImVec2(size.tile, size.tile));
        if (tex) dl->AddImage(Tex(tex), p0, p1);
        dl->AddRect(p0, p1, i == ui.vit_map ? IM_COL32(255, 255, 255, 255) : IM_COL32(255, 255, 255, 60), 0.0f, 0,
                    i == ui.vit_map ? 2.0f : 1.0f);
        if (ImGui::IsItemHovered()) ImGui::SetTooltip(tr("%s: %s\nclick: show it large"), m.title.c_str(), m.tip.c_str());
        ImGui::EndGroup();
        if (i + 1 < n_maps && (i + 1) % size.per_row != 0) ImGui::SameLine();
    }
    ImGui::PopFont();
    if (size.stacked) StackedPrediction(*vit, classes);
    PatchSlider(*vit, ui, ImGui::GetContentRegionAvail().x);
}

// One captioned picture of a row of the position experiment; its tooltip says what it shows.
void CaptionedImage(const char* caption, std::uintptr_t tex, float side, const std::string& tip) {
    ImGui::BeginGroup();
    ImGui::TextUnformatted(caption);
    if (tex)
        ImGui::Image(Tex(tex), ImVec2(side, side));
    else
        ImGui::Dummy(ImVec2(side, side));
    ImGui::EndGroup();
    if (ImGui::IsItemHovered() && !tip.empty()) ImGui::SetTooltip("%s", tip.c_str());
}

// The controls of the experiment; a change asks the frame loop for the run (it never recomputes here).
void PositionControls(const VitSnapshot& vit, UiState& ui) {
    const bool fresh = vit.fresh_patch != 0;
    ImGui::BeginDisabled(fresh);
    bool pos = ui.vit_pos_embed, shuffle = ui.vit_shuffle;
    std::uint64_t seed = ui.vit_shuffle_seed;
    bool changed = ImGui::Checkbox(tr("position embeddings"), &pos);
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip(
            tr("x = x + self.pos_embed: every token is added the embedding of its place.\n"
               "Untick to run the checkpoint with pos_embed set to zeros (model.pos_embed.zero_())."));
    SameLineIfFits(ImGui::GetFrameHeight() + ImGui::CalcTextSize(tr("shuffle patches")).x + 8.0f);
    changed |= ImGui::Checkbox(tr("shuffle patches"), &shuffle);
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip(
            tr("also run the model on the picture with its patches shuffled: shuffled patch i shows "
               "original patch order[i]\n(the seed's Fisher-Yates shuffle, as attnscope vit "
               "--shuffle-patches SEED)"));
    SameLineIfFits(ImGui::CalcTextSize(tr("seed")).x + ImGui::GetFontSize() * 6.5f);
    ImGui::BeginDisabled(!shuffle);
    ImGui::TextDisabled(tr("seed"));
    ImGui::SameLine();
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 6.0f);
    const std::uint64_t one = 1;
    changed |= ImGui::InputScalar("##seed", ImGuiDataType_U64, &seed, &one, nullptr, "%llu");
    ImGui::EndDisabled();
    ImGui::EndDisabled();
    if (fresh) {
        ImGui::SameLine();
        ImGui::TextColored(WarnColor(), tr("(the checkpoint only: untick random weights)"));
    }
    if (changed) {
        ui.vit_pos_embed = pos;
        ui.vit_shuffle = shuffle;
        ui.vit_shuffle_seed = seed;
        ui.vit_position_request = ui::position_choice(pos, shuffle, seed);
    }
}

// The held-out accuracy with and without position embeddings, as is and shuffled (PyTorch's
// measurement beside the checkpoint; tests/test_positions.cpp checks attnscope counts the same).
void AccuracyTable(const VitSnapshot& vit) {
    if (!vit.accuracy_error.empty()) {
        ImGui::TextColored(WarnColor(), "%s", ui::tr_core(vit.accuracy_error));
        return;
    }
    if (!vit.accuracy) return;
    const PositionAccuracy& a = *vit.accuracy;
    ImGui::TextDisabled(tr("held-out accuracy (%zu images; shuffled: seed %llu for every image)"), a.images,
                        static_cast<unsigned long long>(a.seed));
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip(tr("measured with PyTorch by tools/make_position_fixtures.py (%s);\n"
                             "tests/test_positions.cpp runs attnscope on the same images and gets the same counts"),
                          a.source.c_str());
    if (!ImGui::BeginTable("##accuracy", 3, ImGuiTableFlags_Borders | ImGuiTableFlags_SizingFixedFit)) return;
    ImGui::TableSetupColumn("");
    ImGui::TableSetupColumn(tr("as is"));
    ImGui::TableSetupColumn(tr("patches shuffled"));
    ImGui::TableHeadersRow();
    const char* rows[2] = {tr("with position embeddings"), tr("without")};
    for (int p = 0; p < 2; ++p) {
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(rows[p]);
        for (int s = 0; s < 2; ++s) {
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(ui::accuracy_text(a.correct[p][s], a.images).c_str());
            if (ImGui::IsItemHovered())
                ImGui::SetTooltip(tr("mean probability of the true class: %.6f"), a.true_class_prob[p][s]);
        }
    }
    ImGui::EndTable();
}

// What the table says (ui::position_lesson), and the other demo model to compare with: the one whose
// answer needs the positions, or the one whose answer does not. It opens on the picture on screen.
void PositionLessonLine(const VitSnapshot& vit, UiState& ui) {
    if (!vit.accuracy) return;
    const bool needed = ui::position_lesson(*vit.accuracy) == ui::PositionLesson::needed;
    WrappedText(needed ? tr("This model must know where each patch is: without position embeddings, or with the "
                            "patches shuffled, it falls towards chance.")
                       : tr("This model's answer does not depend on where things are: it is as accurate without "
                            "position embeddings and on shuffled patches."));
    const std::string other = needed ? demo_model_path() : where_model_path();
    if (other == vit.model_path || !(needed ? demo_model_installed() : where_model_installed())) return;
    if (ImGui::SmallButton(needed ? tr("Open the demo model (what is the red shape?)")
                                  : tr("Open the position-task model (where is the red shape?)"))) {
        ui.open_request = other;
        ui.open_block.reset();
        ui.open_heads.reset();
    }
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", other.c_str());
}

// The experiment: the picture and its shuffled patches with the class token's attention, the
// block's attention matrices side by side (the shuffled run's also with its tokens put back), the
// predictions, the measured difference and the held-out table. Everything is read from the snapshot.
void PositionsTab(const VitSnapshot& vit, UiState& ui, std::size_t block) {
    PositionControls(vit, ui);
    const VitTrace& t = vit.trace;
    const PositionExperiment* e = vit.fresh_patch == 0 ? vit.shuffled.get() : nullptr;
    gfx::RgbTextures* pics = ui.pictures;
    const std::string gen = std::to_string(ui.vit_generation) + "/" + std::to_string(block);
    auto texture = [&](const char* slot, const std::string& key, const std::function<RgbImage()>& make) {
        return pics ? pics->texture(slot, key, make) : std::uintptr_t{0};
    };
    const Array& attn = t.blocks[block].attn();                // [1, h, N, N]
    const Array mean = fuse_heads(attn, 0, HeadFusion::mean);  // [N, N]

    ImGui::PushFont(fonts().small ? fonts().small : ImGui::GetFont());
    // One row: where the class token looks on the picture (and on its shuffled patches), then the
    // block's attention matrix as is (shuffled, and shuffled with its tokens put back). Under it:
    // the captions, 9 lines of text and the table's 3 rows.
    const ImGuiStyle& style = ImGui::GetStyle();
    const float images = e ? 5.0f : 2.0f;
    const float width = ImGui::GetContentRegionAvail().x;
    const float line = ImGui::GetTextLineHeightWithSpacing();
    const float below = 11.0f * line + 3.0f * (ImGui::GetTextLineHeight() + 2.0f * style.CellPadding.y + 1.0f);
    const float tile = std::clamp(
        std::min((width - (images - 1.0f) * style.ItemSpacing.x) / images, ImGui::GetContentRegionAvail().y - below),
        48.0f, 200.0f);
    ImGui::TextDisabled(tr("block %zu, mean of heads (hover a map: what it shows)"), block);
    CaptionedImage(tr("as is"),
                   texture("vit/pos_picture", gen + "/picture",
                           [&] { return heat_overlay(ui::overlay_backdrop(vit.input), token_map(mean, 0, t.grid)); }),
                   tile, tr("where the class token looks on the picture as is: attn[0, :, 0, 1:].mean(heads)"));
    if (e) {
        const Array mean_s = fuse_heads(e->shuffled.blocks[block].attn(), 0, HeadFusion::mean);  // [N, N]
        const std::string key = gen + "/" + std::to_string(e->seed);
        ImGui::SameLine();
        CaptionedImage(tr("shuffled"),
                       texture("vit/pos_shuffled", key,
                               [&] {
                                   return heat_overlay(ui::overlay_backdrop(vit.shuffled_input),
                                                       token_map(mean_s, 0, e->shuffled.grid));
                               }),
                       tile, tr("the same model on the shuffled picture: the heat moves with the patches"));
        ImGui::SameLine();
        CaptionedImage(tr("attn"), texture("vit/pos_attn", key, [&] { return ui::attention_matrix_image(mean, 1); }),
                       tile,
                       tr("attn[0, :].mean(heads) on the picture as is: rows are queries, columns keys, the class "
                          "token first"));
        ImGui::SameLine();
        CaptionedImage(tr("attn, shuffled"),
                       texture("vit/pos_attn_shuffled", key, [&] { return ui::attention_matrix_image(mean_s, 1); }),
                       tile, tr("the shuffled run's attention: rows and columns in the shuffled order"));
        ImGui::SameLine();
        CaptionedImage(
            tr("put back"),
            texture(
                "vit/pos_attn_back", key,
                [&] { return ui::attention_matrix_image(ui::unshuffle_tokens(mean_s, e->order, t.grid.prefix), 1); }),
            tile,
            tr("the shuffled run's rows and columns moved back to the picture's order:\n"
               "without position embeddings it is the attn map as is"));
    } else {
        ImGui::SameLine();
        CaptionedImage(tr("attn"),
                       texture("vit/pos_attn", gen + "/attn", [&] { return ui::attention_matrix_image(mean, 1); }),
                       tile, tr("attn[0, :].mean(heads) on the picture as is"));
    }

    // The prediction for both pictures, the measured difference, what it means.
    if (t.has_head()) {
        ImGui::TextDisabled(vit.positions.pos_embed ? tr("prediction (with position embeddings)")
                                                    : tr("prediction (without position embeddings)"));
        const ClassProb as_is = ranked_classes(t.probs(), 0, 1, vit.labels).front();
        ImGui::Text(tr("as is: %s  %.4f"), ui::tr_core(as_is.label), static_cast<double>(as_is.prob));
        if (e) {
            const ClassProb shuffled = ranked_classes(e->shuffled.probs(), 0, 1, vit.labels).front();
            const ui::PredictionChange change = ui::prediction_change(t.probs(), e->shuffled.probs());
            char shuffled_text[128];
            std::snprintf(shuffled_text, sizeof shuffled_text, tr("shuffled: %s  %.4f"), ui::tr_core(shuffled.label),
                          static_cast<double>(shuffled.prob));
            SameLineIfFits(ImGui::CalcTextSize(shuffled_text).x, 2.0f * style.ItemSpacing.x);
            ImGui::TextColored(change.changed() ? WarnColor() : OkColor(), "%s", shuffled_text);
            const char* verdict = change.changed() ? tr("the prediction changed") : tr("the same class");
            SameLineIfFits(ImGui::CalcTextSize(verdict).x, 2.0f * style.ItemSpacing.x);
            ImGui::TextUnformatted(verdict);
        }
    }
    if (e) {
        const ShuffleDifference& d = e->difference;
        WrappedTextF(
            tr("max |attn_shuffled - attn| (tokens put back), %zu blocks: %s; class token: %s; probabilities: %s"),
            t.blocks.size(), ui::difference_text(d.attn).c_str(), ui::difference_text(d.cls).c_str(),
            ui::difference_text(d.probs).c_str());
        WrappedTextF("%s", e->pos_embed
                                     ? tr("With position embeddings each patch is added the embedding of the place it "
                                          "lands on: the model sees another picture.")
                                     : tr("Without position embeddings self-attention is permutation-equivariant: the "
                                          "same maps with rows and columns permuted, the same class token (up to float "
                                          "rounding)."));
    } else {
        ImGui::TextDisabled(tr("Tick \"shuffle patches\" to run the model on the picture with its patches shuffled."));
    }
    AccuracyTable(vit);
    PositionLessonLine(vit, ui);
    ImGui::PopFont();
}
// The drop-path controls: rate, train/eval, seed; a change asks the frame loop for the run.
void DropPathControls(UiState& ui) {
    VitDropPathChoice c = ui.vit_drop_path;
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 9.0f);
    ImGui::SliderFloat("##drop_path", &c.rate, 0.0f, 0.9f, tr("drop path %.2f"));
    bool run = ImGui::IsItemDeactivatedAfterEdit();  // the slider runs once released
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip(tr("timm's drop_path_rate P: block i drops a branch with p = linspace(0, P, depth)[i]\n"
                             "(attnscope vit --drop-path P)"));
    ImGui::SameLine();
    run |= ImGui::Checkbox(tr("training"), &c.training);
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip(tr("model.train(): every drop_path step draws a keep mask per sample;\n"
                             "model.eval(): DropPath is the identity"));
    SameLineIfFits(ImGui::CalcTextSize(tr("seed")).x + ImGui::GetFontSize() * 6.5f);
    ImGui::TextDisabled(tr("seed"));
    ImGui::SameLine();
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 6.0f);
    const std::uint64_t one = 1;
    run |= ImGui::InputScalar("##drop_seed", ImGuiDataType_U64, &c.seed, &one, nullptr, "%llu");
    ui.vit_drop_path = c;
    if (run) ui.vit_drop_path_request = c;
}

// One branch's cell: what each sample's branch did in this block.
void BranchCellText(const DropPathRecord& r) {
    for (std::size_t b = 0; b < r.mask.size(); ++b) {
        if (b) ImGui::SameLine();
        const ui::BranchCell cell = ui::branch_cell(r, b);
        const std::string who = r.mask.size() > 1 ? std::to_string(b) + ": " : std::string();
        if (cell.fate == ui::BranchFate::dropped)
            ImGui::TextColored(WarnColor(), "%s%s", who.c_str(), tr("dropped"));
        else if (cell.fate == ui::BranchFate::kept)
            ImGui::TextColored(OkColor(), "%s%s %s", who.c_str(), tr("kept"), ui::scale_text(cell.scale).c_str());
        else
            ImGui::TextDisabled("%s%s", who.c_str(), tr("identity"));
    }
}

void DropPathTab(const VitSnapshot& vit, UiState& ui, std::size_t block) {
    DropPathControls(ui);
    const VitTrace& t = vit.trace;
    const VitConfig& c = t.config;
    const VitBlockTrace& blk = t.blocks[block];
    ImGui::PushFont(fonts().small ? fonts().small : ImGui::GetFont());
    ImGui::TextDisabled("%s", blk.at(VitStep::residual1).code.c_str());
    ImGui::TextDisabled("%s", blk.at(VitStep::residual2).code.c_str());
    if (c.layer_scale)
        WrappedTextF("%s", tr("LayerScale: every branch is multiplied by ls1.gamma / ls2.gamma [D] from the "
                                    "checkpoint (steps ls1, ls2) before DropPath."));
    else
        WrappedTextF("%s", tr("No LayerScale in this checkpoint (timm init_values=None: ls1, ls2 are "
                                    "nn.Identity and record no step)."));
    if (!c.records_drop_path()) {
        WrappedTextF("%s", tr("Drop-path rate 0: drop_path1 and drop_path2 are nn.Identity and record no "
                                    "step. Move the slider to give the blocks stochastic depth."));
        ImGui::PopFont();
        return;
    }
    if (!c.training) {
        ImGui::PushStyleColor(ImGuiCol_Text, WarnColor());
        WrappedTextF("%s", tr("eval mode: every drop_path step is the identity (model.eval()); tick training to "
                                    "draw the masks."));
        ImGui::PopStyleColor();
    }
    const ImGuiTableFlags flags = ImGuiTableFlags_Borders | ImGuiTableFlags_SizingFixedFit | ImGuiTableFlags_RowBg;
    if (ImGui::BeginTable("##drop_paths", 4, flags)) {
        ImGui::TableSetupColumn(tr("block"));
        ImGui::TableSetupColumn("p");
        ImGui::TableSetupColumn(tr("attention (drop_path1)"));
        ImGui::TableSetupColumn(tr("MLP (drop_path2)"));
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
    ImGui::Text(tr("block %zu:"), block);
    for (const DropPathRecord& r : blk.drop_paths) {
        const bool attn = r.step == vit_step_name(VitStep::drop_path1);
        const std::string residual = vit_step_name(attn ? VitStep::residual1 : VitStep::residual2);
        for (std::size_t b = 0; b < r.mask.size(); ++b) {
            const ui::BranchCell cell = ui::branch_cell(r, b);
            const std::string sample = r.mask.size() > 1 ? tr("sample ") + std::to_string(b) + ", " : std::string();
            if (cell.fate == ui::BranchFate::dropped)
                WrappedTextF(
                    tr("%s%s branch dropped: %s = x exactly (max |%s - x| = %.3g), the residual path still "
                       "carries x; d %s / d branch = 0, so the branch's weights get zero gradient from this sample."),
                    sample.c_str(), attn ? tr("attention") : tr("MLP"), residual.c_str(), residual.c_str(),
                    r.dropped_residual_vs_x, residual.c_str());
            else if (cell.fate == ui::BranchFate::kept)
                WrappedTextF(tr("%s%s branch kept and scaled by 1/(1-p) = %.4g, so its expected value is "
                                      "unchanged; its gradient is scaled by the same %.4g."),
                                   sample.c_str(), attn ? tr("attention") : tr("MLP"),
                                   static_cast<double>(cell.scale), static_cast<double>(cell.grad_scale()));
            else
                WrappedTextF(tr("%s%s branch: identity (p = %.3g%s)"), sample.c_str(),
                                   attn ? tr("attention") : tr("MLP"), static_cast<double>(r.rate),
                                   c.training ? "" : tr(", eval"));
        }
    }
    ImGui::PopFont();
}

}  // namespace

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
        ui.pictures->texture("vit/slide0", ui::OverlayKey::picture(ui.vit_generation).str(), [&] { return vit.input; });
    SlideTile(vit, ui, "##slide_picture", tr("picture"), tex, side, true, "slide:picture");
}

void DrawVitSlideMaps(const VitSnapshot& vit, UiState& ui, float width, float height) {
    const VitTrace& t = vit.trace;
    if (t.blocks.empty() || !ui.pictures) return;
    const std::size_t heads = t.config.heads, block = std::min(ui.vit_block, t.blocks.size() - 1);
    const std::size_t maps = heads + 1;  // each head, their mean
    ImGui::PushFont(fonts().small ? fonts().small : ImGui::GetFont());
    const float caption_w = std::max(ImGui::CalcTextSize((tr("head ") + std::to_string(heads - 1)).c_str()).x,
                                     ImGui::CalcTextSize(tr("mean")).x);
    const ui::SlideTiles size = ui::vit_slide_tiles(width, height, ImGui::GetTextLineHeightWithSpacing(),
                                                    ImGui::GetStyle().ItemSpacing.x, maps, caption_w);
    if (!size.fits) {
        ImGui::PopFont();
        return;
    }
    const std::uint64_t gen = ui.vit_generation;
    const Array& attn = t.blocks[block].attn();  // [1, h, N, N]
    constexpr std::size_t kClassToken = 0;
    ImGui::TextDisabled(tr("class token's attention, block %zu"), block);
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", tr("attn[0, h, 0, 1:] on the patch grid, each map scaled to its own max (yellow = most)"));
    for (std::size_t i = 0; i < maps; ++i) {
        const bool mean = i == heads;
        const ui::OverlayKey key =
            mean ? ui::OverlayKey::head_mean(gen, block, kClassToken) : ui::OverlayKey::head(gen, block, i, kClassToken);
        const std::uintptr_t tex = ui.pictures->texture(("vit/slide" + std::to_string(i + 1)).c_str(), key.str(), [&] {
            const Array map = mean ? fuse_heads(attn, 0, HeadFusion::mean) : head_attention(attn, 0, i);
            return heat_overlay(ui::overlay_backdrop(vit.input), token_map(map, kClassToken, t.grid));
        });
        ImGui::PushID(static_cast<int>(i));
        SlideTile(vit, ui, "##slide_map", mean ? std::string(tr("mean")) : tr("head ") + std::to_string(i), tex, size.tile, false,
                  i == 0 ? "slide:map" : nullptr);
        ImGui::PopID();
        if (i + 1 < maps && (i + 1) % size.per_row != 0) ImGui::SameLine();
    }
    ImGui::PopFont();
}

void DrawImagePanel(const VitSnapshot* vit, UiState& ui) {
    if (!ui.vit_on_screen && !ui.vit_loading) return;
    if (!ui.show_image) return;
    PlaceWindow(ui, ui::Panel::Image);
    // The title names the model and the picture, or only the picture when the panel is too narrow for
    // both (its width on the last frame; the (i) tooltip names both).
    static float panel_w = 0.0f;
    std::string title = tr("Image");
    if (vit) {
        const std::string picture = tr("Image: ") + ui::display_name(vit->image_path);
        title = tr("Image: ") + ui::display_name(vit->model_path) + tr(" on ") + ui::display_name(vit->image_path);
        if (panel_w > 0.0f && ImGui::CalcTextSize(title.c_str()).x > panel_w - ImGui::GetFontSize() * 3.0f) title = picture;
    }
    // The scrollbar's room always kept: its coming and going (a caption one line longer) would
    // resize the pictures under the mouse.
    const bool open = ImGui::Begin((title + "###Image").c_str(), &ui.show_image, ImGuiWindowFlags_AlwaysVerticalScrollbar);
    panel_w = ImGui::GetWindowWidth();
    if (!open) {
        ImGui::End();
        return;
    }
    if (!vit) {
        EmptyState(ui.vit_loading ? tr("Running the ViT on the picture ...") : tr("No ViT"),
                   tr("attnscope --model MODEL.safetensors --image PICTURE.png shows what a Vision Transformer "
                      "predicts for a picture and where its attention goes."));
        ImGui::End();
        return;
    }
    const VitTrace& t = vit->trace;
    const PatchGrid& grid = t.grid;
    const std::size_t block = std::min(ui.vit_block, t.blocks.size() - 1);
    if (ui.vit_query >= grid.tokens()) ui.vit_query = 0;

    // The rollout's fusion, then the head count with where it came from (a state dict never says it);
    // the block is the menu bar's, and the query is named under the pictures, so picking one moves
    // nothing above them.
    ImGui::TextDisabled(tr("rollout:"));
    ImGui::SameLine();
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 4.5f);
    int fusion = static_cast<int>(ui.vit_fusion);
    if (ImGui::Combo("##fusion", &fusion, "mean\0max\0min\0")) ui.vit_fusion = static_cast<HeadFusion>(fusion);
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip(
            tr("attention rollout (Abnar & Zuidema 2020): per block the heads fused (mean, max or min),\n"
               "plus the identity for the residual, rows renormalized, multiplied over all blocks"));
    char heads[256];
    std::snprintf(heads, sizeof heads, tr("%zu heads (%s)"), vit->trained_config.heads,
                  vit->heads_from == "--heads" ? tr("chosen") : ui::tr_core(vit->heads_from));
    const std::string facts = std::string(heads) + " (i)";
    SameLineIfFits(ImGui::CalcTextSize(facts.c_str()).x);
    ImGui::PushTextWrapPos(0.0f);
    ImGui::TextDisabled("%s", facts.c_str());
    ImGui::PopTextWrapPos();
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip(
            tr("model: %s\npicture: %s (%zu x %zu)\n%zu blocks, dim %zu, %zu heads (%s), patch %zu, %zu x %zu input"),
            vit->model_path.c_str(), vit->image_path.c_str(), vit->source.width, vit->source.height,
            vit->trained_config.depth, vit->trained_config.dim, vit->trained_config.heads, ui::tr_core(vit->heads_from),
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
        tab(tr("Attention"), tr("where one query token looks, per head, and the rollout"), nullptr, AttentionTab);
        tab(tr("Positions"), tr("why position embeddings matter: shuffle the patches with and without them"),
            &ui.vit_positions_tab, PositionsTab);
        tab(tr("Drop path"), tr("stochastic depth: which samples lost a block's branch, and LayerScale"),
            &ui.vit_drop_path_tab, DropPathTab);
        ImGui::EndTabBar();
    }
    ImGui::End();
}

}  // namespace attnscope
