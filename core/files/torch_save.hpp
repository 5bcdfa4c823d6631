// torch.save files: the zip format PyTorch writes since 1.6,
//
//   <archive>/data.pkl      the pickled object (core/files/pickle reads it; nothing in it is executed)
//   <archive>/data/<key>    one record per storage, raw little-endian elements
//   <archive>/version, <archive>/byteorder (PyTorch >= 2.1)
//
// and the legacy format before it (_use_new_zipfile_serialization=False): a magic number, a
// version and sys_info pickled one after another, then the object's pickle, the list of its
// storage keys, and each storage as an int64 element count followed by its elements.
//
// The object's tensors are listed with dotted names: a state_dict's own keys
// ("blocks.0.attn.qkv.weight"), nested containers joined by '.' ({"model": sd, "epoch": 3} gives
// "model.blocks.0.attn.qkv.weight" and "epoch"), list and tuple items by index ("0", "1"), and a
// file that holds one tensor by the file's stem. Values that are not tensors are listed with a
// problem ("'epoch' is an int (3), not a tensor"); integer and bool tensors with their dtype. A
// module saved whole (torch.save(model)) lists as its state_dict would ("qkv_proj.weight"), its
// int, float, bool and str attributes as values ("num_heads" -> "4", "blocks.0.attn.num_heads").
// Views of one storage (q, k, v = qkv.unbind(0) saved together) keep their own offset and strides.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tensor_source.hpp"
#include "zip_archive.hpp"

namespace attnscope {

// True when the archive holds a torch.save pickle (<archive>/data.pkl).
bool is_torch_save(const ZipArchive& archive);

// Lists the tensors of a torch.save archive into *tensors, its int, float, bool and str values into
// *values by dotted name ("config.num_heads" -> "4"), and returns the reader that loads the tensors.
// FileError "path: ..." for a TorchScript archive, a big-endian file, a refused pickle, a storage
// record that is missing or smaller than its pickle says, a tensor that reaches past its storage.
std::shared_ptr<const TensorSource::Reader> open_torch_save(std::shared_ptr<const ZipArchive> archive,
                                                            std::vector<TensorInfo>* tensors,
                                                            std::map<std::string, std::string>* values);

// True when the bytes start as a legacy torch.save file does (its magic number's pickle).
bool is_legacy_torch_save(const std::uint8_t* data, std::size_t size);

// The same for a legacy file (the reader keeps the mapped file). FileError "path: ..." also for a
// version other than 1001, a big-endian file, a storage list that does not match the object's
// storages, and storages that the file's bytes do not hold.
std::shared_ptr<const TensorSource::Reader> open_legacy_torch_save(std::shared_ptr<const MappedFile> file,
                                                                   std::vector<TensorInfo>* tensors,
                                                                   std::map<std::string, std::string>* values);

// For a file that is not a zip archive nor a legacy torch.save file: "path: ..." explaining a plain
// pickle and how to save its tensors instead; empty when the bytes are not a pickle.
Message not_zip_torch_file_problem(const std::string& path, const std::uint8_t* data, std::size_t size);

}  // namespace attnscope
