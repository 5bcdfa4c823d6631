// File > Open: a file browser drawn in ImGui (folders first, torch.save/.npy/.npz/.safetensors, a folder of
// .npy opened as one source), and the modal that says why a file could not be opened. Both only
// queue commands in UiState (command::Open); the frame loop runs trace_from_file in the worker.
#include <imgui.h>

#include <cstdio>
#include <cstring>

#include "heads.hpp"
#include "panels/panels.hpp"
#include "widgets.hpp"

namespace attnscope {

namespace {

void GoTo(UiState& ui, const std::string& folder) {
    ui.browser.folder = folder;
    ui.browser.refresh = true;
    ui.browser.selected = -1;
}

void RequestOpen(UiState& ui, const std::string& path) {
    ui.ask(command::Open{path});
    ui.file.open_block.reset();
    ui.file.open_heads.reset();
    ui.browser.open = false;
}

std::string Join(const std::string& folder, const std::string& name) {
    return folder == "/" ? "/" + name : folder + "/" + name;
}

}  // namespace

void OpenFileBrowser(UiState& ui) {
    ui.browser.open = true;
    ui.browser.refresh = true;
    ui.browser.selected = -1;
    if (!ui.file.path.empty()) ui.browser.folder = ui::parent_folder(ui.file.path);
}

void DrawFileBrowser(UiState& ui) {
    if (!ui.browser.open) return;
    if (ui.browser.refresh) {
        ui.browser.refresh = false;
        ui.browser.listing = ui::list_folder(ui.browser.folder);
        if (ui.browser.listing.error.empty()) ui.browser.folder = ui.browser.listing.folder;
        std::snprintf(ui.browser.edit, sizeof ui.browser.edit, "%s", ui.browser.folder.c_str());
    }
    // A modal: while it is open the panels behind it take no clicks and show no tooltips over it.
    const std::string title = ui::window_title(_("Open activations, a dump or a checkpoint"), "Open");
    if (!ImGui::IsPopupOpen(title.c_str())) ImGui::OpenPopup(title.c_str());
    const ImVec2 d = ImGui::GetIO().DisplaySize;
    ImGui::SetNextWindowPos(ImVec2(d.x * 0.5f, d.y * 0.45f), ImGuiCond_Appearing, ImVec2(0.5f, 0.5f));
    ImGui::SetNextWindowSize(ImVec2(std::min(d.x * 0.9f, 760.0f), std::min(d.y * 0.8f, 560.0f)), ImGuiCond_Appearing);
    if (!ImGui::BeginPopupModal(title.c_str(), &ui.browser.open, ImGuiWindowFlags_NoCollapse)) return;
    const ui::FolderListing& listing = ui.browser.listing;
    // Path row: parent, editable folder (Enter lists it).
    if (ImGui::ArrowButton("##up", ImGuiDir_Up)) GoTo(ui, ui::parent_folder(ui.browser.folder));
    if (ImGui::IsItemHovered()) ImGui::SetTooltip(_("parent folder"));
    ImGui::SameLine();
    ImGui::SetNextItemWidth(-1);
    const bool entered = ImGui::InputText("##folder", ui.browser.edit, sizeof ui.browser.edit, ImGuiInputTextFlags_EnterReturnsTrue);
    MarkItem(ui, "browser:path");
    if (entered) {
        const std::string typed = ui.browser.edit;
        if (ui::is_openable_file(typed)) RequestOpen(ui, typed);  // a file path typed in: open it
        else GoTo(ui, typed);
    }
    ImGui::TextDisabled(_(".pt, .pth, .bin, .ckpt (torch.save), .npy, .npz, .safetensors files, folders, and pictures for the ViT; double-click opens"));

    const float footer = ImGui::GetFrameHeightWithSpacing() * 2.2f;
    if (ImGui::BeginChild("entries", ImVec2(0, -footer), true)) {
        if (!listing.error.empty()) {
            ImGui::PushTextWrapPos(0.0f);
            ImGui::TextColored(BadColor(), _("\u2717 cannot list %s"), listing.error.c_str());
            ImGui::PopTextWrapPos();
        } else if (listing.entries.empty()) {
            ImGui::TextDisabled(_("No folders and no .pt, .pth, .bin, .ckpt, .npy, .npz or .safetensors files here."));
        }
        for (std::size_t i = 0; i < listing.entries.size(); ++i) {
            const ui::DirEntry& e = listing.entries[i];
            char label[600];
            std::snprintf(label, sizeof label, "%s%s##e%zu", e.is_dir ? _("[dir]  ") : "", e.name.c_str(), i);
            const bool selected = static_cast<int>(i) == ui.browser.selected;
            if (ImGui::Selectable(label, selected, ImGuiSelectableFlags_AllowDoubleClick | ImGuiSelectableFlags_SpanAllColumns)) {
                ui.browser.selected = static_cast<int>(i);
                if (ImGui::IsMouseDoubleClicked(0)) {
                    const std::string path = Join(ui.browser.folder, e.name);
                    if (e.is_dir) GoTo(ui, path);
                    else RequestOpen(ui, path);
                    break;
                }
            }
            if (!e.is_dir) {
                ImGui::SameLine(ImGui::GetWindowContentRegionMax().x - ImGui::GetFontSize() * 6);
                ImGui::TextDisabled("%s", format_bytes(e.size).c_str());
            }
        }
    }
    ImGui::EndChild();

    // Footer: what Open will do, Open, the folder as a "folder of .npy", Cancel.
    const ui::DirEntry* sel = ui.browser.selected >= 0 && ui.browser.selected < static_cast<int>(listing.entries.size())
                                  ? &listing.entries[static_cast<std::size_t>(ui.browser.selected)]
                                  : nullptr;
    ImGui::BeginDisabled(sel == nullptr);
    if (ImGui::Button(sel && sel->is_dir ? _("Enter folder") : _("Open"), ImVec2(ImGui::GetFontSize() * 7, 0)) && sel) {
        const std::string path = Join(ui.browser.folder, sel->name);
        if (sel->is_dir) GoTo(ui, path);
        else RequestOpen(ui, path);
    }
    ImGui::EndDisabled();
    ImGui::SameLine();
    ImGui::BeginDisabled(listing.npy_files == 0 || !listing.error.empty());
    char folder_label[64];
    std::snprintf(folder_label, sizeof folder_label, _("Open this folder (%zu .npy)"), listing.npy_files);
    if (ImGui::Button(folder_label)) RequestOpen(ui, ui.browser.folder);
    ImGui::EndDisabled();
    if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
        ImGui::SetTooltip(_("A folder of .npy files, one per step (attn.npy, q.npy, input.npy ...), opens as one dump"));
    ImGui::SameLine();
    if (ImGui::Button(_("Cancel"), ImVec2(ImGui::GetFontSize() * 6, 0)) ||
        ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape), false))
        ui.browser.open = false;
    if (!ui.browser.open) ImGui::CloseCurrentPopup();  // Open, Cancel, Esc or a double-click closed it
    ImGui::EndPopup();
}

namespace {

// A modal centred a little above the middle, opened the first frame it is asked for (*shown).
// Records the id in ui.modal_on_screen from its second frame (ImGui hides an auto-sized window on
// its first, while it measures it).
bool BeginCentredModal(UiState& ui, const char* title, const char* id, bool* shown) {
    const std::string window_id = std::string("###") + id;
    if (!*shown) {
        ImGui::OpenPopup(window_id.c_str());
        *shown = true;
    }
    const ImVec2 d = ImGui::GetIO().DisplaySize;
    ImGui::SetNextWindowPos(ImVec2(d.x * 0.5f, d.y * 0.4f), ImGuiCond_Appearing, ImVec2(0.5f, 0.5f));
    ImGui::SetNextWindowSizeConstraints(ImVec2(ImGui::GetFontSize() * 20, 0), ImVec2(d.x * 0.8f, d.y * 0.8f));
    const bool open = ImGui::BeginPopupModal(ui::window_title(title, id).c_str(), nullptr, ImGuiWindowFlags_AlwaysAutoResize);
    if (open && !ImGui::IsWindowAppearing()) ui.modal_on_screen = id;
    return open;
}

}  // namespace

void DrawFileErrorModal(UiState& ui) {
    if (ui.file.error.empty()) return;
    if (BeginCentredModal(ui, _("Cannot open the file"), "cannot_open", &ui.file.error_shown)) {
        ImGui::PushTextWrapPos(ImGui::GetFontSize() * 40);
        ImGui::TextColored(BadColor(), _("\u2717 %s"), ui::tr_message(ui.file.error).c_str());
        ImGui::Spacing();
        ImGui::TextDisabled("%s", ui.file.path.empty() ? _("The trace on screen is unchanged.")
                                                       : _("The file on screen before stays open."));
        ImGui::PopTextWrapPos();
        if (ImGui::Button(_("OK"), ImVec2(ImGui::GetFontSize() * 6, 0)) || ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape))) {
            ui.file.error = {};
            ui.file.error_shown = false;
            ImGui::CloseCurrentPopup();
        }
        ImGui::EndPopup();
    }
}

// The head count a file does not say: a choice among the divisors of its dim, prefilled with heads
// of 64 channels; no map of the file is shown before it is confirmed.
void DrawHeadsQuestion(UiState& ui) {
    if (ui.heads_question.path.empty()) return;
    if (!BeginCentredModal(ui, _("How many heads?"), "heads_question", &ui.heads_question.shown)) return;
    const std::size_t dim = ui.heads_question.dim, h = ui.heads_question.choice;
    ImGui::PushTextWrapPos(ImGui::GetFontSize() * 34);
    ImGui::TextColored(WarnColor(), _("%s does not say how many heads its attention has."),
                       ui::display_name(ui.heads_question.path).c_str());
    ImGui::TextUnformatted(_("Its weights are the same for any head count that divides the dim, but the attention "
                              "maps and the outputs differ: choose the num_heads of the model's code."));
    ImGui::PopTextWrapPos();
    ImGui::Spacing();
    char label[64];
    std::snprintf(label, sizeof label, _("h = %zu (head size %zu)"), h, dim / h);
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 12);
    if (ImGui::BeginCombo(_("heads##question"), label)) {
        for (const std::size_t choice : head_count_choices(dim)) {
            std::snprintf(label, sizeof label, _("h = %zu (head size %zu)"), choice, dim / choice);
            if (ImGui::Selectable(label, choice == h)) ui.heads_question.choice = choice;
            MarkItem(ui, "heads:" + std::to_string(choice));
        }
        ImGui::EndCombo();
    }
    MarkItem(ui, "heads:choice");
    ImGui::PushTextWrapPos(ImGui::GetFontSize() * 34);
    ImGui::TextDisabled("%s", _("prefilled with the head size nearest ViT's usual 64; check it against num_heads in "
                                 "the model's code"));
    ImGui::PopTextWrapPos();
    ImGui::Spacing();
    std::snprintf(label, sizeof label, _("Open with h = %zu"), h);
    const bool open = ImGui::Button(label) || ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Enter), false);
    MarkItem(ui, "heads:open");
    ImGui::SameLine();
    const bool cancel =
        ImGui::Button(_("Cancel")) || ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape), false);
    MarkItem(ui, "heads:cancel");
    if (open) {
        ui.ask(command::Open{ui.heads_question.path});
        ui.file.open_block = ui.heads_question.block;
        ui.file.open_heads = h;
        if (!ui.heads_question.picture.empty()) ui.file.picture = ui.heads_question.picture;
    }
    if (open || cancel) {
        ui.heads_question.path.clear();
        ui.heads_question.shown = false;
        ImGui::CloseCurrentPopup();
    }
    ImGui::EndPopup();
}

}  // namespace attnscope
