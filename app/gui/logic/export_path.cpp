#include "export_path.hpp"

#include <filesystem>

namespace attnscope::ui {

namespace fs = std::filesystem;

std::string default_export_name(const std::string& step) {
    return "attnscope-" + (step.empty() ? std::string("heatmap") : step) + ".png";
}

ExportTarget export_target(const std::string& folder, const std::string& name) {
    ExportTarget t;
    if (name.empty() || name == "." || name == "..") {
        t.error = "type a file name, e.g. attnscope-attn.png";
        return t;
    }
    if (name.find('/') != std::string::npos) {
        t.error = "'" + name + "': a name without '/' (choose the folder above)";
        return t;
    }
    const fs::path file = fs::path(name).has_extension() ? fs::path(name) : fs::path(name + ".png");
    const fs::path path = (folder.empty() ? fs::path(".") : fs::path(folder)) / file;
    t.path = path.string();
    std::error_code ec;
    if (!fs::is_directory(path.parent_path(), ec)) {
        t.error = path.parent_path().string() + ": no such folder";
        return t;
    }
    const fs::file_status status = fs::status(path, ec);
    if (fs::is_directory(status)) {
        t.error = t.path + " is a folder";
        return t;
    }
    t.exists = fs::exists(status);
    return t;
}

}  // namespace attnscope::ui
