// Putting a finished engine run on screen: the trace it replaces, the UI state it resets or keeps
// (the file's notes, the ViT's controls, the zoo's bug, the recent files, the inspector's views)
// and the step it opens at. Window-free, so tests/gui/test_run_result.cpp drives it.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "activations.hpp"
#include "bug_zoo.hpp"
#include "logic/engine_runner.hpp"
#include "trace.hpp"
#include "ui_state.hpp"

namespace attnscope {

// Selects a step by name (keeps the stepper in sync); nothing when the trace has no such step.
void SelectStep(const Trace& trace, UiState& ui, const std::string& name);
// The compared step's first divergence from the reference (nullptr when none or not a file).
const StepDifference* FirstDivergence(const Trace& trace);

// The step a file opens at: its attention maps when that is all it holds, else its first
// divergence from the reference, else the wanted step when the file has it, else attn or the first.
std::string FileStartStep(const FileTrace& file, const std::string& wanted);
// The step a config run opens at: the one wanted (on screen before, --step) when the trace has it,
// else attn (the heads grid and row sums at once), else context (flash has no attn), else the first.
std::string ConfigStartStep(const Trace& t, const std::string& wanted);
// The step a bug-zoo run opens at: where the bug first shows, else (a shape error) the last step run.
std::string ZooStartStep(const ZooRun& zoo);

// Forgets the open file (a config or ViT trace replaces it).
void CloseFile(UiState& ui);
// Shows block `block` of the ViT on screen: its attention Trace goes to the other panels.
void ShowVitBlock(const std::shared_ptr<const VitSnapshot>& vit, std::size_t block,
                  std::shared_ptr<const Trace>& trace, UiState& ui);
// Puts a file at the top of File > Open recent (absolute, so it opens from any folder).
void RememberRecent(UiState& ui, const std::string& path);

// Puts a finished run on screen (a file's, a ViT's or the config's), or records why it failed: a
// file whose head count is unknown asks for it, a file or ViT that failed shows its error, a config
// run its reason; the trace on screen stays when it failed. Returns false on failure.
bool AcceptResult(const EngineResult& r, std::shared_ptr<const Trace>& trace, std::shared_ptr<const VitSnapshot>& vit,
                  UiState& ui);

}  // namespace attnscope
