// Main menu bar (File, View, Help) and the Help windows (keys, about).
#include <imgui.h>

#include <algorithm>
#include <string>

#include "about.hpp"
#include "beyond.hpp"
#include "logic/i18n.hpp"
#include "panels/panels.hpp"
#include "widgets.hpp"

namespace attnscope {

void DrawMenuBar(const Trace& trace, UiState& ui) {
    if (!ImGui::BeginMainMenuBar()) return;
    if (BeginMarkedMenu(ui, _("File"), "File")) {
        if (ImGui::MenuItem(_("Export heatmap as PNG"), nullptr, false, SelectedStep(trace, ui) != nullptr))
            OpenExportDialog(ui);
        if (ImGui::IsItemHovered())
            ImGui::SetTooltip(_("Writes the inspector's current slice as a PNG: choose the folder and name (asks before replacing a file)"));
        if (ImGui::MenuItem(_("Open ..."), "Ctrl+O")) OpenFileBrowser(ui);
        MarkItem(ui, "file:open");
        if (ImGui::IsItemHovered())
            ImGui::SetTooltip(_("Your saved activations (torch.save .pt/.pth, .npz, .safetensors, a folder of .npy), a dump or a checkpoint; "
                              "you can also drop a file on the window"));
        if (ImGui::BeginMenu(_("Open recent"), !ui.recent_files.empty())) {
            for (const std::string& path : ui.recent_files)
                if (ImGui::MenuItem(path.c_str())) {
                    ui.ask(command::Open{path});
                    ui.file.open_block.reset();
                    ui.file.open_heads.reset();
                }
            ImGui::Separator();
            if (ImGui::MenuItem(_("Clear the list"))) ui.recent_files.clear();
            ImGui::EndMenu();
        }
        if (ImGui::BeginMenu(_("Demo ViT"))) {
            // The two models trained by tools/: the kind of the red shape, and its quadrant (the
            // one the position experiment needs). They run on the picture on screen, else a sample.
            const struct { const char* label; std::string path; bool installed; } demos[] = {
                {_("What is the red shape? (demo_vit)"), demo_model_path(), demo_model_installed()},
                {_("Where is the red shape? (where_vit, needs position embeddings)"), where_model_path(),
                 where_model_installed()}};
            for (const auto& demo : demos)
                if (ImGui::MenuItem(demo.label, nullptr, false, demo.installed)) {
                    ui.ask(command::Open{demo.path});
                    ui.file.open_block.reset();
                    ui.file.open_heads.reset();
                    if (ui.file.picture.empty()) ui.file.picture = demo_image_path();
                }
            ImGui::EndMenu();
        }
        if (ImGui::MenuItem(_("Back to the demo / config"), nullptr, false, !ui.file.path.empty() || ui.vit.on_screen))
            ui.ask(command::BackToConfig{});
        MarkItem(ui, "file:back");
        ImGui::Separator();
        if (ImGui::MenuItem(_("Quit"), "Ctrl+Q")) ui.ask(command::Quit{});
        ImGui::EndMenu();
    }
    if (BeginMarkedMenu(ui, _("View"), "View")) {
        ImGui::MenuItem(_("Pipeline"), nullptr, &ui.panels.pipeline);
        ImGui::MenuItem(_("Shape view"), nullptr, &ui.panels.shape);
        ImGui::MenuItem(_("Tensor inspector"), nullptr, &ui.panels.inspector);
        ImGui::MenuItem(_("Heads"), nullptr, &ui.panels.heads);
        ImGui::MenuItem(_("Row sums"), nullptr, &ui.panels.row_sums);
        ImGui::MenuItem(_("Gradients"), nullptr, &ui.panels.gradients);
        ImGui::MenuItem(_("Beyond the textbook"), nullptr, trace.beyond ? &ui.beyond.visible : &ui.beyond.mask_visible,
                        trace.beyond != nullptr || trace.find("masked") != nullptr);
        ImGui::MenuItem(_("Attention map (flash)"), nullptr, &ui.flash_map.visible,
                        trace.beyond != nullptr && trace.beyond->flash != nullptr);
        ImGui::MenuItem(_("Config"), nullptr, &ui.panels.config, !ui.vit.on_screen);
        ImGui::MenuItem(_("Follow an element"), nullptr, &ui.panels.follow);
        ImGui::MenuItem(_("Cost"), nullptr, &ui.panels.cost);
        if (ui.vit.on_screen) ImGui::MenuItem(_("Image (ViT)"), nullptr, &ui.panels.image);
        ImGui::Separator();
        if (ImGui::MenuItem(_("Zoom in"), "Ctrl+=")) ui.scale.zoom_in();
        if (ImGui::MenuItem(_("Zoom out"), "Ctrl+-")) ui.scale.zoom_out();
        if (ImGui::MenuItem(_("Reset zoom"), "Ctrl+0")) ui.scale.zoom = 1.0f;
        if (ImGui::MenuItem(_("Reset layout"), "Ctrl+L")) ResetLayout(ui);
        if (ImGui::IsItemHovered())
            ImGui::SetTooltip(_("Every panel back to its place and size for this window and zoom"));
        ImGui::Separator();
        ImGui::MenuItem(_("Presentation mode"), "F5", &ui.classroom.presentation);
        MarkItem(ui, "view:presentation");
        ImGui::MenuItem(_("Quiz: predict the next shape"), nullptr, &ui.classroom.quiz);
        MarkItem(ui, "view:quiz");
        DrawLanguageMenu(ui);
        ImGui::EndMenu();
    }
    DrawBugZooMenu(trace, ui);
    if (ImGui::BeginMenu(_("Help"))) {
        ImGui::MenuItem(_("Keys"), "F1", &ui.panels.help);
        ImGui::MenuItem(_("About attnscope"), nullptr, &ui.panels.about);
        ImGui::EndMenu();
    }
    // The open file and its block (a selector when the file holds several blocks).
    if (!ui.file.path.empty()) {
        ImGui::SameLine(0, ImGui::GetFontSize() * 2);
        ImGui::TextColored(WarnColor(), "%s", ui::display_name(ui.file.path).c_str());
        if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", ui.file.path.c_str());
        if (ui.file.blocks.size() > 1 && ui.file.block) {
            ImGui::SameLine();
            ImGui::SetNextItemWidth(ImGui::GetFontSize() * 6.5f);
            const std::string current = _("block ") + std::to_string(*ui.file.block);
            if (ImGui::BeginCombo("##block", current.c_str())) {
                for (std::size_t b : ui.file.blocks)
                    if (ImGui::Selectable((_("block ") + std::to_string(b)).c_str(), b == *ui.file.block) && b != *ui.file.block) {
                        ui.ask(command::Open{ui.file.path});
                        ui.file.open_block = b;
                    }
                ImGui::EndCombo();
            }
            if (ImGui::IsItemHovered()) ImGui::SetTooltip(_("the file holds %zu blocks; pick the one to show"), ui.file.blocks.size());
        } else if (ui.file.block) {
            ImGui::SameLine();
            ImGui::TextDisabled(_("block %zu"), *ui.file.block);
        }
    }
    // The ViT's block: the other panels show this block's attention.
    if (ui.vit.on_screen && ui.vit.blocks > 0) {
        ImGui::SameLine(0, ImGui::GetFontSize() * 2);
        ImGui::TextColored(WarnColor(), "ViT");
        ImGui::SameLine();
        ImGui::SetNextItemWidth(ImGui::GetFontSize() * 6.5f);
        const std::string current = _("block ") + std::to_string(ui.vit.block);
        if (ImGui::BeginCombo("##vitblock", current.c_str())) {
            for (std::size_t b = 0; b < ui.vit.blocks; ++b)
                if (ImGui::Selectable((_("block ") + std::to_string(b)).c_str(), b == ui.vit.block)) ui.ask(command::ShowVitBlock{b});
            ImGui::EndCombo();
        }
        if (ImGui::IsItemHovered())
            ImGui::SetTooltip(_("the model has %zu blocks; the pipeline, shapes, inspector, heads and row sums show this "
                              "block's attention"),
                              ui.vit.blocks);
    }
    if (ui.vit.loading) {
        ImGui::SameLine();
        ImGui::TextColored(WarnColor(), _("running the ViT ..."));
    }
    if (!ui.file.loading.empty()) {
        ImGui::SameLine();
        ImGui::TextColored(WarnColor(), _("reading %s ..."), ui::display_name(ui.file.loading).c_str());
    }
    // Where we are, and any status message, on the right.
    if (const Step* s = SelectedStep(trace, ui)) {
        ImGui::SameLine(0, ImGui::GetFontSize() * 2);
        ImGui::TextDisabled(_("step %d / %zu:"), ui.selection.stepper.selected + 1, trace.steps.size());
        ImGui::SameLine();
        ImGui::TextUnformatted(s->name.c_str());
        ImGui::SameLine();
        ImGui::TextDisabled("%s", ui::tr_code(s->code).c_str());
    }
    if (!ui.status.text.empty() && ui.frame.now - ui.status.time < 8.0) {
        const float w = ImGui::CalcTextSize(ui.status.text.c_str()).x;
        ImGui::SameLine(ImGui::GetWindowWidth() - w - ImGui::GetFontSize());
        ImGui::TextColored(WarnColor(), "%s", ui.status.text.c_str());
    }
    ImGui::EndMainMenuBar();
}

void DrawHelpWindows(const Trace& /*trace*/, UiState& ui) {
    if (ui.panels.help) {
        ImGui::SetNextWindowPos(ImVec2(ImGui::GetIO().DisplaySize.x * 0.5f, ImGui::GetIO().DisplaySize.y * 0.4f),
                                ImGuiCond_Appearing, ImVec2(0.5f, 0.5f));
        if (ImGui::Begin(ui::window_title(_("Keys"), "Keys").c_str(), &ui.panels.help,
                         ImGuiWindowFlags_AlwaysAutoResize)) {
            const char* const keys[][2] = {
                {"\u2190 / \u2192", _("previous / next step")},
                {"Home / End", _("first / last step")},
                {"Space", _("play / pause through the steps (pace: slider in the pipeline panel)")},
                {"Ctrl+= / Ctrl+-", _("zoom the whole UI (Ctrl+0 resets)")},
                {"Ctrl+L", _("every panel back to its place (View > Reset layout)")},
                {_("mouse wheel"), _("zoom the heatmap around the cursor (double-click: fit)")},
                {_("drag"), _("pan a zoomed heatmap")},
                {_("click a head"), _("open that head large in the inspector")},
                {"F1", _("this window")},
                {"F5", _("presentation mode (Esc leaves)")},
                {"Ctrl+O", _("open a file (or drop it on the window)")},
                {"Ctrl+Q", _("quit")},
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
    if (ui.panels.about) {
        ImGui::SetNextWindowPos(ImVec2(ImGui::GetIO().DisplaySize.x * 0.5f, ImGui::GetIO().DisplaySize.y * 0.4f),
                                ImGuiCond_Appearing, ImVec2(0.5f, 0.5f));
        if (ImGui::Begin(ui::window_title(_("About attnscope"), "About").c_str(), &ui.panels.about,
                         ImGuiWindowFlags_AlwaysAutoResize)) {
            ImGui::Text(_("attnscope: step through multi-head attention"));
            ImGui::TextDisabled(_("Every panel reads the recorded trace of ViTAttention.forward;"));
            ImGui::TextDisabled(_("nothing on screen is recomputed by the UI."));
            ImGui::Separator();
            static const BuildInfo build = build_info();  // about.hpp: what attnscope --version prints
            ImGui::Text(_("Version %s"), build.version.c_str());
            ImGui::Text(_("OpenBLAS: %s"), build.openblas_config.c_str());
            ImGui::Text(_("OpenBLAS kernels: %s"), build.openblas_kernels.c_str());
            ImGui::Text(_("AVX-512 kernels: %s"),
                        build.avx512 ? _("used") : _("not used (no AVX-512F on this CPU, or ATTNSCOPE_NO_AVX512 set)"));
            ImGui::Text(_("OpenGL: %s"), ui.gl_info.c_str());
            ImGui::Text(_("Dear ImGui %s"), IMGUI_VERSION);
            if (!ui.settings_path.empty()) ImGui::Text(_("settings: %s"), ui.settings_path.c_str());
            ImGui::Text(_("demo model and pictures: %s"), data_dir().c_str());
        }
        ImGui::End();
    }
}

}  // namespace attnscope
