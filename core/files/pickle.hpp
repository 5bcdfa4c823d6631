// A restricted reader of the pickles torch.save writes (archive/data.pkl). It never executes
// anything: it knows the opcodes of pickle protocols 2 to 4 and builds plain values from them.
// The only globals it accepts are the ones PyTorch's own weights_only=True loader allows for
// tensors and state dicts:
//
//   collections.OrderedDict                        an (ordered) dict
//   torch._utils._rebuild_tensor_v2                a tensor: storage, offset, size, stride
//   torch._utils._rebuild_parameter(_with_state)   an nn.Parameter around a tensor
//   torch._tensor._rebuild_from_type_v2            a Tensor or Parameter subclass wrapper
//   torch.FloatStorage, torch.HalfStorage, ...     the dtype of a storage
//   torch.Size, torch.device, torch.float32, ...   plain values
//
// Any other global (posix.system, builtins.eval, __main__.MyModel, numpy's types) is refused with
// one line that names it. Storages are not read here: a persistent id becomes a StorageRef that
// the archive reader (core/files/torch_save) resolves.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <utility>
#include <vector>

namespace attnscope {

// ('storage', torch.FloatStorage, '0', 'cpu', numel): data/<key> holds numel elements of dtype.
struct StorageRef {
    std::string dtype;          // "F32", "F16", "BF16", "F64", "I64", "I32", "I16", "I8", "U8", "BOOL", "C64", "C128"
    std::size_t item_size = 0;  // bytes per element
    std::string key;            // the record's name under data/
    std::uint64_t numel = 0;
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
    enum class Kind { None, Bool, Int, Float, String, Bytes, Tuple, List, Dict, Set, Global, Storage, Tensor, Other };
    Kind kind = Kind::None;
    bool flag = false;           // Bool
    std::int64_t integer = 0;    // Int
    double number = 0.0;         // Float
    std::string text;            // String, Bytes; Global "module.name"; Other: what it is ("an integer of 12 bytes")
    std::vector<const PickleValue*> items;                                     // Tuple, List, Set
    std::vector<std::pair<const PickleValue*, const PickleValue*>> entries;    // Dict, in insertion order
    StorageRef storage;          // Storage
    TensorRef tensor;            // Tensor
};

// "an int", "a dict" ... for messages.
const char* kind_text(PickleValue::Kind kind);

// The values of one pickle; they point at each other (the memo may make cycles), so they live
// and die together here.
struct Unpickled {
    std::deque<PickleValue> values;
    const PickleValue* root = nullptr;
};

// Reads the pickle; FileError "label: ..." (one line) for anything else than what torch.save
// writes: an unknown or refused opcode, a refused global, a malformed stream, a truncation.
Unpickled read_pickle(const std::uint8_t* data, std::size_t size, const std::string& label);

}  // namespace attnscope
