// Follow an element: the inspector's hovered (or clicked, pinned) element, and for every other step
// a thumbnail of the slice with the cells it comes from (earlier steps) or feeds (later steps)
// outlined. The index maps are core/teach/provenance's pure functions (cached in UiState); no tensor
// is recomputed.
#include <imgui.h>

#include <algorithm>
#include <cstdio>

#include "fonts.hpp"
#include "gfx/heatmap_renderer.hpp"
#include "logic/i18n.hpp"
#include "panels/panels.hpp"
#include "widgets.hpp"

namespace attnscope {

using ui::_;

namespace {

Bug GraphBug(const UiState& ui) { return ui.zoo.run ? ui.zoo.run->bug : Bug::None; }

// The same element followed through the correct pipeline (a zoo bug: where it should come from).
const std::vector<Related>& CorrectRelated(const Trace& trace, const UiState& ui) {
    static std::string key;
    static std::vector<Related> related;
    if (key != ui.follow.related_key) {
        key = ui.follow.related_key;
        related.clear();
        try {
            related = follow_element(attention_graph(trace.config, Bug::None), ui.follow.element.step,
                                     ui.follow.element.index);
        } catch (const std::exception&) {
        }
    }
    return related;
}

const Related* FindRelated(const std::vector<Related>& related, const std::string& step) {
    for (const Related& r : related)
        if (r.step == step) return &r;
    return nullptr;
}

// The slice a thumbnail shows: the inspector's row and column axes for that step, every other axis
// at the first related element.
ui::SliceSpec ThumbnailSpec(UiState& ui, const Step& step, const Boxes& boxes) {
    ui::SliceSpec spec = ViewFor(ui, step).spec;
    if (!boxes.empty())
        for (std::size_t i = 0; i < spec.index.size() && i < boxes.front().size(); ++i) spec.index[i] = boxes.front()[i].begin;
    return ui::normalized(spec, step.shape());
}

void Thumbnail(const Trace& trace, UiState& ui, const Step& step, const Boxes& boxes, ImVec2 size) {
    if (!ui.heatmaps) return;
    const ui::SliceSpec spec = ThumbnailSpec(ui, step, boxes);
    const std::string slot = "follow:" + step.name;
    char key[256];
    std::snprintf(key, sizeof key, "%llu/%s/%d,%d", static_cast<unsigned long long>(ui.frame.trace_generation),
                  ui::describe_slice(step.name, spec, step.shape().size()).c_str(), spec.row_axis, spec.col_axis);
    const ui::Slice2D& slice = ui.heatmaps->slice(slot, key, [&] { return ui::extract_slice(step.tensor().values, spec); });
    const ui::Colormap cmap = ui::resolve_colormap(ui.inspector.colormap, step.stats.min, step.stats.max);
    const ui::ColorRange range = ui::make_range(ui::RangeMode::PerSlice, slice.min, slice.max, step.stats.min,
                                                step.stats.max, 0.0f, 1.0f, cmap, ui::ScaleMode::Linear);
    const std::uintptr_t tex = ui.heatmaps->texture(slot, range);
    const std::vector<std::uint8_t> marks = FollowCellMarks(trace, ui, step, spec, slice.rows, slice.cols);
    static const ImU32 colors[] = {0, FollowColor(1), FollowColor(2), FollowColor(3)};
    HeatmapOptions opt;
    const std::string id = "##thumb_" + step.name;
    opt.id = id.c_str();
    opt.size = size;
    opt.cell_marks = marks.empty() ? nullptr : &marks;
    opt.mark_colors = colors;
    const HeatmapHover hover = DrawHeatmap(tex, slice, opt);
    if (hover.hovered) {
        ImGui::SetTooltip("%s%s  (%s)", step.name.c_str(),
                          ui::format_index(ui::full_index(spec, step.shape().size(), hover.row, hover.col)).c_str(),
                          _("click: open this step in the inspector"));
        if (hover.clicked) SelectStep(trace, ui, step.name);
    }
    ImGui::PushFont(fonts().mono);
    ImGui::PushTextWrapPos(0.0f);
    ImGui::TextDisabled("%s", ui::describe_slice(step.name, spec, step.shape().size()).c_str());
    ImGui::PopTextWrapPos();
    ImGui::PopFont();
}

}  // namespace

ImU32 FollowColor(int role) {
    switch (role) {
        case 1: return IM_COL32(70, 200, 255, 255);   // where it comes from
        case 2: return IM_COL32(255, 150, 40, 255);   // what it feeds
        case 3: return IM_COL32(255, 255, 255, 255);  // the element itself
        default: return 0;
    }
}

const std::vector<Related>& FollowedElements(const Trace& trace, UiState& ui) {
    char key[320];
    std::snprintf(key, sizeof key, "%llu/%d/%s%s", static_cast<unsigned long long>(ui.frame.trace_generation),
                  static_cast<int>(GraphBug(ui)), ui.follow.element.step.c_str(),
                  ui::format_index(ui.follow.element.index).c_str());
    if (key != ui.follow.related_key) {
        ui.follow.related_key = key;
        ui.follow.related.clear();
        if (!ui.follow.element.step.empty() && trace.find(ui.follow.element.step)) {
            try {
                ui.follow.related = follow_element(attention_graph(trace.config, GraphBug(ui)), ui.follow.element.step,
                                                   ui.follow.element.index);
            } catch (const std::exception&) {  // a file trace whose sizes the config does not know
            }
        }
    }
    return ui.follow.related;
}

int FollowRole(const Trace& trace, UiState& ui, const std::string& step) {
    if (ui.follow.element.step.empty()) return 0;
    if (step == ui.follow.element.step) return 3;
    const Related* r = FindRelated(FollowedElements(trace, ui), step);
    return r ? (r->source ? 1 : 2) : 0;
}

std::vector<std::uint8_t> FollowCellMarks(const Trace& trace, UiState& ui, const Step& step, const ui::SliceSpec& spec,
                                          std::size_t rows, std::size_t cols) {
    const int role = FollowRole(trace, ui, step.name);
    if (!role) return {};
    const Related* r = role == 3 ? nullptr : FindRelated(FollowedElements(trace, ui), step.name);
    const Boxes boxes = role == 3 ? Boxes{element_box(ui.follow.element.index)} : r->boxes;
    // Each box that holds the slice's fixed indices marks a rectangle of it (no per-cell search).
    std::vector<std::uint8_t> marks(rows * cols, 0);
    bool any = false;
    for (const Box& box : boxes) {
        bool hit = box.size() == spec.index.size();
        for (std::size_t a = 0; hit && a < box.size(); ++a)
            if (static_cast<int>(a) != spec.row_axis && static_cast<int>(a) != spec.col_axis)
                hit = spec.index[a] >= box[a].begin && spec.index[a] < box[a].end;
        if (!hit) continue;
        const Range r = spec.row_axis >= 0 ? box[spec.row_axis] : Range{0, 1};
        const Range c = spec.col_axis >= 0 ? box[spec.col_axis] : Range{0, 1};
        for (std::size_t i = r.begin; i < r.end && i < rows; ++i)
            for (std::size_t j = c.begin; j < c.end && j < cols; ++j) marks[i * cols + j] = static_cast<std::uint8_t>(role);
        any = true;
    }
    if (!any) return {};
    return marks;
}

void FollowedLine(UiState& ui) {
    if (!ui.follow.element.active()) return;
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(FollowColor(3)), "%s", _("following"));
    ImGui::SameLine();
    ImGui::PushFont(fonts().mono);
    ImGui::TextUnformatted((ui.follow.element.step + ui::format_index(ui.follow.element.index)).c_str());
    ImGui::PopFont();
    ImGui::SameLine();
    if (ImGui::SmallButton(_("clear (Esc)"))) ui.follow.element.clear();
    // One line always (the inspector keeps its height for it): the explanation only where it fits.
    const char* what =
        ui.follow.element.pinned ? _("pinned: outlines mark where it comes from and what it feeds") : _("(hover)");
    if (FitsOnThisLine(ImGui::CalcTextSize(what).x, ImGui::GetStyle().ItemSpacing.x)) {
        ImGui::SameLine();
        ImGui::TextDisabled("%s", what);
    }
}

void DrawFollowPanel(const Trace& trace, UiState& ui) {
    const Step* followed = ui.follow.element.shows_panel() ? trace.find(ui.follow.element.step) : nullptr;
    if (!ui.panels.follow || !followed) return;
    PlaceWindow(ui, ui::Panel::Follow);
    if (!ImGui::Begin(ui::window_title(_("Follow an element"), "Follow").c_str(), &ui.panels.follow)) {
        ImGui::End();
        return;
    }
    const std::vector<Related>& related = FollowedElements(trace, ui);
    if (ui.follow.reveal) {  // the inspector shows the followed element's slice
        ui.follow.reveal = false;
        SelectStep(trace, ui, followed->name);
        InspectorView& view = ViewFor(ui, *followed);
        view.spec.index = ui.follow.element.index;
        view.spec = ui::normalized(view.spec, followed->shape());
    }
    // Each piece on the line when it fits, else on the next (a narrow panel, a long index).
    const float pad = 2.0f * ImGui::GetStyle().FramePadding.x;
    const std::string element = ui.follow.element.step + ui::format_index(ui.follow.element.index);
    ImGui::TextUnformatted(_("following"));
    ImGui::PushFont(fonts().mono);
    SameLineIfFits(ImGui::CalcTextSize(element.c_str()).x);
    ImGui::TextColored(ImVec4(1, 1, 1, 1), "%s", element.c_str());
    ImGui::PopFont();
    SameLineIfFits(ImGui::CalcTextSize(_("unpin")).x + pad);
    if (ImGui::SmallButton(_("unpin"))) ui.follow.element.unpin();
    SameLineIfFits(ImGui::CalcTextSize(_("show")).x + pad);
    if (ImGui::SmallButton(_("show"))) ui.follow.reveal = true;
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", _("open the followed element's slice in the inspector"));
    SameLineIfFits(ImGui::CalcTextSize(_("clear (Esc)")).x + pad);
    if (ImGui::SmallButton(_("clear (Esc)"))) ui.follow.element.clear();
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(FollowColor(1)), "%s", _("\u25a0 comes from"));
    SameLineIfFits(ImGui::CalcTextSize(_("\u25a0 feeds")).x);
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(FollowColor(2)), "%s", _("\u25a0 feeds"));
    SameLineIfFits(ImGui::CalcTextSize(_("(thumbnails: click to open the step)")).x);
    ImGui::PushTextWrapPos(0.0f);
    ImGui::TextDisabled("%s", _("(thumbnails: click to open the step)"));
    ImGui::PopTextWrapPos();
    bool maps_differ = false;  // a zoo bug that moves elements: the correct pipeline's maps beside
    if (ui.zoo.run && ui.zoo.run->bug != Bug::None)
        for (const Related& r : related)
            if (const Related* c = FindRelated(CorrectRelated(trace, ui), r.step); !c || !(c->boxes == r.boxes))
                maps_differ = true;
    if (maps_differ)
        ImGui::TextColored(WarnColor(), "%s", _("index maps of the buggy code; dim lines: the correct pipeline's"));

    const float thumb_w = std::max(ImGui::GetContentRegionAvail().x * 0.5f, 120.0f);
    const float thumb_h = ImGui::GetFontSize() * 4.5f;
    if (ImGui::BeginTable("follow", 2, ImGuiTableFlags_ScrollY | ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerH)) {
        ImGui::TableSetupColumn("where", ImGuiTableColumnFlags_WidthStretch);
        ImGui::TableSetupColumn("map", ImGuiTableColumnFlags_WidthFixed, thumb_w);
        for (const Step& step : trace.steps) {
            const bool self = step.name == ui.follow.element.step;
            const Related* r = FindRelated(related, step.name);
            if (!self && !r) continue;
            ImGui::TableNextRow();
            ImGui::TableNextColumn();
            const int role = self ? 3 : (r->source ? 1 : 2);
            ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(FollowColor(role)), "%s", step.name.c_str());
            const char* role_text = self ? _("the element") : r->source ? _("comes from") : _("feeds");
            SameLineIfFits(ImGui::CalcTextSize(role_text).x);
            ImGui::TextDisabled("%s", role_text);
            ImGui::PushFont(fonts().mono);
            ImGui::PushTextWrapPos(0.0f);
            const Boxes boxes = self ? Boxes{element_box(ui.follow.element.index)} : r->boxes;
            ImGui::TextUnformatted((step.name + format_boxes(boxes, step.shape(), 3)).c_str());
            if (!self && maps_differ) {
                const Related* c = FindRelated(CorrectRelated(trace, ui), step.name);
                if (c && !(c->boxes == r->boxes))
                    ImGui::TextColored(DimColor(), "%s %s", _("correct:"), format_boxes(c->boxes, c->shape, 3).c_str());
            }
            ImGui::PopTextWrapPos();
            ImGui::PopFont();
            const std::size_t count = self ? std::size_t{1} : element_count(boxes);
            ImGui::PushTextWrapPos(0.0f);
            if (count == 1)
                ImGui::TextDisabled(_("1 element, %s"), op_name(step.op));
            else
                ImGui::TextDisabled(_("%zu elements, %s"), count, op_name(step.op));
            ImGui::PopTextWrapPos();
            ImGui::TableNextColumn();
            Thumbnail(trace, ui, step, boxes, ImVec2(std::max(ImGui::GetContentRegionAvail().x, 20.0f), thumb_h));
        }
        ImGui::EndTable();
    }
    ImGui::End();
}

}  // namespace attnscope
