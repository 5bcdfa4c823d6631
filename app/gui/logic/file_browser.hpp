// The File > Open browser's window-free logic: which entries a folder shows and in what order,
// the tensor-file extensions, the parent folder, and the recent-files list.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace attnscope::ui {

struct DirEntry {
    std::string name;        // file or folder name, no path
    bool is_dir = false;
    std::uintmax_t size = 0; // bytes (files)
};

// .npy, .npz, .safetensors and torch.save's .pt, .pth, .bin, .ckpt (any case).
bool is_tensor_file(const std::string& name);

// .png, .jpg, .jpeg, .bmp, .gif, .tga, .ppm, .pgm (any case): a picture for the ViT.
bool is_image_file(const std::string& name);

// What File > Open offers: tensor files and pictures.
bool is_openable_file(const std::string& name);

// Folders first, then openable files, each sorted by name (case-insensitive, then exact); other
// files and hidden entries (".name") are left out; "." and ".." never appear.
std::vector<DirEntry> browser_entries(std::vector<DirEntry> raw);

struct FolderListing {
    std::string folder;              // absolute, normalized
    std::vector<DirEntry> entries;   // browser_entries of the folder
    std::size_t npy_files = 0;       // .npy files in it (it can be opened as a "folder of .npy")
    std::string error;               // one line when the folder cannot be listed
};

// Lists a folder with std::filesystem; never throws (errors in .error).
FolderListing list_folder(const std::string& folder);

// "/a/b" -> "/a"; "/" -> "/".
std::string parent_folder(const std::string& folder);

// path first, de-duplicated, at most max_count entries.
std::vector<std::string> add_recent(std::vector<std::string> recent, const std::string& path,
                                    std::size_t max_count = 10);

// "acts.npz" from "/a/b/acts.npz" (a folder keeps its own name).
std::string display_name(const std::string& path);

}  // namespace attnscope::ui
