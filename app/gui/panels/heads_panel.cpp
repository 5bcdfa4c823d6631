// Heads grid: all h heads of the chosen batch item as small multiples (scores, scaled, attn and
// attn_drop; also q, k, v and context, whose tensors have a head axis). Click a head to open it
// large in the inspector. Shared or per-head colour scale.
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "fonts.hpp"
#include "gfx/heatmap_renderer.hpp"
#include "softgl/softgl.hpp"
#include "logic/map_fit.hpp"
#include "logic/slice.hpp"
#include "panels/panels.hpp"
#include "widgets.hpp"

namespace attnscope {

void DrawHeadsPanel(const Trace& trace, UiState& ui) {
    if (!ui.panels.heads) return;
    PlaceWindow(ui, ui::Panel::Heads);
    // Collapsed, or behind Follow (they share a place, like tabs): no slices, no texture uploads.
    if (!ImGui::Begin(ui::window_title(_("Heads"), "Heads").c_str(), &ui.panels.heads) || SkipCoveredWindow()) {
        ImGui::End();
        return;
    }
    const Step* step = SelectedStep(trace, ui);
    const int h_axis = step ? ui::head_axis(step->axes()) : -1;
    if (!step || h_axis < 0 || step->shape().size() < 3) {
        const std::string title = step ? step->name + " " + format_axes(step->axes()) + _(" has no head axis h")
                                        : std::string(_("No trace"));
        EmptyState(title.c_str(),
                   _("The heads grid shows every head side by side once the features are split into h heads: "
                      "scores, scaled, attn and attn_drop (one N x N' map per head), and q, k, v, context "
                      "(N x c per head). Press \u2192 / \u2190 or pick attn in the pipeline."));
        ImGui::End();
        return;
    }
    const Shape shape = step->shape();
    InspectorView& view = ViewFor(ui, *step);
    const std::size_t heads = shape[static_cast<std::size_t>(h_axis)];
    const std::size_t shown = std::min<std::size_t>(heads, 64);
    const Axes& axes = step->axes();

    // Controls: the other fixed axes (batch item, q/k/v selector) shared with the inspector.
    // One row while they fit, folding between controls on a narrow panel.
    ui::SliceSpec base = ui::head_slice(axes, shape, view.spec, 0);
    bool first_control = true;
    for (std::size_t i = 0; i < shape.size(); ++i) {
        if (static_cast<int>(i) == h_axis || static_cast<int>(i) == base.row_axis || static_cast<int>(i) == base.col_axis)
            continue;
        ImGui::PushID(static_cast<int>(i));
        const std::string label = i < axes.size() ? axes[i] : "?";
        int idx = static_cast<int>(view.spec.index[i]);
        ImGui::PushStyleColor(ImGuiCol_SliderGrab, AxisColorVec4(label));
        const char* name = label == "B" ? _("batch item") : label == "3" ? "q/k/v" : label.c_str();
        if (!first_control) SameLineIfFits(LabeledWidth(ImGui::GetFontSize() * 6.0f, name));
        first_control = false;
        ImGui::SetNextItemWidth(ImGui::GetFontSize() * 6.0f);
        if (ImGui::SliderInt(name, &idx, 0, static_cast<int>(shape[i]) - 1))
            view.spec.index[i] = static_cast<std::size_t>(idx);
        ImGui::PopStyleColor();
        ImGui::PopID();
    }
    if (!first_control) SameLineIfFits(LabeledWidth(ImGui::GetFrameHeight(), _("shared scale")) + ImGui::GetFontSize() * 2);
    ImGui::Checkbox(_("shared scale"), &ui.heads.shared_scale);
    ImGui::SameLine();
    HelpMarker(_("Shared: one range for all heads, so heads can be compared. Per head: each head uses its own "
                  "min..max, so the pattern inside a weak head is visible too."));

    // Slices first (uploads happen only when a slice changes), then one range for all or each.
    std::vector<const ui::Slice2D*> slices(shown, nullptr);
    std::vector<std::string> slots(shown);
    float lo = 0, hi = 0;
    bool first = true;
    for (std::size_t hd = 0; hd < shown; ++hd) {
        const ui::SliceSpec spec = ui::head_slice(axes, shape, view.spec, hd);
        char key[256];
        std::snprintf(key, sizeof key, "%llu/%s/%s", static_cast<unsigned long long>(ui.frame.trace_generation),
                      step->name.c_str(), ui::describe_slice("", spec, shape.size()).c_str());
        slots[hd] = "head" + std::to_string(hd);
        if (!ui.heatmaps) continue;
        slices[hd] = &ui.heatmaps->slice(slots[hd], key, [&] { return ui::extract_slice(step->tensor().values, spec); });
        if (slices[hd]->empty()) continue;
        lo = first ? slices[hd]->min : std::min(lo, slices[hd]->min);
        hi = first ? slices[hd]->max : std::max(hi, slices[hd]->max);
        first = false;
    }
    const ui::Colormap cmap = ui::resolve_colormap(ui.inspector.colormap, step->stats.min, step->stats.max);
    const RowSumCheck* rs = trace.checks.row_sum(step->name);
    const std::size_t b = !axes.empty() && axes[0] == "B" ? view.spec.index[0] : 0;

    // Tile layout (logic/map_fit.hpp): the column count that gives the largest tiles, square maps
    // stretched a little to fill the panel; the shared scale's legend in an empty slot of the grid
    // when there is one.
    const ImVec2 avail = ImGui::GetContentRegionAvail();
    const float label_h = fonts().small->FontSize + 4.0f;
    const float gap = ImGui::GetFontSize() * 0.5f;
    const float warning_h = shown < heads ? ImGui::GetTextLineHeightWithSpacing() : 0.0f;
    ui::HeadsGridInput grid_in;
    grid_in.count = shown;
    grid_in.rows = slices[0] ? std::max<std::size_t>(slices[0]->rows, 1) : 1;
    grid_in.cols = slices[0] ? std::max<std::size_t>(slices[0]->cols, 1) : 1;
    grid_in.w = avail.x;
    grid_in.h = avail.y - warning_h;
    grid_in.label_h = label_h + ImGui::GetStyle().ItemSpacing.y;
    grid_in.gap = gap;
    grid_in.legend_w = ui.heads.shared_scale ? ColorLegendWidth() : 0.0f;
    const ui::HeadsGrid grid = ui::heads_grid(grid_in);
    const int best_cols = grid.columns;
    const ImVec2 tile(grid.tile.w, grid.tile.h);
    const int selected_head = static_cast<int>(view.spec.index[static_cast<std::size_t>(h_axis)]);
    const bool inspector_shows_head =
        view.spec.row_axis != h_axis && view.spec.col_axis != h_axis;

    ImGui::BeginGroup();
    for (std::size_t hd = 0; hd < shown; ++hd) {
        if (hd % best_cols) ImGui::SameLine(0, gap);
        ImGui::BeginGroup();
        const ui::Slice2D* s = slices[hd];
        ui::ColorRange range;
        if (s) {
            range = ui.heads.shared_scale
                        ? ui::make_range(ui::RangeMode::Fixed, 0, 0, 0, 0, lo, hi, cmap, ui.inspector.scale_mode)
                        : ui::make_range(ui::RangeMode::PerSlice, s->min, s->max, 0, 0, 0, 0, cmap,
                                         ui.inspector.scale_mode);
        }
        const std::uintptr_t tex = ui.heatmaps && s ? ui.heatmaps->texture(slots[hd], range) : 0;
        // Label: "head 3" and, on attention maps, the row-sum status of this head.
        ImGui::PushFont(fonts().small);
        const bool sel = inspector_shows_head && static_cast<int>(hd) == selected_head;
        ImGui::TextColored(sel ? ImVec4(1, 1, 1, 1) : DimColor(), _("head %zu"), hd);
        if (rs) {
            const std::size_t i = b * heads + hd;
            if (i < rs->head_failing.size() && rs->head_failing[i] > 0) {
                // "5 rows ≠ 1" beside the name when the tile is wide enough, else "5 ≠ 1" (the words on hover).
                char status[64];
                std::snprintf(status, sizeof status, _("%zu rows \u2260 1"), rs->head_failing[i]);
                const bool fits = ImGui::GetItemRectSize().x + 4.0f + ImGui::CalcTextSize(status).x <= tile.x;
                if (!fits) std::snprintf(status, sizeof status, "%zu \u2260 1", rs->head_failing[i]);
                ImGui::SameLine(0, 4);
                ImGui::TextColored(rs->deviation_expected ? WarnColor() : BadColor(), "%s", status);
                if (!fits && ImGui::IsItemHovered())
                    ImGui::SetTooltip(_("%zu rows \u2260 1"), rs->head_failing[i]);
            }
        }
        ImGui::PopFont();
        HeatmapOptions opt;
        char id[32];
        std::snprintf(id, sizeof id, "head_tile%zu", hd);
        opt.id = id;
        opt.size = tile;
        opt.fill = true;  // the grid bounds the cells' stretch
        opt.selected = sel;
        static const ui::Slice2D kEmpty;
        const HeatmapHover hover = DrawHeatmap(tex, s ? *s : kEmpty, opt);
        MarkItem(ui, "head:" + std::to_string(hd));
        if (hover.hovered && s) {
            const auto spec = ui::head_slice(axes, shape, view.spec, hd);
            const auto idx = ui::full_index(spec, shape.size(), hover.row, hover.col);
            ImGui::SetTooltip(_("head %zu: %s%s = %s\n(click to open it large in the inspector)"), hd, step->name.c_str(),
                              ui::format_index(idx).c_str(), ui::format_value(s->at(hover.row, hover.col)).c_str());
        }
        if (hover.clicked) {  // open it large: the inspector shows exactly this head's slice
            const ui::SliceSpec spec = ui::head_slice(axes, shape, view.spec, hd);
            view.spec = spec;
            ui.heads.focused = static_cast<int>(hd);
            ImGui::SetWindowFocus("###Tensor inspector");
        }
        ImGui::EndGroup();
    }
    const ui::ColorRange shared = ui::make_range(ui::RangeMode::Fixed, 0, 0, 0, 0, lo, hi, cmap, ui.inspector.scale_mode);
    if (ui.heads.shared_scale && !first && grid.legend_in_slot) {  // in the slot after the last tile, as high as a tile
        ImGui::SameLine(0, gap);
        ColorLegend(shared, grid_in.label_h + tile.y, false, false);
    }
    ImGui::EndGroup();
    if (ui.heads.shared_scale && !first && !grid.legend_in_slot) {
        ImGui::SameLine(0, gap);
        ColorLegend(shared, std::min(grid_in.h, std::max(tile.y * 2.0f, ImGui::GetFontSize() * 8.0f)), false, false);
    }
    if (shown < heads) ImGui::TextColored(WarnColor(), _("showing the first %zu of %zu heads"), shown, heads);
    ImGui::End();
}

}  // namespace attnscope
