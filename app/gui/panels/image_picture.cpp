// The Image panel's clickable picture: the patch under the mouse outlined and named, a click picks
// the query token.
#include <imgui.h>

#include <algorithm>
#include <cstdio>

#include "panels/image_tabs.hpp"
#include "widgets.hpp"

namespace attnscope::image {

ImTextureID Tex(std::uintptr_t id) { return reinterpret_cast<ImTextureID>(id); }

ImVec2 Add(ImVec2 a, ImVec2 b) { return ImVec2(a.x + b.x, a.y + b.y); }

namespace {

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

}  // namespace

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
    if (const auto q = QueryPatch(ui.vit.query, grid)) {
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
        if (ImGui::IsItemClicked(ImGuiMouseButton_Left)) ui.vit.query = grid.token(p->row, p->col);
    }
    if (ImGui::IsItemClicked(ImGuiMouseButton_Right)) ui.vit.query = 0;
}

std::string PatchName(const PatchGrid& grid, ui::PatchPick p) {
    char text[256];
    std::snprintf(text, sizeof text, _("patch row %zu, column %zu = token %zu (pixels [%zu, %zu) x [%zu, %zu))"), p.row,
                  p.col, grid.token(p.row, p.col), p.row * grid.patch, (p.row + 1) * grid.patch, p.col * grid.patch,
                  (p.col + 1) * grid.patch);
    return text;
}

}  // namespace attnscope::image
