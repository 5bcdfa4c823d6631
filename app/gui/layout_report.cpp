// Where the panels are (layout_report.hpp): read from ImGui's internal window and table records.
#include "layout_report.hpp"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include <imgui.h>
#include <imgui_internal.h>  // the windows' rectangles, scroll ranges and tables' columns

#include "logic/layout.hpp"

namespace attnscope {

namespace {

// What the last frame cut off inside the panel `root` with no scrollbar to reach it, in pixels past
// the edge: the reach of each of its windows' content (the panel and its child regions) beyond the
// window's clip, and the reach of each table column's cells and header beyond the column's clip.
// Half a pixel is rounding, not a cut.
std::vector<ui::PanelReport::Cut> MeasureCuts(ImGuiContext& ctx, const ImGuiWindow* root) {
    std::vector<ui::PanelReport::Cut> cuts;
    auto add = [&](float px, std::string where) {
        if (px > 0.5f) cuts.push_back({std::move(where), px});
    };
    for (const ImGuiWindow* c : ctx.Windows) {
        if (!c->Active || c->Hidden || c->RootWindow != root) continue;
        const std::string name = c == root ? "window" : std::string("child ") + c->Name;
        if (!c->ScrollbarX) add(c->DC.CursorMaxPos.x - c->InnerClipRect.Max.x, name + ": right edge");
        if (!c->ScrollbarY && (c->Flags & ImGuiWindowFlags_NoScrollbar))
            add(c->DC.CursorMaxPos.y - c->InnerClipRect.Max.y, name + ": bottom edge");
    }
    for (int n = 0; n < ctx.Tables.GetMapSize(); ++n) {
        const ImGuiTable* t = ctx.Tables.TryGetMapData(n);
        if (!t || t->LastFrameActive != ctx.FrameCount || !t->OuterWindow || t->OuterWindow->RootWindow != root ||
            (t->Flags & ImGuiTableFlags_ScrollX))
            continue;
        for (int i = 0; i < t->ColumnsCount; ++i) {
            const ImGuiTableColumn& col = t->Columns[i];
            if (!col.IsEnabled) continue;
            const float reach = std::max({col.ContentMaxXFrozen, col.ContentMaxXUnfrozen, col.ContentMaxXHeadersIdeal});
            const float edge = std::min(col.ClipRect.Max.x, t->InnerClipRect.Max.x);
            const char* label = ImGui::TableGetColumnName(t, i);
            add(reach - edge, "table column " + (label && *label ? std::string(label) : std::to_string(i)));
        }
    }
    return cuts;
}

}  // namespace

std::optional<PanelWindow> FindPanelWindow(ui::Panel p) {
    const ImGuiWindow* w = ImGui::FindWindowByName((std::string("###") + ui::panel_id(p)).c_str());
    if (!w) return std::nullopt;
    return PanelWindow{{w->Pos.x, w->Pos.y, w->SizeFull.x, w->SizeFull.y}, w->Active};
}

std::string LayoutReport() {
    ImGuiContext& ctx = *GImGui;
    constexpr ImGuiWindowFlags kOverlay = ImGuiWindowFlags_ChildWindow | ImGuiWindowFlags_Tooltip |
                                          ImGuiWindowFlags_Popup | ImGuiWindowFlags_Modal | ImGuiWindowFlags_ChildMenu;
    float menu_h = 0.0f;
    std::vector<const ImGuiWindow*> panels;
    for (const ImGuiWindow* w : ctx.Windows) {
        if (!w->Active || w->Hidden || w->ParentWindow || (w->Flags & kOverlay)) continue;
        if (std::strcmp(w->Name, "##MainMenuBar") == 0) menu_h = w->Size.y;
        else panels.push_back(w);
    }
    auto rect = [](const ImGuiWindow* w) { return ui::Rect{w->Pos.x, w->Pos.y, w->Size.x, w->Size.y}; };
    std::vector<ui::PanelReport> report;
    for (std::size_t i = 0; i < panels.size(); ++i) {
        const ImGuiWindow* w = panels[i];
        const char* id = std::strstr(w->Name, "###");  // the English ID whatever the language
        std::vector<ui::Rect> above;
        for (std::size_t j = i + 1; j < panels.size(); ++j) above.push_back(rect(panels[j]));
        ui::PanelReport p;
        p.title = id ? id + 3 : w->Name;
        p.rect = rect(w);
        p.visible_fraction = ui::visible_fraction(rect(w), above);
        for (const ImGuiWindow* c : ctx.Windows)  // the window and its child regions (a table's rows)
            if (c->Active && c->RootWindow == w && c->ScrollMax.y > 0.5f) p.scrolls = true;
        p.cuts = MeasureCuts(ctx, w);
        report.push_back(p);
    }
    return ui::layout_report_json(ctx.IO.DisplaySize.x, ctx.IO.DisplaySize.y, menu_h, report);
}

}  // namespace attnscope
