// A restricted reader of the pickles torch.save writes (archive/data.pkl, or the pickles of the
// legacy format one after another). It never executes anything: it knows the opcodes of pickle
// protocols 2 to 4 and builds plain values from them. The globals it understands are the ones
// PyTorch's own weights_only=True loader allows for tensors and state dicts:
//
//   collections.OrderedDict                        an (ordered) dict
//   builtins.set, builtins.frozenset               a set (a module's non-persistent buffer names)
//   functools.partial                              a record of its function and arguments (a
//                                                  module's norm_layer), never called
//   torch._utils._rebuild_tensor_v2                a tensor: storage, offset, size, stride
//   torch._utils._rebuild_parameter(_with_state)   an nn.Parameter around a tensor
//   torch._tensor._rebuild_from_type_v2            a Tensor or Parameter subclass wrapper
//   torch.FloatStorage, torch.HalfStorage, ...     the dtype of a storage
//   torch.Size, torch.device, torch.float32, ...   plain values
//   _codecs.encode(text, 'latin1')                 bytes (protocol 2's way of writing them)
//   numpy.dtype, numpy.core.multiarray.scalar      a numpy scalar as an int, float or bool
//   numpy.core.multiarray._reconstruct             a numpy array, kept as its shape and dtype only
//
// Any other class (__main__.MultiHeadAttention, torch.nn.modules.linear.Linear) is an inert name:
// NEWOBJ of it makes an Object, a record of the attributes the pickle gives it (BUILD, SETITEMS),
// and nothing of the class is imported or run. A call of anything else (REDUCE) is refused, and so
// are the globals only a hostile file needs (os.system, builtins.eval, subprocess, importlib ...),
// with one line that names them. Storages are not read here: a persistent id becomes a StorageRef
// that the file's reader (core/files/torch_save) resolves.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "message.hpp"

namespace attnscope {

// ('storage', torch.FloatStorage, '0', 'cpu', numel): data/<key> holds numel elements of dtype.
// The legacy format adds a sixth item, None or (view_key, offset, view_numel): the storage is then
// view_numel elements of storage <key> from element offset.
struct StorageRef {
    std::string dtype;          // "F32", "F16", "BF16", "F64", "I64", "I32", "I16", "I8", "U8", "BOOL", "C64", "C128"
    std::size_t item_size = 0;  // bytes per element
    std::string key;            // the record's name under data/ (legacy: the key in the storage list)
    std::uint64_t numel = 0;    // elements of that storage
    bool view = false;          // legacy: a view of the storage, from view_offset, of view_numel elements
    std::uint64_t view_offset = 0, view_numel = 0;
};

// _rebuild_tensor_v2(storage, storage_offset, size, stride, ...): elements of the storage at
// offset + sum(index[i] * stride[i]). Checked by core/files/torch_save against the storage's size.
struct TensorRef {
    const StorageRef* storage = nullptr;
    std::uint64_t offset = 0;
    std::vector<std::uint64_t> size, stride;
    bool parameter = false;  // an nn.Parameter
};

struct PickleValue {
    enum class Kind { None, Bool, Int, Float, String, Bytes, Tuple, List, Dict, Set, Global, Storage, Tensor, Object, Other };
    Kind kind = Kind::None;
    bool flag = false;           // Bool
    std::int64_t integer = 0;    // Int
    double number = 0.0;         // Float
    std::string text;            // String, Bytes; Global and Object: the class "module.name"; Other: what it
                                 // is in English ("an integer of 12 bytes")
    Message described;           // Other: what it is, as a message
    std::vector<const PickleValue*> items;                                     // Tuple, List, Set; Object: appended
    std::vector<std::pair<const PickleValue*, const PickleValue*>> entries;    // Dict, in insertion order; Object:
                                                                               // its attributes, then set items
    StorageRef storage;          // Storage
    TensorRef tensor;            // Tensor
};

// "an int", "a dict" ... for messages.
Message kind_message(PickleValue::Kind kind);

// The values of one pickle; they point at each other (the memo may make cycles), so they live
// and die together here.
struct Unpickled {
    std::deque<PickleValue> values;
    const PickleValue* root = nullptr;
};

// Reads the pickle up to its STOP; FileError "label: ..." (one line) for anything else than what
// torch.save writes: an unknown or refused opcode, a refused global or call, a malformed stream, a
// truncation. *used (when given) is the pickle's length, STOP included: the legacy format's next
// pickle starts there.
Unpickled read_pickle(const std::uint8_t* data, std::size_t size, const std::string& label, std::size_t* used = nullptr);

}  // namespace attnscope
