// The panels. Each is DrawXxxPanel(const Trace&, UiState&): it reads the immutable trace, changes
// only UI state, returns early after Begin when collapsed, and draws an explicit empty/error state.
#pragma once

#include <imgui.h>

#include <cstdint>
#include <string>
#include <vector>

#include "logic/i18n.hpp"
#include "logic/run_result.hpp"
#include "trace.hpp"
#include "ui_state.hpp"

namespace attnscope {

using ui::_;  // every user-visible label: _("English text")

struct VitSnapshot;

void DrawMenuBar(const Trace& trace, UiState& ui);
void DrawHelpWindows(const Trace& trace, UiState& ui);
void DrawPipelinePanel(const Trace& trace, UiState& ui);
void DrawShapePanel(const Trace& trace, UiState& ui);
void DrawInspectorPanel(const Trace& trace, UiState& ui);
void DrawHeadsPanel(const Trace& trace, UiState& ui);
void DrawRowSumPanel(const Trace& trace, UiState& ui);
void DrawConfigPanel(const Trace& trace, UiState& ui);
// The backward pass (trace.gradients): gradient norm by step, the selected step's gradient,
// parameter gradients, and the softmax-saturation demo (scale off, raise C).
void DrawGradientsPanel(const Trace& trace, UiState& ui);
// Masks and the attention path (standard / flash / kv-cache / windowed) in the config panel;
// returns true when the user committed a change (beyond_config.cpp).
bool DrawBeyondConfig(AttentionConfig& config);
// Flash tiles, the KV cache or the windows of the trace on screen (nothing for the textbook path).
void DrawBeyondPanel(const Trace& trace, UiState& ui);
// The flash path's attention map, computed per visible tile on demand (flash_map_panel.cpp).
void DrawFlashMapPanel(const Trace& trace, UiState& ui);
// The ViT on its picture: prediction, per-head overlays, rollout, block and query selectors.
// vit is null while the first run is loading (or failed): an empty state is drawn.
void DrawImagePanel(const VitSnapshot* vit, UiState& ui);
// Teaching (app/gui/panels/follow_panel.cpp, zoo_panel.cpp, cost_panel.cpp): where the followed
// element comes from and what it feeds; the bug zoo's banner and menu; the cost table.
void DrawFollowPanel(const Trace& trace, UiState& ui);
void DrawZooPanel(const Trace& trace, UiState& ui);
void DrawBugZooMenu(const Trace& trace, UiState& ui);
void DrawCostPanel(const Trace& trace, UiState& ui);
// The followed element's related steps for this trace (cached in ui; empty when nothing is followed).
const std::vector<Related>& FollowedElements(const Trace& trace, UiState& ui);
// 0: not involved, 1: a source of the followed element, 2: fed by it, 3: the followed step.
int FollowRole(const Trace& trace, UiState& ui, const std::string& step);
// Colours of FollowRole 1..3 (outlines, row marks).
ImU32 FollowColor(int role);
// Marks of one slice: per cell 0 or a FollowRole, for the heatmap overlay (empty: none).
std::vector<std::uint8_t> FollowCellMarks(const Trace& trace, UiState& ui, const Step& step,
                                          const ui::SliceSpec& spec, std::size_t rows, std::size_t cols);
// "following attn[0, 1, 2, 3] (pinned)" and a button that clears it (also Esc): why cells are outlined.
void FollowedLine(UiState& ui);
void DrawFileBrowser(UiState& ui);     // File > Open
void OpenFileBrowser(UiState& ui);     // shows it, listing the last folder (or the open file's)
void DrawFileErrorModal(UiState& ui);  // a file that could not be opened
void DrawHeadsQuestion(UiState& ui);   // a file that does not say its head count: which h?
// The classroom (panels/classroom_panel.cpp): F5 / Esc, the quiz's hold on "next", presentation
// mode (replaces every other panel), the Quiz window, View > Language.
void HandleClassroomKeys(UiState& ui, bool f5, bool escape);  // whether each was pressed this frame
void QuizGate(const Trace& trace, UiState& ui);
void DrawPresentation(const Trace& trace, const VitSnapshot* vit, UiState& ui);
// Presentation mode on a ViT (image_panel.cpp): the picture with its patch grid, `side` square under
// its caption; where the class token looks, per head and their mean in the block shown, in width x
// height (nothing where they would be too small to read).
void DrawVitSlidePicture(const VitSnapshot& vit, UiState& ui, float side);
void DrawVitSlideMaps(const VitSnapshot& vit, UiState& ui, float width, float height);
void DrawQuizWindow(const Trace& trace, UiState& ui);
void DrawLanguageMenu(UiState& ui);
// True when the quiz is on and will ask this later step's shape: panels show "?" instead.
bool QuizHidesShape(const UiState& ui, int index, const std::string& step);
void OpenExportDialog(UiState& ui);    // File > Export heatmap as PNG: folder, name ...
void DrawExportDialog(UiState& ui);    // ... and "replace the file?" before overwriting

// ---- shared by the panels -------------------------------------------------------------------
// The selected step (nullptr when the trace is empty).
const Step* SelectedStep(const Trace& trace, const UiState& ui);
// Play or Pause (the button, Space). The first Play, before the user moved, starts at the first step:
// the opening step is where the maps are, but the lesson begins with the input.
void TogglePlay(UiState& ui);
// Records the last item's rectangle under `name` for the live tests (ui.frame.item_rects).
void MarkItem(UiState& ui, const std::string& name);
// BeginMenu, with the menu's label recorded as "menu:<id>".
bool BeginMarkedMenu(UiState& ui, const char* label, const char* id, bool enabled = true);
// The inspector's view of a step, created and normalized for its shape.
InspectorView& ViewFor(UiState& ui, const Step& step);
// The default arrangement's rectangle of a panel for this display, menu bar and UI scale
// (logic/layout.hpp).
ui::Rect DefaultRect(const UiState& ui, ui::Panel p);
// True once per View > Reset layout for each panel (also for the panels shown later): it is placed
// again whatever the user did to it.
bool TakeLayoutReset(UiState& ui, ui::Panel p);
// Places the next window at its default rectangle: when it is first shown, and after Reset layout
// (or a resize that re-places the panels); after a resize that keeps the user's arrangement, moves it
// back inside the display if it reaches outside.
void PlaceWindow(UiState& ui, ui::Panel p);
// Whether a panel shown last frame is not where PlaceWindow last put it (the user moved or resized it,
// or imgui.ini restored it). Between frames.
bool PanelsArrangedByUser(const UiState& ui);
// View > Reset layout (Ctrl+L): every panel placed again, and a status line saying so.
void ResetLayout(UiState& ui);

}  // namespace attnscope
