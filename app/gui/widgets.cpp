#include "widgets.hpp"

#include <imgui_internal.h>  // SetItemUsingMouseWheel, GetContentRegionMaxAbs

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>

#include "fonts.hpp"
#include "logic/axes.hpp"
#include "logic/map_fit.hpp"
#include "logic/wrap.hpp"

namespace attnscope {

ImVec4 OkColor() { return ImVec4(0.35f, 0.85f, 0.45f, 1.0f); }
ImVec4 BadColor() { return ImVec4(1.0f, 0.38f, 0.35f, 1.0f); }
ImVec4 WarnColor() { return ImVec4(1.0f, 0.75f, 0.25f, 1.0f); }
ImVec4 DimColor() { return ImGui::GetStyle().Colors[ImGuiCol_TextDisabled]; }
ImVec4 LoadedColor() { return ImVec4(0.55f, 0.75f, 1.0f, 1.0f); }

ImVec4 AxisColorVec4(const std::string& label) {
    const std::uint32_t c = ui::axis_color(label);
    return ImVec4(((c >> 16) & 0xFF) / 255.0f, ((c >> 8) & 0xFF) / 255.0f, (c & 0xFF) / 255.0f, 1.0f);
}

ImU32 AxisColorU32(const std::string& label, float alpha) {
    ImVec4 v = AxisColorVec4(label);
    v.w = alpha;
    return ImGui::ColorConvertFloat4ToU32(v);
}

void ColoredShape(const Shape& shape, const Axes& axes) {
    ImGui::BeginGroup();
    ImGui::TextUnformatted("[");
    for (std::size_t i = 0; i < shape.size(); ++i) {
        ImGui::SameLine(0, 0);
        const std::string label = i < axes.size() ? axes[i] : "?";
        char buf[32];
        std::snprintf(buf, sizeof buf, "%zu", shape[i]);
        ImGui::TextColored(AxisColorVec4(label), "%s", buf);
        if (ImGui::IsItemHovered()) ImGui::SetTooltip(_("axis %zu: %s = %zu"), i, label.c_str(), shape[i]);
        if (i + 1 < shape.size()) {
            ImGui::SameLine(0, 0);
            ImGui::TextUnformatted(", ");
        }
    }
    ImGui::SameLine(0, 0);
    ImGui::TextUnformatted("]");
    ImGui::EndGroup();
}

ImVec2 AxisBoxSize(const std::string& label, std::size_t dim) {
    const std::string d = std::to_string(dim);
    const float w = std::max(ImGui::CalcTextSize(label.c_str()).x, ImGui::CalcTextSize(d.c_str()).x);
    const float pad = ImGui::GetFontSize() * 0.6f;
    return ImVec2(std::max(w + 2 * pad, ImGui::GetFontSize() * 2.6f), ImGui::GetFontSize() * 2.6f);
}

void DrawAxisBox(ImDrawList* dl, ImVec2 pos, const std::string& label, std::size_t dim, float alpha, bool outline) {
    const ImVec2 size = AxisBoxSize(label, dim);
    const std::uint32_t rgb = ui::axis_color(label);
    const ImU32 fill = AxisColorU32(label, alpha);
    const std::uint32_t t = ui::text_color_on(rgb);
    const ImU32 text = IM_COL32((t >> 16) & 0xFF, (t >> 8) & 0xFF, t & 0xFF, static_cast<int>(255 * alpha));
    const ImVec2 end(pos.x + size.x, pos.y + size.y);
    dl->AddRectFilled(pos, end, fill, 5.0f);
    if (outline) dl->AddRect(ImVec2(pos.x - 2, pos.y - 2), ImVec2(end.x + 2, end.y + 2), IM_COL32(255, 255, 255, 200), 6.0f, 0, 2.0f);
    const std::string d = std::to_string(dim);
    const float fs = ImGui::GetFontSize();
    const ImVec2 ls = ImGui::CalcTextSize(label.c_str());
    const ImVec2 ds = ImGui::CalcTextSize(d.c_str());
    dl->AddText(ImVec2(pos.x + (size.x - ls.x) / 2, pos.y + fs * 0.2f), text, label.c_str());
    dl->AddText(ImVec2(pos.x + (size.x - ds.x) / 2, pos.y + fs * 1.3f), text, d.c_str());
}

void EmptyState(const char* title, const char* detail) {
    const ImVec2 avail = ImGui::GetContentRegionAvail();
    const ImVec2 p = ImGui::GetCursorScreenPos();
    const float fs = ImGui::GetFontSize();
    const float h = std::max(avail.y, fs * 5.0f);
    ImDrawList* dl = ImGui::GetWindowDrawList();
    dl->AddRect(p, ImVec2(p.x + avail.x, p.y + h), ImGui::GetColorU32(ImGuiCol_Border), 6.0f, 0, 1.0f);
    // Broken by wrap_lines like every wrapped text (Chinese between characters, code whole), each
    // line centred.
    const float wrap = std::max(avail.x - 2 * fs, 50.0f);
    const auto measure = [](std::string_view s) { return ImGui::CalcTextSize(s.data(), s.data() + s.size()).x; };
    const auto title_lines = ui::wrap_lines(title, wrap, measure);
    const auto detail_lines = ui::wrap_lines(detail, wrap, measure);
    const float total = static_cast<float>(title_lines.size() + detail_lines.size()) * fs + fs * 0.6f;
    float y = p.y + std::max((h - total) * 0.4f, fs * 0.5f);
    const auto draw = [&](const std::vector<std::string_view>& lines, ImU32 color) {
        for (std::string_view line : lines) {
            const float w = measure(line);
            dl->AddText(ImVec2(p.x + std::max((avail.x - w) / 2, 0.0f), y), color, line.data(), line.data() + line.size());
            y += fs;
        }
    };
    draw(title_lines, ImGui::GetColorU32(ImGuiCol_Text));
    y += fs * 0.6f;
    draw(detail_lines, ImGui::GetColorU32(ImGuiCol_TextDisabled));
    ImGui::Dummy(ImVec2(avail.x, h));
}

void WrappedText(const char* text) {
    const float width = std::max(ImGui::GetContentRegionAvail().x, ImGui::GetFontSize() * 4.0f);
    const auto measure = [](std::string_view s) { return ImGui::CalcTextSize(s.data(), s.data() + s.size()).x; };
    for (std::string_view line : ui::wrap_lines(text, width, measure)) ImGui::TextUnformatted(line.data(), line.data() + line.size());
}

void WrappedTextF(const char* format, ...) {
    char text[4096];
    va_list args;
    va_start(args, format);
    std::vsnprintf(text, sizeof text, format, args);
    va_end(args);
    WrappedText(text);
}

void WrappedText(const ImVec4& color, const char* text) {
    ImGui::PushStyleColor(ImGuiCol_Text, color);
    WrappedText(text);
    ImGui::PopStyleColor();
}

bool FitsOnThisLine(float width, float spacing) {
    if (spacing < 0.0f) spacing = ImGui::GetStyle().ItemSpacing.x;
    return ImGui::GetItemRectMax().x + spacing + width <= ImGui::GetContentRegionMaxAbs().x;
}

void SameLineIfFits(float width, float spacing) {
    if (FitsOnThisLine(width, spacing)) ImGui::SameLine(0.0f, spacing);
}

float LabeledWidth(float frame_width, const char* label) {
    const float text = ImGui::CalcTextSize(label, nullptr, true).x;
    return frame_width + (text > 0.0f ? ImGui::GetStyle().ItemInnerSpacing.x + text : 0.0f);
}

float ButtonWidth(const char* label) {
    return ImGui::CalcTextSize(label, nullptr, true).x + ImGui::GetStyle().FramePadding.x * 2.0f;
}

void WrappedTooltip(const char* text, float width) {
    ImGui::BeginTooltip();
    ImGui::PushTextWrapPos(ImGui::GetFontSize() * width);
    ImGui::TextUnformatted(text);
    ImGui::PopTextWrapPos();
    ImGui::EndTooltip();
}

void TakeMouseWheel() { ImGui::SetItemUsingMouseWheel(); }

void HelpMarker(const char* text) {
    ImGui::PushTextWrapPos(-1.0f);  // never broken inside wrapped text
    ImGui::TextDisabled("(?)");
    ImGui::PopTextWrapPos();
    if (ImGui::IsItemHovered()) WrappedTooltip(text, 30.0f);
}

HeatmapHover DrawHeatmap(std::uintptr_t texture, const ui::Slice2D& slice, const HeatmapOptions& o) {
    HeatmapHover hover;
    ImVec2 p0 = ImGui::GetCursorScreenPos();
    ImVec2 size = o.size;
    if (size.x <= 0) size.x = ImGui::GetContentRegionAvail().x;
    if (size.y <= 0) size.y = ImGui::GetContentRegionAvail().y;
    size.x = std::max(size.x, 8.0f);
    size.y = std::max(size.y, 8.0f);
    const float flag_w = o.marked_rows ? std::max(4.0f, ImGui::GetFontSize() * 0.3f) + 3.0f : 0.0f;
    if (o.fit_item && !slice.empty() && !o.square_cells && !o.fill) {
        const ui::MapSize m = ui::fitted_map(slice.rows, slice.cols, std::max(size.x - flag_w, 8.0f), size.y);
        size = ImVec2(std::max(m.w + flag_w, 8.0f), std::max(m.h, 8.0f));
        hover.cell_stretch = m.stretch;
    }
    ImGui::InvisibleButton(o.id, size);
    p0.x += flag_w;  // room for the row flags
    size.x = std::max(size.x - flag_w, 8.0f);
    const bool item_hovered = ImGui::IsItemHovered();
    ImDrawList* dl = ImGui::GetWindowDrawList();
    if (slice.empty()) return hover;

    const float rows = static_cast<float>(slice.rows), cols = static_cast<float>(slice.cols);
    const float base = std::min(size.x / cols, size.y / rows);
    // Square maps (N x N' attention) keep square cells, unless asked to fill; other slices fill the area.
    const bool square = o.square_cells || (slice.rows == slice.cols && !o.fill);
    float cw = square ? base : size.x / cols;
    float ch = square ? base : size.y / rows;
    InspectorView fit;
    InspectorView& v = o.view ? *o.view : fit;
    v.zoom = std::clamp(v.zoom, 1.0f, 512.0f);
    const ImGuiIO& io = ImGui::GetIO();
    if (o.view && item_hovered) {
        TakeMouseWheel();
        if (io.MouseWheel != 0.0f) {
            const float old_cw = cw * v.zoom, old_ch = ch * v.zoom;
            const float mx = v.pan_x + (io.MousePos.x - p0.x) / old_cw;
            const float my = v.pan_y + (io.MousePos.y - p0.y) / old_ch;
            v.zoom = std::clamp(v.zoom * std::pow(1.25f, io.MouseWheel), 1.0f, 512.0f);
            v.pan_x = mx - (io.MousePos.x - p0.x) / (cw * v.zoom);
            v.pan_y = my - (io.MousePos.y - p0.y) / (ch * v.zoom);
        }
        if (ImGui::IsMouseDoubleClicked(0)) v = InspectorView{v.spec, v.has_spec};
    }
    if (o.view && ImGui::IsItemActive() && ImGui::IsMouseDragging(0)) {
        v.pan_x -= io.MouseDelta.x / (cw * v.zoom);
        v.pan_y -= io.MouseDelta.y / (ch * v.zoom);
    }
    cw *= v.zoom;
    ch *= v.zoom;
    const float img_w = std::min(size.x, cols * cw), img_h = std::min(size.y, rows * ch);
    const float vis_c = img_w / cw, vis_r = img_h / ch;
    v.pan_x = std::clamp(v.pan_x, 0.0f, std::max(0.0f, cols - vis_c));
    v.pan_y = std::clamp(v.pan_y, 0.0f, std::max(0.0f, rows - vis_r));
    const ImVec2 a = p0, b(p0.x + img_w, p0.y + img_h);
    hover.image_min = a;
    hover.image_max = b;

    dl->PushClipRect(a, b, true);
    if (texture) {
        dl->AddImage(reinterpret_cast<ImTextureID>(texture), a, b, ImVec2(v.pan_x / cols, v.pan_y / rows),
                     ImVec2((v.pan_x + vis_c) / cols, (v.pan_y + vis_r) / rows));
    } else {
        dl->AddRectFilled(a, b, IM_COL32(60, 60, 60, 255));
    }
    const int r0 = static_cast<int>(std::floor(v.pan_y)), c0 = static_cast<int>(std::floor(v.pan_x));
    const int r1 = std::min(static_cast<int>(std::ceil(v.pan_y + vis_r)), static_cast<int>(slice.rows));
    const int c1 = std::min(static_cast<int>(std::ceil(v.pan_x + vis_c)), static_cast<int>(slice.cols));
    auto cell_x = [&](float c) { return a.x + (c - v.pan_x) * cw; };
    auto cell_y = [&](float r) { return a.y + (r - v.pan_y) * ch; };
    if (cw >= 12.0f && ch >= 12.0f) {  // cell grid at high zoom
        const ImU32 grid = IM_COL32(0, 0, 0, 90);
        for (int c = c0; c <= c1; ++c) dl->AddLine(ImVec2(cell_x(c), a.y), ImVec2(cell_x(c), b.y), grid);
        for (int r = r0; r <= r1; ++r) dl->AddLine(ImVec2(a.x, cell_y(r)), ImVec2(b.x, cell_y(r)), grid);
    }
    // Outlines only where a row is tall enough to stay visible inside its outline; the flags at
    // the left edge (below) mark rows at every zoom.
    if (o.marked_rows && o.outline_marked_rows && ch >= 8.0f) {
        for (int r = r0; r < r1 && r < static_cast<int>(o.marked_rows->size()); ++r)
            if ((*o.marked_rows)[r])
                dl->AddRect(ImVec2(a.x + 1, cell_y(r) + 0.5f), ImVec2(b.x - 1, cell_y(r + 1) - 0.5f), o.marked_color, 0.0f, 0,
                            std::clamp(ch * 0.12f, 1.0f, 2.0f));
    }
    if (o.cell_marks && o.mark_colors && o.cell_marks->size() == slice.rows * slice.cols) {
        // The outline of each marked region, drawn just outside its cells (inside at the image's
        // border) so the colours under the marks stay readable at every zoom.
        const float t = std::clamp(std::min(cw, ch) * 0.15f, 1.5f, 3.0f);
        const auto edges = ui::mark_outline(*o.cell_marks, slice.rows, slice.cols, static_cast<std::size_t>(std::max(r0, 0)),
                                            static_cast<std::size_t>(std::max(r1, 0)), static_cast<std::size_t>(std::max(c0, 0)),
                                            static_cast<std::size_t>(std::max(c1, 0)));
        for (const ui::MarkEdge& e : edges) {
            const ImU32 color = o.mark_colors[e.mark];
            if (e.horizontal) {
                const float y = std::clamp(cell_y(static_cast<float>(e.line)) + e.outward * t * 0.5f, a.y + t * 0.5f, b.y - t * 0.5f);
                dl->AddLine(ImVec2(cell_x(static_cast<float>(e.begin)) - t, y), ImVec2(cell_x(static_cast<float>(e.end)) + t, y),
                            color, t);
            } else {
                const float x = std::clamp(cell_x(static_cast<float>(e.line)) + e.outward * t * 0.5f, a.x + t * 0.5f, b.x - t * 0.5f);
                dl->AddLine(ImVec2(x, cell_y(static_cast<float>(e.begin)) - t), ImVec2(x, cell_y(static_cast<float>(e.end)) + t),
                            color, t);
            }
        }
    }
    if (item_hovered) {
        const float fc = v.pan_x + (io.MousePos.x - a.x) / cw, fr = v.pan_y + (io.MousePos.y - a.y) / ch;
        if (io.MousePos.x >= a.x && io.MousePos.x < b.x && io.MousePos.y >= a.y && io.MousePos.y < b.y && fc >= 0 &&
            fr >= 0 && fc < cols && fr < rows) {
            hover.hovered = true;
            hover.col = static_cast<std::size_t>(fc);
            hover.row = static_cast<std::size_t>(fr);
            if (cw >= 3.0f && ch >= 3.0f)
                dl->AddRect(ImVec2(cell_x(hover.col), cell_y(hover.row)),
                            ImVec2(cell_x(hover.col + 1.0f), cell_y(hover.row + 1.0f)), IM_COL32(255, 255, 255, 230),
                            0.0f, 0, 2.0f);
        }
    }
    dl->PopClipRect();
    if (o.marked_rows) {  // flags left of the image, also visible when rows are tiny
        const float w = std::max(4.0f, ImGui::GetFontSize() * 0.3f);
        for (int r = r0; r < r1 && r < static_cast<int>(o.marked_rows->size()); ++r)
            if ((*o.marked_rows)[r])
                dl->AddRectFilled(ImVec2(a.x - w - 2, std::max(cell_y(r), a.y)), ImVec2(a.x - 2, std::min(cell_y(r + 1), b.y)),
                                  o.marked_color);
    }
    if (o.selected) dl->AddRect(ImVec2(a.x - 3, a.y - 3), ImVec2(b.x + 3, b.y + 3), IM_COL32(255, 255, 255, 255), 0, 0, 2.5f);
    if (ImGui::IsItemDeactivated() && item_hovered) {
        const ImVec2 drag = ImGui::GetMouseDragDelta(0, 0.0f);
        if (std::fabs(drag.x) + std::fabs(drag.y) < 4.0f) hover.clicked = true;
    }
    if (o.view && v.zoom > 1.0f) {
        char buf[48];
        std::snprintf(buf, sizeof buf, _("zoom %.1fx (double-click: fit)"), v.zoom);
        dl->AddText(ImVec2(a.x + 4, b.y - ImGui::GetFontSize() - 2), IM_COL32(255, 255, 255, 220), buf);
    }
    return hover;
}

float ColorLegendWidth() { return ImGui::GetFontSize() * 6.0f; }

void ColorLegend(const ui::ColorRange& range, float height, bool has_nan, bool has_inf, bool short_ticks) {
    ImDrawList* dl = ImGui::GetWindowDrawList();
    const ImVec2 p = ImGui::GetCursorScreenPos();
    const float fs = ImGui::GetFontSize();
    const float bar_w = fs * 1.1f;
    const float extra = (has_nan ? fs * 1.4f : 0.0f) + (has_inf ? fs * 1.4f : 0.0f);
    const float bar_h = std::max(height - extra - fs, fs * 3.0f);
    const ImVec2 top(p.x, p.y + fs * 0.5f);
    const int steps = 64;
    for (int i = 0; i < steps; ++i) {
        const float t0 = 1.0f - static_cast<float>(i) / steps, t1 = 1.0f - static_cast<float>(i + 1) / steps;
        const auto c0 = ui::colormap_color(range.colormap, t0), c1 = ui::colormap_color(range.colormap, t1);
        const float y0 = top.y + bar_h * i / steps, y1 = top.y + bar_h * (i + 1) / steps;
        dl->AddRectFilledMultiColor(ImVec2(top.x, y0), ImVec2(top.x + bar_w, y1), IM_COL32(c0[0], c0[1], c0[2], 255),
                                    IM_COL32(c0[0], c0[1], c0[2], 255), IM_COL32(c1[0], c1[1], c1[2], 255),
                                    IM_COL32(c1[0], c1[1], c1[2], 255));
    }
    dl->AddRect(top, ImVec2(top.x + bar_w, top.y + bar_h), IM_COL32(200, 200, 200, 255));
    const int ticks = bar_h > fs * 10 ? 5 : 3;
    const std::vector<float> values = ui::legend_values(range, ticks);
    for (int i = 0; i < ticks; ++i) {
        const float t = static_cast<float>(i) / (ticks - 1);
        const float y = top.y + bar_h * (1.0f - t);
        dl->AddLine(ImVec2(top.x + bar_w, y), ImVec2(top.x + bar_w + 4, y), IM_COL32(220, 220, 220, 255));
        const double span = std::fabs(static_cast<double>(values.back()) - values.front());
        const std::string s = short_ticks ? ui::format_tick(values[i], span) : ui::format_value(values[i]);
        dl->AddText(ImVec2(top.x + bar_w + 6, y - fs * 0.5f), ImGui::GetColorU32(ImGuiCol_Text), s.c_str());
    }
    float y = top.y + bar_h + fs * 0.6f;
    if (has_nan) {
        dl->AddRectFilled(ImVec2(top.x, y), ImVec2(top.x + bar_w, y + fs), IM_COL32(255, 0, 255, 255));
        dl->AddText(ImVec2(top.x + bar_w + 6, y), ImGui::GetColorU32(ImGuiCol_Text), "NaN");
        y += fs * 1.4f;
    }
    if (has_inf) {
        dl->AddRectFilled(ImVec2(top.x, y), ImVec2(top.x + bar_w, y + fs), IM_COL32(0, 255, 255, 255));
        dl->AddText(ImVec2(top.x + bar_w + 6, y), ImGui::GetColorU32(ImGuiCol_Text), "Inf");
    }
    ImGui::Dummy(ImVec2(ColorLegendWidth(), height));
}

LogAxis::LogAxis(double lo, double hi, float x0_, float x1_) : x0(x0_), x1(x1_) {
    if (!(hi > 0) || lo > hi) lo = hi = 1.0;
    d0 = std::floor(std::log10(lo));
    d1 = std::max(std::ceil(std::log10(hi)), d0 + 1);
}

float LogAxis::x(double value) const { return x0 + static_cast<float>((std::log10(value) - d0) / (d1 - d0)) * (x1 - x0); }

void DrawDecades(ImDrawList* dl, const LogAxis& axis, float top, float bottom) {
    const ImU32 dim = ImGui::GetColorU32(ImGuiCol_TextDisabled);
    for (double d = axis.d0; d <= axis.d1; d += 1.0) {
        const float x = axis.x(std::pow(10.0, d));
        dl->AddLine(ImVec2(x, top), ImVec2(x, bottom), IM_COL32(255, 255, 255, 30));
        char buf[16];
        std::snprintf(buf, sizeof buf, "1e%d", static_cast<int>(d));
        const float w = ImGui::CalcTextSize(buf).x;
        if (axis.d1 - axis.d0 <= 8 || static_cast<long>(d - axis.d0) % 2 == 0)
            dl->AddText(ImVec2(std::clamp(x - w / 2, axis.x0 - w / 2, axis.x1 - w / 2), bottom + 2), dim, buf);
    }
}

}  // namespace attnscope
