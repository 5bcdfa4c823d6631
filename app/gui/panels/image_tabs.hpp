// The Image panel's pieces (app/gui/panels/image_*.cpp): the picture the user clicks, shared by the
// tabs and the presentation slide, and the four tabs, one file each.
#pragma once

#include <imgui.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "logic/engine_runner.hpp"
#include "logic/vit_view.hpp"
#include "ui_state.hpp"

namespace attnscope::image {

ImTextureID Tex(std::uintptr_t id);
ImVec2 Add(ImVec2 a, ImVec2 b);

// A square picture the user can click: hover outlines a patch and names it under the pictures, a
// click makes it the query, a right-click goes back to the class token.
void ClickablePicture(const char* id, std::uintptr_t tex, float side, const PatchGrid& grid, bool grid_lines,
                      UiState& ui, std::optional<ui::PatchPick>* hovered_patch);

// "patch row 7, column 9 = token 108 (pixels [112, 128) x [144, 160))"
std::string PatchName(const PatchGrid& grid, ui::PatchPick p);

// The tabs, on the selected block.
void AttentionTab(const VitSnapshot& vit, UiState& ui, std::size_t block);  // image_attention_tab.cpp
void PositionsTab(const VitSnapshot& vit, UiState& ui, std::size_t block);  // image_positions_tab.cpp
void DropPathTab(const VitSnapshot& vit, UiState& ui, std::size_t block);   // image_drop_path_tab.cpp
void GradientFlowTab(const VitSnapshot& vit, UiState& ui, std::size_t block);  // image_gradient_tab.cpp

}  // namespace attnscope::image
