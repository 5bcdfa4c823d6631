#include "softgl/occlusion.hpp"

#include "softgl/softgl.hpp"

#include <imgui.h>
#include <imgui_internal.h>

#include <vector>

namespace attnscope {

namespace {

// A plain top-level window drawn this frame (not a popup, menu, tooltip or child window).
bool IsPlainWindow(const ImGuiWindow* w) {
    constexpr ImGuiWindowFlags kOverlay = ImGuiWindowFlags_ChildWindow | ImGuiWindowFlags_Tooltip |
                                          ImGuiWindowFlags_Popup | ImGuiWindowFlags_Modal | ImGuiWindowFlags_ChildMenu;
    return w->Active && !w->Hidden && w->ParentWindow == nullptr && !(w->Flags & kOverlay);
}

// Its background hides whatever lies under its whole rectangle: not collapsed to a title bar, an
// opaque background colour, and square corners or corners that coincide with those of the window
// behind (rounded corners let a little of the window behind show through, so only an identical
// rectangle, whose own corners are cut the same way, counts as covered then).
bool IsOpaque(const ImGuiWindow* w) {
    return !w->Collapsed && !(w->Flags & ImGuiWindowFlags_NoBackground) &&
           ImGui::GetStyle().Colors[ImGuiCol_WindowBg].w >= 1.0f;
}

bool Covers(const ImGuiWindow* front, const ImGuiWindow* back) {
    const ImRect f = front->Rect(), b = back->Rect();
    if (!f.Contains(b)) return false;
    if (front->WindowRounding <= 0.0f) return true;
    const bool same = f.Min.x == b.Min.x && f.Min.y == b.Min.y && f.Max.x == b.Max.x && f.Max.y == b.Max.y;
    const float r = front->WindowRounding;  // else the back window must stay clear of the front's corners
    const bool inside_x = b.Min.x >= f.Min.x + r && b.Max.x <= f.Max.x - r;
    const bool inside_y = b.Min.y >= f.Min.y + r && b.Max.y <= f.Max.y - r;
    return same || inside_x || inside_y;
}

// The windows covered at the end of the last frame, and those that skipped their work this frame.
std::vector<ImGuiID> g_covered_last_frame, g_skipped;

bool Listed(const std::vector<ImGuiID>& ids, ImGuiID id) {
    for (ImGuiID i : ids)
        if (i == id) return true;
    return false;
}

}  // namespace

bool SkipCoveredWindow() {
    const ImGuiWindow* w = GImGui->CurrentWindow;
    if (!w || !Listed(g_covered_last_frame, w->ID)) return false;
    g_skipped.push_back(w->ID);
    return true;
}

bool SkippedWindowUncovered() {
    bool uncovered = false;
    for (ImGuiID id : g_skipped) uncovered = uncovered || !Listed(g_covered_last_frame, id);
    g_skipped.clear();
    return uncovered;
}

int DropCoveredWindows(ImDrawData* draw_data) {
    if (!draw_data || draw_data->CmdListsCount == 0) {
        g_covered_last_frame.clear();
        return 0;
    }
    const ImVector<ImGuiWindow*>& windows = GImGui->Windows;  // display order, back to front
    std::vector<const ImGuiWindow*> covered;
    for (int i = 0; i < windows.Size; ++i) {
        const ImGuiWindow* back = windows[i];
        if (!IsPlainWindow(back)) continue;
        for (int j = i + 1; j < windows.Size; ++j) {
            const ImGuiWindow* front = windows[j];
            if (IsPlainWindow(front) && IsOpaque(front) && Covers(front, back)) {
                covered.push_back(back);
                break;
            }
        }
    }
    g_covered_last_frame.clear();
    for (const ImGuiWindow* c : covered) g_covered_last_frame.push_back(c->ID);
    if (covered.empty()) return 0;
    // Every draw list of a covered window: its own and its child windows' (tables, scrolling regions).
    std::vector<const ImDrawList*> dropped;
    for (const ImGuiWindow* w : windows)
        for (const ImGuiWindow* c : covered)
            if (w->RootWindow == c) dropped.push_back(w->DrawList);
    int kept = 0, removed = 0;
    for (int n = 0; n < draw_data->CmdListsCount; ++n) {
        ImDrawList* list = draw_data->CmdLists[n];
        bool drop = false;
        for (const ImDrawList* d : dropped) drop = drop || d == list;
        if (drop) {
            draw_data->TotalVtxCount -= list->VtxBuffer.Size;
            draw_data->TotalIdxCount -= list->IdxBuffer.Size;
            ++removed;
        } else {
            draw_data->CmdLists[kept++] = list;
        }
    }
    draw_data->CmdListsCount = kept;
    return removed;
}

}  // namespace attnscope
