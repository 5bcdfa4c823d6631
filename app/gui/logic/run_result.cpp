// Putting a finished engine run on screen (logic/run_result.hpp).
#include "logic/run_result.hpp"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "heads.hpp"
#include "logic/file_browser.hpp"

namespace attnscope {

void SelectStep(const Trace& trace, UiState& ui, const std::string& name) {
    for (std::size_t i = 0; i < trace.steps.size(); ++i)
        if (trace.steps[i].name == name) {
            ui.selection.stepper.set_count(static_cast<int>(trace.steps.size()));
            ui.selection.stepper.select(static_cast<int>(i));
            return;
        }
}

const StepDifference* FirstDivergence(const Trace& trace) {
    for (const Step& s : trace.steps)  // pipeline order
        if (const StepDifference* d = trace.difference(s.name); d && !d->ok) return d;
    return nullptr;
}

std::string FileStartStep(const FileTrace& file, const std::string& wanted) {
    const Trace& t = file.trace;
    if (file.attention_maps_only && t.find("attn")) return "attn";
    if (const StepDifference* d = FirstDivergence(t)) return d->step;
    if (!wanted.empty() && t.find(wanted)) return wanted;
    if (t.find("attn")) return "attn";
    return t.steps.empty() ? std::string() : t.steps.front().name;
}

std::string ConfigStartStep(const Trace& t, const std::string& wanted) {
    for (const char* name : {wanted.c_str(), "attn", "context"})
        if (t.find(name)) return name;
    return t.steps.empty() ? std::string() : t.steps.front().name;
}

std::string ZooStartStep(const ZooRun& zoo) {
    if (zoo.buggy.find(zoo.first_step)) return zoo.first_step;
    return zoo.buggy.steps.empty() ? std::string() : zoo.buggy.steps.back().name;
}

void CloseFile(UiState& ui) {
    ui.file.path.clear();
    ui.file.blocks.clear();
    ui.file.block.reset();
    ui.file.notes.clear();
    ui.file.vit_family.clear();
    ui.file.open_heads.reset();
    ui.inspector.show_difference = false;
}

void ShowVitBlock(const std::shared_ptr<const VitSnapshot>& vit, std::size_t block,
                  std::shared_ptr<const Trace>& trace, UiState& ui) {
    ui.vit.block = std::min(block, vit->trace.blocks.size() - 1);
    trace = std::shared_ptr<const Trace>(vit, &vit->trace.blocks[ui.vit.block].attention);
    ++ui.frame.trace_generation;
}

void RememberRecent(UiState& ui, const std::string& path) {
    std::error_code ec;
    const std::string absolute = std::filesystem::absolute(path, ec).lexically_normal().string();
    ui.recent_files = ui::add_recent(ui.recent_files, ec ? path : absolute);
}

bool AcceptResult(const EngineResult& r, std::shared_ptr<const Trace>& trace, std::shared_ptr<const VitSnapshot>& vit,
                  UiState& ui) {
    const bool was_file = !ui.file.loading.empty();
    const bool was_vit = ui.vit.loading;
    const std::string path = ui.file.loading;
    ui.file.loading.clear();
    ui.vit.loading = false;
    if (!r.trace) {
        if (r.heads_unknown) {  // ask for h; the trace on screen stays until it is given
            ui.heads_question.path = r.heads_unknown->path;
            ui.heads_question.picture = r.heads_unknown->picture;
            ui.heads_question.block = was_file ? ui.file.open_block : std::nullopt;
            ui.heads_question.dim = r.heads_unknown->dim;
            ui.heads_question.choice = head_count_suggestion(r.heads_unknown->dim);
            ui.heads_question.shown = false;
        } else if (was_file || was_vit) {
            ui.file.error = r.error;
            ui.file.error_shown = false;
        } else {
            ui.engine.error = r.error;
        }
        return false;
    }
    trace = r.trace;
    ui.engine.seconds = r.seconds;
    ++ui.frame.trace_generation;
    if (!r.zoo) {
        ui.zoo.run.reset();
        ui.zoo.bug = Bug::None;
    }
    const bool was_vit_on_screen = ui.vit.on_screen;
    if (!r.vit) {
        vit.reset();
        ui.vit.on_screen = false;
    }
    if (r.vit) {
        const bool first = !ui.vit.on_screen;
        vit = r.vit;
        ui.vit.on_screen = true;
        ++ui.vit.generation;
        ui.vit.blocks = vit->trace.blocks.size();
        ui.vit.patch = vit->fresh_patch;
        ui.vit.stem = vit->fresh_stem;
        ui.vit.drop_path = vit->drop_path;  // the drop-path controls show what ran
        if (vit->fresh_patch == 0) {  // the position controls show what ran
            ui.vit.pos_embed = vit->positions.pos_embed;
            ui.vit.shuffle = vit->positions.shuffle_seed.has_value();
            ui.vit.shuffle_seed = vit->positions.shuffle_seed.value_or(ui.vit.shuffle_seed);
        }
        ShowVitBlock(vit, first ? ui.vit.blocks - 1 : ui.vit.block, trace, ui);  // default: the last block
        if (vit->fresh_patch == 0) RememberRecent(ui, vit->image_path);  // Open recent offers the picture again
        ui.file.picture = vit->image_path;
        if (was_file) RememberRecent(ui, path);  // a whole ViT opened as a file: and the checkpoint, first
        if (ui.vit.query >= vit->trace.grid.tokens()) ui.vit.query = 0;
        ui.engine.error = {};
        ui.file.error = {};
        if (first) ui.inspector.views.clear();  // other shapes than the demo's
        CloseFile(ui);
        SelectStep(*trace, ui, ConfigStartStep(*trace, ui.selection.step));
    } else if (r.file) {
        const bool same_file = ui.file.path == path;
        ui.file.path = path;
        ui.file.blocks = r.file->blocks;
        ui.file.block = r.file->block;
        ui.file.notes = r.file->notes;
        ui.file.vit_family = r.vit_family;
        ui.file.error = {};
        RememberRecent(ui, path);
        if (!same_file) ui.inspector.views.clear();  // other shapes: zoom and slices start fresh
        ui.inspector.show_difference = FirstDivergence(*trace) != nullptr;
        SelectStep(*trace, ui, same_file ? ui.selection.step : FileStartStep(*r.file, ui.selection.step));
    } else {
        ui.engine.error = {};
        if (!ui.file.path.empty() || was_vit_on_screen) ui.inspector.views.clear();
        CloseFile(ui);
        ui.zoo.run = r.zoo;  // a bug-zoo run: the buggy trace with its differences from the correct one
        ui.zoo.bug = r.zoo ? r.zoo->bug : Bug::None;
        ui.inspector.show_difference = r.zoo && FirstDivergence(*trace) != nullptr;
        SelectStep(*trace, ui, r.zoo ? ZooStartStep(*r.zoo) : ConfigStartStep(*trace, ui.selection.step));
    }
    return true;
}

}  // namespace attnscope
