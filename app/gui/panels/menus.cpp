// Main menu bar (File, View, Help) and the Help windows (keys, about).
#include <imgui.h>

#include <algorithm>

#include "panels/panels.hpp"
#include "widgets.hpp"

namespace attnscope {

void DrawMenuBar(const Trace& trace, UiState& ui) {
    if (!ImGui::BeginMainMenuBar()) return;
    if (ImGui::BeginMenu("File")) {
        if (ImGui::MenuItem("Export heatmap as PNG", nullptr, false, SelectedStep(trace, ui) != nullptr))
            OpenExportDialog(ui);
        if (ImGui::IsItemHovered())
            ImGui::SetTooltip("Writes the inspector's current slice as a PNG: choose the folder and name (asks before replacing a file)");
        if (ImGui::MenuItem("Open ...", "Ctrl+O")) OpenFileBrowser(ui);
        if (ImGui::IsItemHovered())
            ImGui::SetTooltip("Your saved activations (.npz, .safetensors, a folder of .npy), a dump or a checkpoint; "
                              "you can also drop a file on the window");
        if (ImGui::BeginMenu("Open recent", !ui.recent_files.empty())) {
            for (const std::string& path : ui.recent_files)
                if (ImGui::MenuItem(path.c_str())) {
                    ui.open_request = path;
                    ui.open_block.reset();
                    ui.open_heads.reset();
                }
            ImGui::Separator();
            if (ImGui::MenuItem("Clear the list")) ui.recent_files.clear();
            ImGui::EndMenu();
        }
        if (ImGui::MenuItem("Back to the demo / config", nullptr, false, !ui.file_path.empty() || ui.vit_on_screen))
            ui.back_to_config_requested = true;
        ImGui::Separator();
        if (ImGui::MenuItem("Quit", "Ctrl+Q")) ui.quit_requested = true;
        ImGui::EndMenu();
    }
    if (ImGui::BeginMenu("View")) {
        ImGui::MenuItem("Pipeline", nullptr, &ui.panels.pipeline);
        ImGui::MenuItem("Shape view", nullptr, &ui.panels.shape);
        ImGui::MenuItem("Tensor inspector", nullptr, &ui.panels.inspector);
        ImGui::MenuItem("Heads", nullptr, &ui.panels.heads);
        ImGui::MenuItem("Row sums", nullptr, &ui.panels.row_sums);
        ImGui::MenuItem("Config", nullptr, &ui.panels.config, !ui.vit_on_screen);
        if (ui.vit_on_screen) ImGui::MenuItem("Image (ViT)", nullptr, &ui.show_image);
        ImGui::Separator();
        if (ImGui::MenuItem("Zoom in", "Ctrl+=")) ui.ui_scale = std::min(ui.ui_scale * 1.1f, 3.0f);
        if (ImGui::MenuItem("Zoom out", "Ctrl+-")) ui.ui_scale = std::max(ui.ui_scale / 1.1f, 0.5f);
        if (ImGui::MenuItem("Reset zoom", "Ctrl+0")) ui.ui_scale = 1.0f;
        ImGui::EndMenu();
    }
    if (ImGui::BeginMenu("Help")) {
        ImGui::MenuItem("Keys", "F1", &ui.show_help);
        ImGui::MenuItem("About attnscope", nullptr, &ui.show_about);
        ImGui::EndMenu();
    }
    // The open file and its block (a selector when the file holds several blocks).
    if (!ui.file_path.empty()) {
        ImGui::SameLine(0, ImGui::GetFontSize() * 2);
        ImGui::TextColored(WarnColor(), "%s", ui::display_name(ui.file_path).c_str());
        if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", ui.file_path.c_str());
        if (ui.file_blocks.size() > 1 && ui.file_block) {
            ImGui::SameLine();
            ImGui::SetNextItemWidth(ImGui::GetFontSize() * 6.5f);
            const std::string current = "block " + std::to_string(*ui.file_block);
            if (ImGui::BeginCombo("##block", current.c_str())) {
                for (std::size_t b : ui.file_blocks)
                    if (ImGui::Selectable(("block " + std::to_string(b)).c_str(), b == *ui.file_block) && b != *ui.file_block) {
                        ui.open_request = ui.file_path;
                        ui.open_block = b;
                    }
                ImGui::EndCombo();
            }
            if (ImGui::IsItemHovered()) ImGui::SetTooltip("the file holds %zu blocks; pick the one to show", ui.file_blocks.size());
        } else if (ui.file_block) {
            ImGui::SameLine();
            ImGui::TextDisabled("block %zu", *ui.file_block);
        }
    }
    // The ViT's block: the other panels show this block's attention.
    if (ui.vit_on_screen && ui.vit_blocks > 0) {
        ImGui::SameLine(0, ImGui::GetFontSize() * 2);
        ImGui::TextColored(WarnColor(), "ViT");
        ImGui::SameLine();
        ImGui::SetNextItemWidth(ImGui::GetFontSize() * 6.5f);
        const std::string current = "block " + std::to_string(ui.vit_block);
        if (ImGui::BeginCombo("##vitblock", current.c_str())) {
            for (std::size_t b = 0; b < ui.vit_blocks; ++b)
                if (ImGui::Selectable(("block " + std::to_string(b)).c_str(), b == ui.vit_block)) ui.vit_block_request = b;
            ImGui::EndCombo();
        }
        if (ImGui::IsItemHovered())
            ImGui::SetTooltip("the model has %zu blocks; the pipeline, shapes, inspector, heads and row sums show this "
                              "block's attention",
                              ui.vit_blocks);
    }
    if (ui.vit_loading) {
        ImGui::SameLine();
        ImGui::TextColored(WarnColor(), "running the ViT ...");
    }
    if (!ui.loading_path.empty()) {
        ImGui::SameLine();
        ImGui::TextColored(WarnColor(), "reading %s ...", ui::display_name(ui.loading_path).c_str());
    }
    // Where we are, and any status message, on the right.
    if (const Step* s = SelectedStep(trace, ui)) {
        ImGui::SameLine(0, ImGui::GetFontSize() * 2);
        ImGui::TextDisabled("step %d / %zu:", ui.stepper.selected + 1, trace.steps.size());
        ImGui::SameLine();
        ImGui::TextUnformatted(s->name.c_str());
        ImGui::SameLine();
        ImGui::TextDisabled("%s", s->code.c_str());
    }
    if (!ui.status.empty() && ui.now - ui.status_time < 8.0) {
        const float w = ImGui::CalcTextSize(ui.status.c_str()).x;
        ImGui::SameLine(ImGui::GetWindowWidth() - w - ImGui::GetFontSize());
        ImGui::TextColored(WarnColor(), "%s", ui.status.c_str());
    }
    ImGui::EndMainMenuBar();
}

void DrawHelpWindows(const Trace& /*trace*/, UiState& ui) {
    if (ui.show_help) {
        ImGui::SetNextWindowPos(ImVec2(ImGui::GetIO().DisplaySize.x * 0.5f, ImGui::GetIO().DisplaySize.y * 0.4f),
                                ImGuiCond_Appearing, ImVec2(0.5f, 0.5f));
        if (ImGui::Begin("Keys", &ui.show_help, ImGuiWindowFlags_AlwaysAutoResize)) {
            static const char* const keys[][2] = {
                {"\u2190 / \u2192", "previous / next step"},
                {"Home / End", "first / last step"},
                {"Space", "play / pause through the steps (pace: slider in the pipeline panel)"},
                {"Ctrl+= / Ctrl+-", "zoom the whole UI (Ctrl+0 resets)"},
                {"mouse wheel", "zoom the heatmap around the cursor (double-click: fit)"},
                {"drag", "pan a zoomed heatmap"},
                {"click a head", "open that head large in the inspector"},
                {"F1", "this window"},
                {"Ctrl+O", "open a file (or drop it on the window)"},
                {"Ctrl+Q", "quit"},
            };
            if (ImGui::BeginTable("keys", 2, ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingFixedFit)) {
                for (const auto& k : keys) {
                    ImGui::TableNextRow();
                    ImGui::TableNextColumn();
                    ImGui::TextUnformatted(k[0]);
                    ImGui::TableNextColumn();
                    ImGui::TextUnformatted(k[1]);
                }
                ImGui::EndTable();
            }
        }
        ImGui::End();
    }
    if (ui.show_about) {
        ImGui::SetNextWindowPos(ImVec2(ImGui::GetIO().DisplaySize.x * 0.5f, ImGui::GetIO().DisplaySize.y * 0.4f),
                                ImGuiCond_Appearing, ImVec2(0.5f, 0.5f));
        if (ImGui::Begin("About attnscope", &ui.show_about, ImGuiWindowFlags_AlwaysAutoResize)) {
            ImGui::Text("attnscope: step through multi-head attention");
            ImGui::TextDisabled("Every panel reads the recorded trace of ViTAttention.forward;");
            ImGui::TextDisabled("nothing on screen is recomputed by the UI.");
            ImGui::Separator();
            ImGui::Text("OpenGL: %s", ui.gl_info.c_str());
            ImGui::Text("Dear ImGui %s", IMGUI_VERSION);
            if (!ui.settings_path.empty()) ImGui::Text("settings: %s", ui.settings_path.c_str());
        }
        ImGui::End();
    }
}

}  // namespace attnscope
