// File > Export heatmap as PNG: a save dialog (folder browser + name) and the "overwrite?" modal.
// Like the other panels it only queues a command (command::ExportHeatmap, with the target
// path); the frame loop reads the heatmap back from GL and writes the PNG atomically.
#include <imgui.h>

#include <cstdio>

#include "logic/i18n.hpp"
#include "panels/panels.hpp"
#include "widgets.hpp"

namespace attnscope {

using ui::_;

namespace {

void GoTo(ui::ExportDialog& d, const std::string& folder) {
    d.folder = folder;
    d.refresh = true;
}

void Confirm(UiState& ui, const std::string& path) {
    ui.export_dialog.target = path;
    ui.export_dialog.open = false;
    ui.export_dialog.confirm_path.clear();
    ui.ask(command::ExportHeatmap{});
}

}  // namespace

void OpenExportDialog(UiState& ui) {
    ui::ExportDialog& d = ui.export_dialog;
    d.open = true;
    d.refresh = true;
    d.error.clear();
    d.confirm_path.clear();
    if (d.folder.empty()) d.folder = ui.browser.folder.empty() ? "." : ui.browser.folder;
    std::snprintf(d.name, sizeof d.name, "%s", ui::default_export_name(ui.selection.step).c_str());
}

void DrawExportDialog(UiState& ui) {
    ui::ExportDialog& d = ui.export_dialog;
    if (d.open) {
        if (d.refresh) {
            d.refresh = false;
            d.listing = ui::list_folder(d.folder);
            if (d.listing.error.empty()) d.folder = d.listing.folder;
        }
        const ImVec2 size = ImGui::GetIO().DisplaySize;
        ImGui::SetNextWindowSize(ImVec2(size.x * 0.5f, size.y * 0.5f), ImGuiCond_Appearing);
        ImGui::SetNextWindowPos(ImVec2(size.x * 0.5f, size.y * 0.5f), ImGuiCond_Appearing, ImVec2(0.5f, 0.5f));
        if (ImGui::Begin(_("Export heatmap as PNG"), &d.open, ImGuiWindowFlags_NoCollapse)) {
            if (ImGui::ArrowButton("##export_up", ImGuiDir_Up)) GoTo(d, ui::parent_folder(d.folder));
            ImGui::SameLine();
            ImGui::TextUnformatted(d.folder.c_str());
            const float footer = ImGui::GetFrameHeightWithSpacing() * 3.0f;
            if (ImGui::BeginChild("##export_list", ImVec2(0, -footer), true)) {
                if (!d.listing.error.empty()) WrappedTextF("%s", d.listing.error.c_str());
                for (const ui::DirEntry& e : d.listing.entries) {
                    if (e.is_dir) {
                        if (ImGui::Selectable((e.name + "/").c_str())) GoTo(d, d.folder == "/" ? "/" + e.name : d.folder + "/" + e.name);
                    } else if (ui::is_image_file(e.name)) {
                        if (ImGui::Selectable(e.name.c_str())) std::snprintf(d.name, sizeof d.name, "%s", e.name.c_str());
                    }
                }
            }
            ImGui::EndChild();
            ImGui::SetNextItemWidth(-ImGui::GetFontSize() * 10);
            const bool enter = ImGui::InputText(_("file name"), d.name, sizeof d.name, ImGuiInputTextFlags_EnterReturnsTrue);
            if (!d.error.empty()) ImGui::TextColored(ImVec4(1.0f, 0.45f, 0.4f, 1.0f), "%s", d.error.c_str());
            if (ImGui::Button(_("Save"), ImVec2(ImGui::GetFontSize() * 6, 0)) || enter) {
                const ui::ExportTarget t = ui::export_target(d.folder, d.name);
                d.error = t.error;
                if (t.error.empty()) {
                    if (t.exists) d.confirm_path = t.path;
                    else Confirm(ui, t.path);
                }
            }
            ImGui::SameLine();
            if (ImGui::Button(_("Cancel"), ImVec2(ImGui::GetFontSize() * 6, 0))) d.open = false;
        }
        ImGui::End();
    }
    if (!d.confirm_path.empty() && !ImGui::IsPopupOpen(_("Replace the file?"))) ImGui::OpenPopup(_("Replace the file?"));
    if (ImGui::BeginPopupModal(_("Replace the file?"), nullptr, ImGuiWindowFlags_AlwaysAutoResize)) {
        ImGui::Text(_("%s already exists. Replace it?"), d.confirm_path.c_str());
        if (ImGui::Button(_("Replace"), ImVec2(ImGui::GetFontSize() * 6, 0))) {
            Confirm(ui, d.confirm_path);
            ImGui::CloseCurrentPopup();
        }
        ImGui::SameLine();
        if (ImGui::Button(_("Keep it"), ImVec2(ImGui::GetFontSize() * 6, 0)) || ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape))) {
            d.confirm_path.clear();
            ImGui::CloseCurrentPopup();
        }
        ImGui::EndPopup();
    }
}

}  // namespace attnscope
