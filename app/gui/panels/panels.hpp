// The panels. Each is DrawXxxPanel(const Trace&, UiState&): it reads the immutable trace, changes
// only UI state, returns early after Begin when collapsed, and draws an explicit empty/error state.
#pragma once

#include "trace.hpp"
#include "ui_state.hpp"

namespace attnscope {

struct VitSnapshot;

void DrawMenuBar(const Trace& trace, UiState& ui);
void DrawHelpWindows(const Trace& trace, UiState& ui);
void DrawPipelinePanel(const Trace& trace, UiState& ui);
void DrawShapePanel(const Trace& trace, UiState& ui);
void DrawInspectorPanel(const Trace& trace, UiState& ui);
void DrawHeadsPanel(const Trace& trace, UiState& ui);
void DrawRowSumPanel(const Trace& trace, UiState& ui);
void DrawConfigPanel(const Trace& trace, UiState& ui);
// The ViT on its picture: prediction, per-head overlays, rollout, block and query selectors.
// vit is null while the first run is loading (or failed): an empty state is drawn.
void DrawImagePanel(const VitSnapshot* vit, UiState& ui);
void DrawFileBrowser(UiState& ui);     // File > Open
void OpenFileBrowser(UiState& ui);     // shows it, listing the last folder (or the open file's)
void DrawFileErrorModal(UiState& ui);  // a file that could not be opened
void OpenExportDialog(UiState& ui);    // File > Export heatmap as PNG: folder, name ...
void DrawExportDialog(UiState& ui);    // ... and "replace the file?" before overwriting

// ---- shared by the panels -------------------------------------------------------------------
// The selected step (nullptr when the trace is empty).
const Step* SelectedStep(const Trace& trace, const UiState& ui);
// Selects a step by name (keeps the stepper in sync).
void SelectStep(const Trace& trace, UiState& ui, const std::string& name);
// The inspector's view of a step, created and normalized for its shape.
InspectorView& ViewFor(UiState& ui, const Step& step);
// Initial window placement for a 1600 x 1000 layout, scaled to the display.
void PlaceWindow(float x, float y, float w, float h);
// The compared step's first divergence from the reference (nullptr when none or not a file).
const StepDifference* FirstDivergence(const Trace& trace);
// The steps whose tensors the heads grid shows.
bool IsAttentionMap(const std::string& step);

}  // namespace attnscope
