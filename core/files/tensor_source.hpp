// The tensors of a file the user brings: a torch.save file (.pt, .pth, .bin, .ckpt: core/files/torch_save),
// a .npy, an .npz (zip, stored or deflated members), a .safetensors, or a folder of .npy files.
//
// Opening lists every tensor (name, dtype, shape) from the headers alone; values are loaded one
// tensor at a time by load(). Files are memory-mapped, so listing a 1 GB checkpoint reads a few
// kilobytes. A TensorSource is cheap to copy (the mapping is shared) and load() may be called
// from several threads.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tensor.hpp"

namespace attnscope {

// More axes than this is refused ("has 40 axes; attnscope reads at most 32").
constexpr std::size_t kMaxAxes = 32;

struct TensorInfo {
    std::string name;     // safetensors key, npz member or folder file name without ".npy", torch.save dotted name
    std::string dtype;    // "F16", "BF16", "F32", "F64"; any other dtype as the file spells it
    Shape shape;
    Message problem;      // why load() refuses this tensor (unsupported dtype, not a tensor ...); empty when loadable
    // Read and listed but never loaded, and not an error in the file: a value that is not a tensor
    // (a torch.save checkpoint's "epoch"), an integer or bool tensor. problem says which.
    bool listed_only = false;
};

class TensorSource {
public:
    // Lists the tensors. FileError ("path: what is wrong") when the container cannot be read:
    // wrong magic, truncated, a header lying about sizes, a .npy whose one tensor is unreadable.
    static TensorSource open(const std::string& path);

    const std::string& path() const { return path_; }
    const std::string& format() const { return format_; }  // "torch.save", "torch.save (legacy)", "npy", "npz", "safetensors", "folder"
    const std::vector<TensorInfo>& tensors() const { return tensors_; }
    const TensorInfo* find(const std::string& name) const;  // nullptr when absent
    // A safetensors file's __metadata__; a torch.save file's int, float, bool and str values by dotted
    // name ({"epoch": 3, "config": {"num_heads": 4}} gives epoch -> 3, config.num_heads -> 4).
    const std::map<std::string, std::string>& metadata() const { return metadata_; }

    // The tensor as float32, row-major. FileError "path: tensor 'name' ..." when it cannot be read.
    Array load(const std::string& name) const;

    // Reads one listed tensor's values; each format implements it.
    class Reader {
    public:
        virtual ~Reader() = default;
        virtual Array load(const TensorInfo& info) const = 0;
    };

private:
    std::string path_;
    std::string format_;
    std::vector<TensorInfo> tensors_;
    std::map<std::string, std::string> metadata_;
    std::shared_ptr<const Reader> reader_;
};

}  // namespace attnscope
