// Tensor inspector: shape, strides, stats, NaN/Inf; any N-D tensor as a 2-D slice (rows and
// columns axes + sliders for the rest), GPU heatmap with zoom/pan/grid/hover, colour range and
// colormap options, a legend, a numeric table for small slices, failing softmax rows outlined.
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <string>
#include <utility>

#include "fonts.hpp"
#include "gfx/heatmap_renderer.hpp"
#include "logic/i18n.hpp"
#include "logic/rowsum.hpp"
#include "panels/panels.hpp"
#include "widgets.hpp"

namespace attnscope {

namespace {

std::string AxisName(const Axes& axes, int i) {
    if (i < 0) return "-";
    return std::to_string(i) + ": " + (static_cast<std::size_t>(i) < axes.size() ? axes[i] : "?");
}

constexpr float kAxisComboWidth = 5.5f;  // in font sizes

bool AxisCombo(const char* label, int* axis, const Step& step) {
    const Axes& axes = step.axes();
    const int rank = static_cast<int>(step.shape().size());
    bool changed = false;
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * kAxisComboWidth);
    if (ImGui::BeginCombo(label, AxisName(axes, *axis).c_str())) {
        for (int i = 0; i < rank; ++i) {
            ImGui::PushStyleColor(ImGuiCol_Text, AxisColorVec4(static_cast<std::size_t>(i) < axes.size() ? axes[i] : "?"));
            if (ImGui::Selectable(AxisName(axes, i).c_str(), i == *axis)) {
                *axis = i;
                changed = true;
            }
            ImGui::PopStyleColor();
        }
        ImGui::EndCombo();
    }
    return changed;
}

}  // namespace

void DrawInspectorPanel(const Trace& trace, UiState& ui) {
    if (!ui.panels.inspector) return;
    PlaceWindow(ui, ui::Panel::Inspector);
    if (!ImGui::Begin(ui::window_title(_("Tensor inspector"), "Tensor inspector").c_str(), &ui.panels.inspector)) {
        ImGui::End();
        return;
    }
    const Step* step = SelectedStep(trace, ui);
    if (!step) {
        EmptyState(_("Nothing to inspect"), _("No trace is loaded."));
        ImGui::End();
        return;
    }
    const Shape shape = step->shape();
    InspectorView& view = ViewFor(ui, *step);
    ui::SliceSpec& spec = view.spec;

    // ---- facts
    // Each fact is one piece; a narrow panel folds the line between pieces, never inside one.
    ImGui::Text("%s", step->name.c_str());
    ImGui::SameLine();
    ColoredShape(shape, step->axes());
    char fact[128];
    std::snprintf(fact, sizeof fact, _("float32, %s elements"),
                  ui::format_value(static_cast<double>(step->tensor().values.size())).c_str());
    SameLineIfFits(ImGui::CalcTextSize(fact).x);
    ImGui::TextDisabled("%s", fact);
    const Stats& st = step->stats;
    ImGui::PushFont(fonts().mono);
    const std::pair<const char*, float> stats[] = {{_("min %s"), st.min}, {_("max %s"), st.max},
                                                   {_("mean %s"), st.mean}, {_("std %s"), st.std}};
    for (std::size_t k = 0; k < std::size(stats); ++k) {
        std::snprintf(fact, sizeof fact, stats[k].first, ui::format_value(stats[k].second).c_str());
        if (k > 0) SameLineIfFits(ImGui::CalcTextSize(fact).x);
        ImGui::TextUnformatted(fact);
    }
    ImGui::PopFont();
    if (st.nan_count || st.inf_count)
        std::snprintf(fact, sizeof fact, _("NaN %zu  Inf %zu"), st.nan_count, st.inf_count);
    else
        std::snprintf(fact, sizeof fact, "%s", _("no NaN/Inf"));
    SameLineIfFits(ImGui::CalcTextSize(fact).x);
    ImGui::TextColored(st.nan_count || st.inf_count ? BadColor() : OkColor(), "%s", fact);

    // ---- a file's step: where it comes from, and how it differs from the reference
    const StepDifference* diff = trace.difference(step->name);
    if (!trace.source_path.empty()) {
        const bool loaded = step->origin == StepOrigin::Loaded;
        // "loaded from acts.npz: attn_weights" (the full path on hover)
        std::string detail = loaded ? step->origin_detail : std::string(ui::tr_core(step->origin_detail));
        if (loaded && detail.rfind(trace.source_path, 0) == 0)
            detail = ui::display_name(trace.source_path) + detail.substr(trace.source_path.size());
        ImGui::BeginGroup();
        WrappedText(DimColor(), (std::string(loaded ? _("loaded from") : _("computed:")) + " " + detail).c_str());
        ImGui::EndGroup();
        if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", (loaded ? step->origin_detail : detail).c_str());
    }
    if (diff) {
        int mode = ui.inspector.show_difference && diff->difference ? 1 : 0;
        ImGui::RadioButton(_("values"), &mode, 0);
        SameLineIfFits(LabeledWidth(ImGui::GetFrameHeight(), _("difference (yours \u2212 reference)")));
        ImGui::BeginDisabled(!diff->difference.has_value());
        ImGui::RadioButton(_("difference (yours \u2212 reference)"), &mode, 1);
        ImGui::EndDisabled();
        if (!diff->difference && ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
            ImGui::SetTooltip(_("your tensor and the reference's have different shapes: no element-wise difference"));
        if (diff->difference) ui.inspector.show_difference = mode == 1;
        ImGui::PushFont(fonts().mono);
        std::snprintf(fact, sizeof fact, _("max error %s  tol %s"), ui::format_value(diff->max_error).c_str(),
                      ui::format_value(diff->tolerance).c_str());
        SameLineIfFits(ImGui::CalcTextSize(fact).x);
        ImGui::TextColored(diff->ok ? OkColor() : BadColor(), "%s", fact);
        ImGui::PopFont();
        WrappedText(diff->ok ? OkColor() : BadColor(),
                    ((diff->ok ? "\u2713 " : "\u2717 ") + std::string(ui::tr_core(diff->diagnosis))).c_str());
    }
    const bool show_diff = diff && diff->difference && ui.inspector.show_difference;
    const Array& values = show_diff ? diff->difference->values : step->tensor().values;

    if (shape.empty() || step->tensor().values.size() == 0) {
        EmptyState(_("Empty tensor"), _("This step holds no values (a dimension is 0)."));
        ImGui::End();
        return;
    }

    // ---- slice selection
    if (shape.size() >= 2) {
        int row = spec.row_axis, col = spec.col_axis;
        if (AxisCombo(_("rows"), &row, *step)) {
            if (row == spec.col_axis) spec.col_axis = spec.row_axis;  // picking the other one swaps
            spec.row_axis = row;
        }
        SameLineIfFits(LabeledWidth(ImGui::GetFontSize() * kAxisComboWidth, _("cols")));
        if (AxisCombo(_("cols"), &col, *step)) {
            if (col == spec.row_axis) spec.row_axis = spec.col_axis;
            spec.col_axis = col;
        }
        SameLineIfFits(ButtonWidth(_("swap")));
        if (ImGui::Button(_("swap"))) std::swap(spec.row_axis, spec.col_axis);
    }
    // A short panel: narrower sliders, so they share a line with the slice and the colours button.
    const bool short_panel = ui.inspector.fit.update(ImGui::GetWindowWidth(), ImGui::GetWindowHeight(), step->name,
                                                     show_diff);
    int sliders = 0;
    for (std::size_t i = 0; i < shape.size(); ++i) {
        if (static_cast<int>(i) == spec.row_axis || static_cast<int>(i) == spec.col_axis) continue;
        const std::string label = i < step->axes().size() ? step->axes()[i] : "?";
        // The slider in the axis's colour, named by the axis; its place among the axes on hover.
        const float slider_w = ImGui::GetFontSize() * (short_panel ? 4.5f : 7.0f);
        if (sliders > 0) SameLineIfFits(LabeledWidth(slider_w, label.c_str()));
        ImGui::PushID(static_cast<int>(i));
        ImGui::PushStyleColor(ImGuiCol_SliderGrab, AxisColorVec4(label));
        ImGui::PushStyleColor(ImGuiCol_SliderGrabActive, AxisColorVec4(label));
        ImGui::SetNextItemWidth(slider_w);
        int idx = static_cast<int>(spec.index[i]);
        if (ImGui::SliderInt(label.c_str(), &idx, 0, static_cast<int>(shape[i]) - 1))
            spec.index[i] = static_cast<std::size_t>(idx);
        if (ImGui::IsItemHovered()) ImGui::SetTooltip(_("%s (axis %zu): 0 .. %zu"), label.c_str(), i, shape[i] - 1);
        ImGui::PopStyleColor(2);
        ImGui::PopID();
        ++sliders;
    }
    spec = ui::normalized(spec, shape);
    if (shape.size() >= 2) {  // the slice the sliders chose, as PyTorch indexing
        ImGui::PushFont(fonts().mono);
        const std::string described = ui::describe_slice(step->name, spec, shape.size());
        SameLineIfFits(ImGui::CalcTextSize(described.c_str()).x);
        ImGui::TextDisabled("%s", described.c_str());
        ImGui::PopFont();
    }

    // ---- colour options: in a short panel behind one button on the slice's line, so the map keeps
    // the height (a divergence's difference map is the evidence; ui_state.hpp: InspectorFit)
    auto colour_options = [&] {
        int range_mode = static_cast<int>(ui.inspector.range_mode);
        const char* const ranges[] = {_("range: slice"), _("range: tensor"), _("range: fixed")};
        float range_w = 0.0f;
        for (const char* r : ranges) range_w = std::max(range_w, ImGui::CalcTextSize(r).x);
        ImGui::SetNextItemWidth(range_w + ImGui::GetFrameHeight() + ImGui::GetStyle().FramePadding.x * 2.0f);
        ImGui::Combo("##range", &range_mode, ranges, 3);
        if (ImGui::IsItemHovered())
            ImGui::SetTooltip("%s", _("the colours span the slice's min..max, the whole tensor's, or a range you set"));
        ui.inspector.range_mode = static_cast<ui::RangeMode>(range_mode);
        if (ui.inspector.range_mode == ui::RangeMode::Fixed) {
            SameLineIfFits(ImGui::GetFontSize() * 8.0f);
            ImGui::SetNextItemWidth(ImGui::GetFontSize() * 8.0f);
            ImGui::DragFloatRange2("##fixed", &ui.inspector.fixed_lo, &ui.inspector.fixed_hi, 0.01f, 0.0f, 0.0f, "%.3g", "%.3g");
        }
        SameLineIfFits(LabeledWidth(ImGui::GetFrameHeight(), _("log")));
        bool log = ui.inspector.scale_mode == ui::ScaleMode::Log;
        if (ImGui::Checkbox(_("log"), &log)) ui.inspector.scale_mode = log ? ui::ScaleMode::Log : ui::ScaleMode::Linear;
        SameLineIfFits(ImGui::GetFontSize() * 6.5f);
        int cmap = static_cast<int>(ui.inspector.colormap);
        ImGui::SetNextItemWidth(ImGui::GetFontSize() * 6.5f);
        const char* const colormaps[] = {_("auto"), _("sequential"), _("diverging")};
        ImGui::Combo("##cmap", &cmap, colormaps, 3);
        if (ImGui::IsItemHovered())
            ImGui::SetTooltip(_("colormap: auto picks sequential for tensors >= 0 and diverging (white = 0) for signed ones"));
        ui.inspector.colormap = static_cast<ui::ColormapChoice>(cmap);
        SameLineIfFits(LabeledWidth(ImGui::GetFrameHeight(), _("numbers")));
        ImGui::Checkbox(_("numbers"), &ui.inspector.show_numbers);
    };
    if (short_panel) {
        SameLineIfFits(ButtonWidth(_("colours")));
        if (ImGui::Button(_("colours"))) ImGui::OpenPopup("##colours");
        if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", _("the colour range, log scale, colormap and numbers"));
        if (ImGui::BeginPopup("##colours")) {
            colour_options();
            ImGui::EndPopup();
        }
    } else {
        colour_options();
    }

    // ---- the slice and its texture (uploaded only when the slice changes)
    char key[256];
    std::snprintf(key, sizeof key, "%llu/%s%s/%s", static_cast<unsigned long long>(ui.frame.trace_generation),
                  show_diff ? "diff:" : "", step->name.c_str(), ui::describe_slice("", spec, shape.size()).c_str());
    std::snprintf(key + std::strlen(key), sizeof key - std::strlen(key), "/%d,%d", spec.row_axis, spec.col_axis);
    static const ui::Slice2D kEmpty;
    const ui::Slice2D& slice = ui.heatmaps ? ui.heatmaps->slice("inspector", key, [&] {
        return ui::extract_slice(values, spec);
    }) : kEmpty;
    // The difference: diverging (white = equal), its tensor range +-max error.
    const float tensor_lo = show_diff ? -static_cast<float>(diff->max_error) : st.min;
    const float tensor_hi = show_diff ? static_cast<float>(diff->max_error) : st.max;
    const ui::Colormap colormap =
        show_diff ? ui::Colormap::Diverging : ui::resolve_colormap(ui.inspector.colormap, st.min, st.max);
    const ui::ColorRange range = ui::make_range(ui.inspector.range_mode, slice.min, slice.max, tensor_lo, tensor_hi, ui.inspector.fixed_lo,
                                                ui.inspector.fixed_hi, colormap, ui.inspector.scale_mode);
    const std::uintptr_t tex = ui.heatmaps ? ui.heatmaps->texture("inspector", range) : 0;

    // Failing softmax rows of this (b, h), when the slice is a [N, N'] attention map.
    std::vector<bool> marked;
    const RowSumCheck* rs = trace.checks.row_sum(step->name);
    const Axes& axes = step->axes();
    if (rs && !show_diff && shape.size() == 4 && spec.row_axis == 2 && spec.col_axis == 3)
        marked = ui::failing_rows(*rs, spec.index[0], spec.index[1]);
    const bool any_marked = std::find(marked.begin(), marked.end(), true) != marked.end();

    const bool small = slice.rows * slice.cols <= 32 * 32;
    {
        if (!ui.inspector.show_numbers) {
            const ImVec2 avail = ImGui::GetContentRegionAvail();
            const float legend_w = ColorLegendWidth();
            // The hover line and the followed element's line are always budgeted, so a click that pins
            // an element does not shrink the map under the mouse.
            const float hover_h = ImGui::GetTextLineHeightWithSpacing() * (2.0f + (any_marked ? 1.0f : 0.0f)) + 2.0f;
            const ImVec2 area(std::max(avail.x - legend_w - ImGui::GetStyle().ItemSpacing.x, 50.0f),
                              std::max(avail.y - hover_h, 50.0f));
            const std::string problem = ui.heatmaps ? ui.heatmaps->problem("inspector") : "no renderer";
            if (!tex && !problem.empty()) {
                EmptyState(_("Cannot draw this slice"), problem.c_str());
            } else {
                HeatmapOptions opt;
                opt.id = "inspector_heatmap";
                opt.size = area;
                opt.fit_item = true;  // a square map leaves the area's rest: the colour bar beside the map
                opt.view = &view;
                opt.marked_rows = any_marked ? &marked : nullptr;
                // The followed element and the cells related to it (the Follow panel's outlines).
                const std::vector<std::uint8_t> follow_marks =
                    FollowCellMarks(trace, ui, *step, spec, slice.rows, slice.cols);
                static const ImU32 follow_colors[] = {0, FollowColor(1), FollowColor(2), FollowColor(3)};
                if (!follow_marks.empty()) {
                    opt.cell_marks = &follow_marks;
                    opt.mark_colors = follow_colors;
                }
                if (rs && rs->deviation_expected) {  // expected, not a failure: keep the map readable
                    opt.marked_color = IM_COL32(255, 190, 60, 255);
                    opt.outline_marked_rows = false;
                }
                const HeatmapHover hover = DrawHeatmap(tex, slice, opt);
                MarkItem(ui, "inspector:map");
                ui.inspector.fit.measured(ImGui::GetItemRectSize().y, ImGui::GetWindowHeight());
                // A short map (a long slice with square cells) still gets a legend its labels fit in.
                const float map_h = std::max(ImGui::GetItemRectSize().y, ImGui::GetTextLineHeight() * 4.0f);
                ImGui::SameLine();
                ColorLegend(range, map_h, slice.nan_count > 0, slice.inf_count > 0);
                // Hover line (always drawn so the layout does not jump).
                const std::string row_axis = spec.row_axis >= 0 && spec.row_axis < (int)axes.size() ? axes[spec.row_axis] : "";
                const std::string col_axis = spec.col_axis >= 0 && spec.col_axis < (int)axes.size() ? axes[spec.col_axis] : "";
                ImGui::PushFont(fonts().mono);
                if (hover.hovered) {
                    const auto idx = ui::full_index(spec, shape.size(), hover.row, hover.col);
                    ui.follow.element.hover(step->name, idx, hover.clicked);  // followed while hovered; a click pins
                    const float v = slice.at(hover.row, hover.col);
                    const std::string what = show_diff ? _("(yours \u2212 reference) ") + step->name : step->name;
                    const std::string line = what + ui::format_index(idx) + " = " + ui::format_value(v);
                    const std::string value = ui::format_index(idx) + " = " + ui::format_value(v);  // narrow: without the name
                    const bool fits = ImGui::CalcTextSize(line.c_str()).x <= ImGui::GetContentRegionAvail().x;
                    ImGui::TextUnformatted(fits ? line.c_str() : value.c_str());
                    ImGui::BeginTooltip();
                    ImGui::Text("%s%s", what.c_str(), ui::format_index(idx).c_str());
                    ImGui::Text("= %.7g", static_cast<double>(v));
                    ImGui::TextDisabled(_("row %s = %zu, col %s = %zu"), row_axis.c_str(), hover.row, col_axis.c_str(), hover.col);
                    ImGui::TextDisabled("%s", ui::_("Follow panel: where it comes from, what it feeds (click: pin)"));
                    if (hover.row < marked.size() && marked[hover.row]) ImGui::TextColored(BadColor(), _("this row does not sum to 1"));
                    ImGui::EndTooltip();
                } else {
                    // The axes, and how to use the map when that fits too (always in the tooltip).
                    char axes_line[128];
                    std::snprintf(axes_line, sizeof axes_line, _("rows %s (%zu), cols %s (%zu)"), row_axis.c_str(),
                                  slice.rows, col_axis.c_str(), slice.cols);
                    // Cells that are not square are said (logic/map_fit.hpp), in words where they fit.
                    char stretch[96] = "", stretch_short[32] = "";
                    if (hover.cell_stretch > 1.05f) {
                        std::snprintf(stretch, sizeof stretch,
                                      slice.rows < slice.cols ? _("; cells drawn %.1f times taller than wide")
                                                              : _("; cells drawn %.1f times wider than tall"),
                                      static_cast<double>(hover.cell_stretch));
                        std::snprintf(stretch_short, sizeof stretch_short, _("; cells %.1f:1"), static_cast<double>(hover.cell_stretch));
                    }
                    const float room = ImGui::GetContentRegionAvail().x;
                    auto fits = [&](const std::string& text) { return ImGui::CalcTextSize(text.c_str()).x <= room; };
                    std::string line = axes_line + std::string(stretch) + _("; hover: value, wheel: zoom, drag: pan");
                    if (!fits(line)) line = axes_line + std::string(stretch);
                    if (!fits(line)) line = axes_line + std::string(stretch_short);
                    if (!fits(line)) line = axes_line;
                    ImGui::TextDisabled("%s", line.c_str());
                    if (ImGui::IsItemHovered())
                        ImGui::SetTooltip(_("%s; slice min %s, max %s\nhover: value, wheel: zoom, drag: pan"),
                                          ui::colormap_name(range.colormap), ui::format_value(slice.min).c_str(),
                                          ui::format_value(slice.max).c_str());
                }
                ImGui::PopFont();
                if (ui.follow.element.pinned) FollowedLine(ui);
                if (any_marked)
                    ImGui::TextColored(rs->deviation_expected ? WarnColor() : BadColor(),
                                       _("flagged rows: |row sum - 1| > %.0e%s"), rs->tolerance,
                                       rs->deviation_expected ? _(" (expected: training-mode dropout)") : "");
            }
        } else {
            if (!small) {
                ImGui::TextDisabled(_("showing the top-left 32 x 32 of this %zu x %zu slice"), slice.rows, slice.cols);
            }
            const std::size_t R = std::min<std::size_t>(slice.rows, 32), C = std::min<std::size_t>(slice.cols, 32);
            ImGui::PushFont(fonts().mono);
            if (C > 0 && ImGui::BeginTable("numbers", static_cast<int>(C) + 1,
                                           ImGuiTableFlags_ScrollX | ImGuiTableFlags_ScrollY | ImGuiTableFlags_Borders |
                                               ImGuiTableFlags_SizingFixedFit)) {
                ImGui::TableSetupScrollFreeze(1, 1);
                ImGui::TableSetupColumn("");
                for (std::size_t c = 0; c < C; ++c) ImGui::TableSetupColumn(std::to_string(c).c_str());
                ImGui::TableHeadersRow();
                for (std::size_t r = 0; r < R; ++r) {
                    ImGui::TableNextRow();
                    ImGui::TableNextColumn();
                    ImGui::TextDisabled("%zu", r);
                    for (std::size_t c = 0; c < C; ++c) {
                        ImGui::TableNextColumn();
                        const float v = slice.at(r, c);
                        const auto rgba = ui::colormap_color(range.colormap, ui::normalize_value(v, range));
                        ImGui::TableSetBgColor(ImGuiTableBgTarget_CellBg, IM_COL32(rgba[0], rgba[1], rgba[2], 110));
                        ImGui::Text("%9.4f", static_cast<double>(v));
                    }
                }
                ImGui::EndTable();
            }
            ImGui::PopFont();
        }
    }
    ImGui::End();
}

}  // namespace attnscope
