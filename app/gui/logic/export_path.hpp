// File > Export heatmap as PNG: the save dialog's window-free logic. The user picks a folder (with
// the File > Open browser's listing) and types a name; an existing file is only replaced after an
// "overwrite?" confirmation, and the PNG is written atomically (temporary file + rename).
#pragma once

#include <string>

#include "file_browser.hpp"

namespace attnscope::ui {

// "attnscope-attn.png": the suggested name for a step's heatmap.
std::string default_export_name(const std::string& step);

// What Save would do with a folder and a typed name.
struct ExportTarget {
    std::string path;     // folder/name, ".png" appended when the name has no extension
    bool exists = false;  // a file is there: ask before replacing it
    std::string error;    // one line when Save must not write (empty name, a folder, no such folder)
};
ExportTarget export_target(const std::string& folder, const std::string& name);

// The dialog's state (kept in UiState).
struct ExportDialog {
    bool open = false;
    bool refresh = true;          // list `folder` again
    std::string folder;           // the folder listed and written to
    FolderListing listing;
    char name[256] = {};          // the editable file name
    std::string confirm_path;     // non-empty: the "overwrite?" modal asks about it
    std::string target;           // the confirmed path the frame loop writes (with export_requested)
    std::string error;            // why Save refused, shown in the dialog
};

}  // namespace attnscope::ui
