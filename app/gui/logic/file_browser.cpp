#include "file_browser.hpp"
#include "i18n.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <system_error>

namespace attnscope::ui {

namespace fs = std::filesystem;

namespace {

std::string lower(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

bool ends_with(const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

bool is_tensor_file(const std::string& name) {
    const std::string n = lower(name);
    for (const char* ext : {".npy", ".npz", ".safetensors", ".pt", ".pth", ".bin", ".ckpt"})
        if (ends_with(n, ext)) return true;
    return false;
}

bool is_image_file(const std::string& name) {
    const std::string n = lower(name);
    for (const char* ext : {".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tga", ".ppm", ".pgm"})
        if (ends_with(n, ext)) return true;
    return false;
}

bool is_openable_file(const std::string& name) { return is_tensor_file(name) || is_image_file(name); }

std::vector<DirEntry> browser_entries(std::vector<DirEntry> raw) {
    raw.erase(std::remove_if(raw.begin(), raw.end(),
                             [](const DirEntry& e) {
                                 return e.name.empty() || e.name[0] == '.' || (!e.is_dir && !is_openable_file(e.name));
                             }),
              raw.end());
    std::sort(raw.begin(), raw.end(), [](const DirEntry& a, const DirEntry& b) {
        if (a.is_dir != b.is_dir) return a.is_dir;
        const std::string la = lower(a.name), lb = lower(b.name);
        return la != lb ? la < lb : a.name < b.name;
    });
    return raw;
}

FolderListing list_folder(const std::string& folder) {
    FolderListing listing;
    std::error_code ec;
    fs::path p = fs::absolute(fs::path(folder.empty() ? "." : folder), ec);
    if (!ec) p = p.lexically_normal();
    std::string s = p.string();
    if (s.size() > 1 && s.back() == '/') s.pop_back();
    listing.folder = s;
    if (ec || !fs::is_directory(p, ec)) {
        listing.error = folder + ": " + (fs::exists(p, ec) ? _("not a folder") : _("no such folder"));
        return listing;
    }
    std::vector<DirEntry> raw;
    fs::directory_iterator it(p, fs::directory_options::skip_permission_denied, ec), end;
    if (ec) {
        listing.error = listing.folder + ": " + ec.message();
        return listing;
    }
    for (; it != end; it.increment(ec)) {
        if (ec) {
            listing.error = listing.folder + ": " + ec.message();
            break;
        }
        DirEntry e;
        e.name = it->path().filename().string();
        std::error_code e2;
        e.is_dir = it->is_directory(e2);
        if (!e.is_dir) e.size = it->file_size(e2);
        if (!e.is_dir && ends_with(lower(e.name), ".npy")) ++listing.npy_files;
        raw.push_back(std::move(e));
    }
    listing.entries = browser_entries(std::move(raw));
    return listing;
}

std::string parent_folder(const std::string& folder) {
    const fs::path p = fs::path(folder).lexically_normal();
    std::string s = p.string();
    if (s.size() > 1 && s.back() == '/') s = fs::path(s.substr(0, s.size() - 1)).string();
    const fs::path parent = fs::path(s).parent_path();
    return parent.empty() ? s : parent.string();
}

std::vector<std::string> add_recent(std::vector<std::string> recent, const std::string& path, std::size_t max_count) {
    recent.erase(std::remove(recent.begin(), recent.end(), path), recent.end());
    recent.insert(recent.begin(), path);
    if (recent.size() > max_count) recent.resize(max_count);
    return recent;
}

std::string display_name(const std::string& path) {
    std::string s = path;
    while (s.size() > 1 && s.back() == '/') s.pop_back();
    const std::string name = fs::path(s).filename().string();
    return name.empty() ? s : name;
}

}  // namespace attnscope::ui
