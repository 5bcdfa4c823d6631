#include "softgl/backdrop.hpp"

#include <imgui_internal.h>

#include <string_view>
#include <unordered_map>

#include "softgl/backdrop_plan.hpp"
#include "softgl/pieces.hpp"

namespace attnscope {

namespace {

// A window of ImGui's first layer with a WindowBg background (not a popup, menu, tooltip or child).
bool IsPlainWindow(const ImGuiWindow* w) {
    constexpr ImGuiWindowFlags kOther = ImGuiWindowFlags_ChildWindow | ImGuiWindowFlags_Tooltip |
                                        ImGuiWindowFlags_Popup | ImGuiWindowFlags_Modal | ImGuiWindowFlags_ChildMenu;
    return !(w->Flags & kOther);
}

ui::Box BoxOf(const ImRect& r) { return {r.Min.x, r.Min.y, r.Max.x, r.Max.y}; }

// ImGui's flag for each ui::Corner.
constexpr ImDrawFlags kCornerFlag[] = {ImDrawFlags_RoundCornersTopLeft, ImDrawFlags_RoundCornersTopRight,
                                       ImDrawFlags_RoundCornersBottomLeft, ImDrawFlags_RoundCornersBottomRight};

}  // namespace

Backdrop::Backdrop(ImVec4 backdrop, bool enabled) : backdrop_(backdrop), enabled_(enabled && softgl_piece_on(SoftGlPiece::backdrop)) {}

void Backdrop::begin_frame() {
    if (!enabled_) return;
    ImVec4 none = ImGui::GetStyleColorVec4(ImGuiCol_WindowBg);
    none.w = 0.0f;  // ImDrawList::AddRectFilled draws nothing of alpha 0
    ImGui::PushStyleColor(ImGuiCol_WindowBg, none);
    began_ = true;
}

void Backdrop::end_frame() {
    if (!began_) return;
    ImGui::PopStyleColor();
}

ImDrawList* Backdrop::fresh_list() {
    if (used_ == pool_.size()) pool_.push_back(std::make_unique<ImDrawList>(ImGui::GetDrawListSharedData()));
    ImDrawList* list = pool_[used_++].get();
    list->_ResetForNewFrame();
    list->PushClipRectFullScreen();
    list->PushTextureID(ImGui::GetIO().Fonts->TexID);
    return list;
}

ImVec4 Backdrop::arrange(ImDrawData* draw_data) {
    const bool began = began_;
    began_ = false;
    painted_by_clear_ = 0;
    if (!began || !draw_data || !draw_data->Valid) return backdrop_;
    used_ = 0;

    // The draw lists as layers, back to front.
    std::unordered_map<const ImDrawList*, const ImGuiWindow*>& owner = owner_;  // kept: no allocation a frame
    owner.clear();
    for (const ImGuiWindow* w : GImGui->Windows)
        if (w->Active && !w->Hidden) owner[w->DrawList] = w;
    const ui::Box display{draw_data->DisplayPos.x, draw_data->DisplayPos.y,
                          draw_data->DisplayPos.x + draw_data->DisplaySize.x,
                          draw_data->DisplayPos.y + draw_data->DisplaySize.y};
    std::vector<ui::Layer> layers(static_cast<std::size_t>(draw_data->CmdListsCount));
    for (std::size_t n = 0; n < layers.size(); ++n) {
        ui::Layer& layer = layers[n];
        layer.box = display;  // a popup, a tooltip or a list of no window may draw anywhere (a modal's dimming)
        const auto it = owner.find(draw_data->CmdLists[n]);
        if (it == owner.end()) continue;
        const ImGuiWindow* w = it->second;
        const ImGuiWindow* root = w->RootWindow;
        if (!root || !IsPlainWindow(root)) continue;
        layer.box = BoxOf(root->Rect());
        layer.window_bg = w == root && !w->Collapsed && !(w->Flags & ImGuiWindowFlags_NoBackground);
        layer.rounding = w->WindowRounding;
        layer.title_height = w->TitleBarHeight();
    }
    const ImU32 window_bg = ImGui::GetColorU32(ImGuiCol_WindowBg);  // the true one, after end_frame()
    const bool opaque = (window_bg & IM_COL32_A_MASK) == IM_COL32_A_MASK;
    const ui::BackdropPlan plan = ui::plan_backdrop(layers, display, opaque);

    lists_.clear();
    if (plan.clear_with_window_bg) {
        ImDrawList* gaps = fresh_list();
        const ImU32 backdrop = ImGui::ColorConvertFloat4ToU32(backdrop_);
        for (const ui::Box& g : plan.gaps) gaps->AddRectFilled({g.x0, g.y0}, {g.x1, g.y1}, backdrop);
        for (const ui::CornerPatch& c : plan.corners) {
            gaps->AddRectFilled({c.cut.x0, c.cut.y0}, {c.cut.x1, c.cut.y1}, backdrop);
            gaps->AddRectFilled({c.rounded.x0, c.rounded.y0}, {c.rounded.x1, c.rounded.y1}, window_bg, c.rounding,
                                kCornerFlag[static_cast<int>(c.corner)]);
        }
        gaps->_PopUnusedDrawCmd();
        lists_.push_back(gaps);
    }
    std::size_t next_own = 0;
    for (std::size_t n = 0; n < layers.size(); ++n) {
        if (next_own < plan.own_background.size() && plan.own_background[next_own] == n) {
            ++next_own;
            const ImGuiWindow* w = owner.at(draw_data->CmdLists[n]);
            ImDrawList* bg = fresh_list();  // as ImGui's Begin() fills it
            bg->AddRectFilled(ImVec2(w->Pos.x, w->Pos.y + w->TitleBarHeight()),
                              ImVec2(w->Pos.x + w->Size.x, w->Pos.y + w->Size.y), window_bg, w->WindowRounding,
                              (w->Flags & ImGuiWindowFlags_NoTitleBar) ? 0 : ImDrawFlags_RoundCornersBottom);
            bg->_PopUnusedDrawCmd();
            lists_.push_back(bg);
        }
        lists_.push_back(draw_data->CmdLists[n]);
    }
    draw_data->CmdLists = lists_.data();
    draw_data->CmdListsCount = static_cast<int>(lists_.size());
    draw_data->TotalVtxCount = draw_data->TotalIdxCount = 0;
    for (const ImDrawList* l : lists_) {
        draw_data->TotalVtxCount += l->VtxBuffer.Size;
        draw_data->TotalIdxCount += l->IdxBuffer.Size;
    }
    if (!plan.clear_with_window_bg) return backdrop_;
    painted_by_clear_ = plan.on_backdrop.size();
    return ImGui::ColorConvertU32ToFloat4(window_bg);
}

}  // namespace attnscope
