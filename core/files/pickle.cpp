// The restricted unpickler (see pickle.hpp): a stack machine over the opcodes of protocols 2-4.
//
// [SECTION] Globals: which module.name pairs are understood, inert or refused
// [SECTION] Calls: REDUCE on an understood global; NEWOBJ of an inert class
// [SECTION] The machine: one case per opcode
//
// Every size read from the stream is checked against the bytes left before anything is
// allocated, so a hostile length fails in O(1). Values are never copied: a memo GET pushes the
// same value again (a cycle is possible and harmless: nothing here walks the values).
#include "pickle.hpp"

#include <algorithm>
#include <cstring>
#include <unordered_map>
#include <unordered_set>

#include "io.hpp"

namespace attnscope {

namespace {

using Kind = PickleValue::Kind;

// ============================================================================================
// [SECTION] Globals
// ============================================================================================
enum class Callable {
    None, OrderedDict, Set, Partial, RebuildTensor, RebuildParameter, RebuildFromType, Size, Device,
    Encode, NumpyDtype, NumpyScalar, NumpyArray
};

struct StorageType {
    const char* name;  // torch.<name>
    const char* dtype;
    std::size_t item_size;
};
constexpr StorageType kStorageTypes[] = {
    {"FloatStorage", "F32", 4},          {"HalfStorage", "F16", 2},   {"BFloat16Storage", "BF16", 2},
    {"DoubleStorage", "F64", 8},         {"LongStorage", "I64", 8},   {"IntStorage", "I32", 4},
    {"ShortStorage", "I16", 2},          {"CharStorage", "I8", 1},    {"ByteStorage", "U8", 1},
    {"BoolStorage", "BOOL", 1},          {"ComplexFloatStorage", "C64", 8}, {"ComplexDoubleStorage", "C128", 16},
    {"UntypedStorage", "U8", 1},
};

// torch.<dtype> values (a checkpoint may keep one, e.g. the dtype it trained in).
constexpr const char* kTorchDtypes[] = {"float32", "float", "float16", "half",  "bfloat16", "float64", "double",
                                        "int64",   "long",  "int32",   "int",   "int16",    "short",   "int8",
                                        "uint8",   "bool",  "complex64", "complex128", "cfloat", "cdouble"};

struct GlobalInfo {
    bool allowed = false;
    Callable callable = Callable::None;
    const StorageType* storage = nullptr;
    bool inert = false;  // a class known by name only: NEWOBJ makes an Object of it, REDUCE is refused
};

// Modules whose globals only a hostile file needs: to run a command or code, import, open files
// or sockets, or reach other objects through attribute and item chains. Their submodules too.
constexpr const char* kHostileModules[] = {
    "os", "posix", "nt", "subprocess", "_posixsubprocess", "sys", "shutil", "socket", "pty", "runpy", "ctypes",
    "code", "codeop", "importlib", "pickle", "_pickle", "marshal", "webbrowser", "multiprocessing", "signal",
    "types", "operator", "_operator", "inspect", "platform", "commands", "popen2", "timeit", "pdb",
    "asyncio", "io", "_io", "pathlib", "tempfile", "glob", "threading", "_thread", "copyreg", "copy_reg", "dill",
    "torch.hub", "torch.jit", "torch.utils.cpp_extension", "torch.package", "torch.serialization", "torch._C"};

bool hostile_global(const std::string& module, const std::string& name) {
    if (module == "builtins" || module == "__builtin__") return name != "set" && name != "frozenset";
    for (const char* m : kHostileModules) {
        const std::size_t n = std::strlen(m);
        if (module.compare(0, n, m) == 0 && (module.size() == n || module[n] == '.')) return true;
    }
    return false;
}

GlobalInfo classify_global(const std::string& module, const std::string& name) {
    if (hostile_global(module, name)) return {};
    if (module == "collections" && name == "OrderedDict") return {true, Callable::OrderedDict};
    if ((module == "builtins" || module == "__builtin__") && (name == "set" || name == "frozenset"))
        return {true, Callable::Set};
    if (module == "functools" && name == "partial") return {true, Callable::Partial};  // torchvision's norm_layer
    // numpy values a training script keeps beside its tensors (best_acc = np.float64(0.93)): the
    // bytes protocol 2 writes as _codecs.encode(text, 'latin1'), dtypes, scalars, arrays.
    if (module == "_codecs" && name == "encode") return {true, Callable::Encode};
    const bool multiarray = module == "numpy.core.multiarray" || module == "numpy._core.multiarray";
    if (module == "numpy" && name == "dtype") return {true, Callable::NumpyDtype};
    if (multiarray && name == "scalar") return {true, Callable::NumpyScalar};
    if (multiarray && name == "_reconstruct") return {true, Callable::NumpyArray};
    if (module == "numpy" && name == "ndarray") return {true, Callable::None};  // only as _reconstruct's type
    if (module == "torch._utils" && name == "_rebuild_tensor_v2") return {true, Callable::RebuildTensor};
    if (module == "torch._utils" && (name == "_rebuild_parameter" || name == "_rebuild_parameter_with_state"))
        return {true, Callable::RebuildParameter};
    if (module == "torch._tensor" && name == "_rebuild_from_type_v2") return {true, Callable::RebuildFromType};
    if ((module == "torch" && name == "Tensor") || (module == "torch.nn.parameter" && name == "Parameter"))
        return {true, Callable::None};  // only as the type argument of _rebuild_from_type_v2
    if (module == "torch" && name == "Size") return {true, Callable::Size};
    if (module == "torch" && name == "device") return {true, Callable::Device};
    if (module == "torch") {
        for (const StorageType& s : kStorageTypes)
            if (name == s.name) return {true, Callable::None, &s};
        for (const char* d : kTorchDtypes)
            if (name == d) return {true, Callable::None};
    }
    return {true, Callable::None, nullptr, true};  // a class by name: __main__.MultiHeadAttention, nn.Linear
}

// ============================================================================================
// [SECTION] The machine
// ============================================================================================
class Machine {
public:
    Machine(const std::uint8_t* data, std::size_t size, const std::string& label)
        : p_(data), end_(data + size), begin_(data), label_(label) {}

    Unpickled run(std::size_t* used) {
        while (true) {
            const std::size_t at = offset();
            const std::uint8_t op = byte();
            if (op == '.') break;  // STOP
            step(op, at);
        }
        if (stack_.size() != 1 || !marks_.empty())
            fail(Message(Msg::pickle_stack_at_end, {{"file", label_}, {"count", std::to_string(stack_.size())}}));
        out_.root = stack_.back();
        if (used) *used = offset();
        return std::move(out_);
    }

private:
    // ---- errors and bytes --------------------------------------------------------------------
    [[noreturn]] void fail(Message message) const { throw FileError(std::move(message)); }
    [[noreturn]] void malformed(Message problem) const {
        fail(Message(Msg::pickle_malformed, {{"file", label_}, {"byte", std::to_string(offset())}}).with("problem", std::move(problem)));
    }
    [[noreturn]] void malformed(Msg problem) const { malformed(Message(problem)); }
    // "a type torch.nn.Linear" for a global, else its kind ("a dict").
    static Message found_message(const PickleValue* v) {
        return v->kind == Kind::Global ? Message(Msg::pickle_kind_named_type, {{"name", v->text}}) : kind_message(v->kind);
    }
    std::size_t offset() const { return static_cast<std::size_t>(p_ - begin_); }
    std::size_t left() const { return static_cast<std::size_t>(end_ - p_); }

    const std::uint8_t* take(std::uint64_t n) {
        if (n > left()) malformed(Message(Msg::pickle_needs_bytes, {{"count", std::to_string(n)}, {"left", std::to_string(left())}}));
        const std::uint8_t* at = p_;
        p_ += n;
        return at;
    }
    std::uint8_t byte() { return *take(1); }
    std::uint64_t little(std::size_t n) {  // an unsigned little-endian integer of n bytes
        const std::uint8_t* b = take(n);
        std::uint64_t v = 0;
        for (std::size_t i = n; i-- > 0;) v = (v << 8) | b[i];
        return v;
    }
    std::string bytes_text(std::uint64_t n) {
        const std::uint8_t* b = take(n);
        return std::string(reinterpret_cast<const char*>(b), static_cast<std::size_t>(n));
    }
    std::string line() {  // GLOBAL's module and name: up to '\n'
        const std::uint8_t* nl = static_cast<const std::uint8_t*>(std::memchr(p_, '\n', left()));
        if (!nl) malformed(Msg::pickle_global_no_eol);
        std::string text(reinterpret_cast<const char*>(p_), static_cast<std::size_t>(nl - p_));
        p_ = nl + 1;
        return text;
    }

    // ---- values and the stack ----------------------------------------------------------------
    PickleValue* make(Kind kind) {
        out_.values.emplace_back();
        out_.values.back().kind = kind;
        return &out_.values.back();
    }
    void push(PickleValue* v) { stack_.push_back(v); }
    PickleValue* pop() {
        if (stack_.size() <= (marks_.empty() ? 0 : marks_.back())) malformed(Msg::pickle_pop_empty);
        PickleValue* v = stack_.back();
        stack_.pop_back();
        return v;
    }
    PickleValue* top() {
        if (stack_.size() <= (marks_.empty() ? 0 : marks_.back())) malformed(Msg::pickle_read_empty);
        return stack_.back();
    }
    // The values above the last MARK, which is removed.
    std::vector<PickleValue*> pop_mark() {
        if (marks_.empty()) malformed(Msg::pickle_no_mark);
        const std::size_t mark = marks_.back();
        marks_.pop_back();
        std::vector<PickleValue*> items(stack_.begin() + static_cast<std::ptrdiff_t>(mark), stack_.end());
        stack_.resize(mark);
        return items;
    }
    PickleValue* tuple(std::vector<PickleValue*> items) {
        PickleValue* t = make(Kind::Tuple);
        t->items.assign(items.begin(), items.end());
        return t;
    }
    PickleValue* integer(std::int64_t v) {
        PickleValue* i = make(Kind::Int);
        i->integer = v;
        return i;
    }
    PickleValue* text(Kind kind, std::string s) {
        PickleValue* v = make(kind);
        v->text = std::move(s);
        return v;
    }
    PickleValue* other(Message described) {  // a value kept only as what it is
        PickleValue* v = make(Kind::Other);
        v->text = english(described);
        v->described = std::move(described);
        return v;
    }
    // LONG1/LONG4: two's complement, little-endian, n bytes.
    PickleValue* long_integer(std::uint64_t n) {
        if (n > 8) {
            take(n);
            return other(Message(Msg::pickle_value_long_integer, {{"count", std::to_string(n)}}));
        }
        if (n == 0) return integer(0);
        std::uint64_t v = little(static_cast<std::size_t>(n));
        if (n < 8 && (v >> (8 * n - 1)) & 1) v |= ~std::uint64_t{0} << (8 * n);  // sign-extend
        std::int64_t s;
        std::memcpy(&s, &v, 8);
        return integer(s);
    }
    void memo_put(std::uint64_t index) { memo_[index] = top(); }
    PickleValue* memo_get(std::uint64_t index) {
        const auto it = memo_.find(index);
        if (it == memo_.end()) malformed(Message(Msg::pickle_memo_missing, {{"index", std::to_string(index)}}));
        return it->second;
    }
    void require(const PickleValue* v, Kind kind, Msg what) {
        if (v->kind != kind)
            malformed(Message(Msg::pickle_wrong_kind).with("part", Message(what)).with("kind", kind_message(kind)).with("found", kind_message(v->kind)));
    }
    std::uint64_t count(const PickleValue* v, Msg what) {
        require(v, Kind::Int, what);
        if (v->integer < 0) malformed(Message(Msg::pickle_negative, {{"value", std::to_string(v->integer)}}).with("part", Message(what)));
        return static_cast<std::uint64_t>(v->integer);
    }
    std::vector<std::uint64_t> counts(const PickleValue* v, Msg what) {
        require(v, Kind::Tuple, what);
        std::vector<std::uint64_t> out;
        for (const PickleValue* item : v->items) out.push_back(count(item, what));
        return out;
    }

    // ---- GLOBAL and STACK_GLOBAL -------------------------------------------------------------
    static std::string shown(const std::string& name) {  // printable, at most 120 characters
        std::string out;
        for (char c : name.substr(0, 120)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
        return out;
    }
    PickleValue* global(const std::string& module, const std::string& name) {
        const GlobalInfo info = classify_global(module, name);
        const std::string full = module + "." + name;
        if (!info.allowed)
            fail(Message(Msg::pickle_global_runs_code, {{"file", label_}, {"name", shown(full)}}));
        PickleValue* g = text(Kind::Global, full);
        globals_[g] = info;
        return g;
    }

    // ---- BINPERSID -----------------------------------------------------------------------------
    // ('storage', torch.<T>Storage, key, location, numel), and in the legacy format
    // ('storage', type, key, location, numel, None | (view_key, offset, view_numel)) or
    // ('module', class, source_file, source): the class, inert (its source is never looked at).
    PickleValue* persistent_load(const PickleValue* pid) {
        if (pid->kind == Kind::Tuple && pid->items.size() == 4 && pid->items[0]->kind == Kind::String &&
            pid->items[0]->text == "module" && pid->items[1]->kind == Kind::Global)
            return const_cast<PickleValue*>(pid->items[1]);  // one of out_'s values, pushed again
        if (pid->kind != Kind::Tuple || (pid->items.size() != 5 && pid->items.size() != 6) ||
            pid->items[0]->kind != Kind::String || pid->items[0]->text != "storage")
            malformed(Msg::pickle_persistent_id);
        const PickleValue* type = pid->items[1];
        const auto g = globals_.find(type);
        if (g == globals_.end() || !g->second.storage)
            malformed(Message(Msg::pickle_storage_type).with("found", found_message(type)));
        require(pid->items[2], Kind::String, Msg::pickle_part_storage_key);
        require(pid->items[3], Kind::String, Msg::pickle_part_storage_location);
        PickleValue* s = make(Kind::Storage);
        s->storage.dtype = g->second.storage->dtype;
        s->storage.item_size = g->second.storage->item_size;
        s->storage.key = pid->items[2]->text;
        s->storage.numel = count(pid->items[4], Msg::pickle_part_storage_numel);
        if (pid->items.size() == 6 && pid->items[5]->kind != Kind::None) {
            const PickleValue* view = pid->items[5];
            if (view->kind != Kind::Tuple || view->items.size() != 3)
                malformed(Msg::pickle_storage_view);
            require(view->items[0], Kind::String, Msg::pickle_part_view_key);
            s->storage.view = true;
            s->storage.view_offset = count(view->items[1], Msg::pickle_part_view_offset);
            s->storage.view_numel = count(view->items[2], Msg::pickle_part_view_numel);
        }
        return s;
    }

    // ============================================================================================
    // [SECTION] Calls
    // ============================================================================================
    PickleValue* call(const PickleValue* callable, const PickleValue* args) {
        const auto g = globals_.find(callable);
        if (g != globals_.end() && g->second.inert)
            fail(Message(Msg::pickle_call_runs_code, {{"file", label_}, {"name", shown(callable->text)}}));
        if (g == globals_.end() || g->second.callable == Callable::None)
            malformed(Message(Msg::pickle_reduce_unknown).with("found", found_message(callable)));
        require(args, Kind::Tuple, Msg::pickle_part_reduce_args);
        const std::vector<const PickleValue*>& a = args->items;
        switch (g->second.callable) {
            case Callable::OrderedDict: {
                PickleValue* d = make(Kind::Dict);
                if (a.empty()) return d;
                if (a.size() != 1 || a[0]->kind != Kind::List) malformed(Msg::pickle_ordered_dict_args);
                for (const PickleValue* pair : a[0]->items) {
                    if (pair->kind != Kind::Tuple || pair->items.size() != 2) malformed(Msg::pickle_ordered_dict_items);
                    d->entries.emplace_back(pair->items[0], pair->items[1]);
                }
                return d;
            }
            case Callable::Set: {  // set() or set([items])
                PickleValue* set = make(Kind::Set);
                if (a.empty()) return set;
                if (a.size() != 1 || a[0]->kind != Kind::List) malformed(Msg::pickle_set_args);
                set->items = a[0]->items;
                return set;
            }
            case Callable::Partial: {  // partial(func): a record like an object's, never called
                PickleValue* partial = make(Kind::Object);
                partial->text = "functools.partial";
                partial->items.assign(a.begin(), a.end());
                return partial;
            }
            case Callable::RebuildTensor: {  // (storage, storage_offset, size, stride, requires_grad, hooks[, metadata])
                if (a.size() != 6 && a.size() != 7) malformed(Message(Msg::pickle_rebuild_tensor_args, {{"count", std::to_string(a.size())}}));
                require(a[0], Kind::Storage, Msg::pickle_part_tensor_storage);
                PickleValue* t = make(Kind::Tensor);
                t->tensor.storage = &a[0]->storage;
                t->tensor.offset = count(a[1], Msg::pickle_part_tensor_offset);
                t->tensor.size = counts(a[2], Msg::pickle_part_tensor_size);
                t->tensor.stride = counts(a[3], Msg::pickle_part_tensor_stride);
                if (t->tensor.size.size() != t->tensor.stride.size())
                    malformed(Message(Msg::pickle_sizes_strides, {{"sizes", std::to_string(t->tensor.size.size())},
                                                                  {"strides", std::to_string(t->tensor.stride.size())}}));
                return t;
            }
            case Callable::RebuildParameter: {  // (data, requires_grad, hooks[, state])
                if (a.size() != 3 && a.size() != 4) malformed(Msg::pickle_rebuild_parameter_args);
                require(a[0], Kind::Tensor, Msg::pickle_part_parameter_data);
                PickleValue* t = make(Kind::Tensor);
                t->tensor = a[0]->tensor;
                t->tensor.parameter = true;
                return t;
            }
            case Callable::RebuildFromType: {  // (func, type, args, state): func(*args) for Tensor or Parameter
                if (a.size() != 4) malformed(Msg::pickle_rebuild_from_type_args);
                const bool plain_type = globals_.count(a[1]) &&
                                        (a[1]->text == "torch.Tensor" || a[1]->text == "torch.nn.parameter.Parameter");
                const auto func = globals_.find(a[0]);
                const bool rebuilds = func != globals_.end() && (func->second.callable == Callable::RebuildTensor ||
                                                                 func->second.callable == Callable::RebuildParameter);
                if (!plain_type || !rebuilds)
                    malformed(Msg::pickle_rebuild_from_type_only);
                return call(a[0], a[2]);
            }
            case Callable::Size: {
                if (a.size() != 1 || a[0]->kind != Kind::Tuple) malformed(Msg::pickle_size_args);
                counts(a[0], Msg::pickle_part_torch_size);
                PickleValue* t = make(Kind::Tuple);
                t->items = a[0]->items;
                return t;
            }
            case Callable::Device: {
                if (a.empty() || a[0]->kind != Kind::String) malformed(Msg::pickle_device_args);
                return other(Message(Msg::pickle_value_device, {{"name", a[0]->text}}));
            }
            case Callable::Encode: {  // _codecs.encode(text, 'latin1'): code points 0-255 as bytes
                if (a.size() != 2 || a[0]->kind != Kind::String || a[1]->kind != Kind::String ||
                    (a[1]->text != "latin1" && a[1]->text != "latin-1"))
                    malformed(Msg::pickle_encode_args);
                return text(Kind::Bytes, latin1(a[0]->text));
            }
            case Callable::NumpyDtype: {  // numpy.dtype(code, align, copy); BUILD then gives its byte order
                if (a.empty() || a[0]->kind != Kind::String) malformed(Msg::pickle_numpy_dtype_args);
                PickleValue* d = other(Message(Msg::pickle_value_numpy_dtype, {{"dtype", shown(a[0]->text)}}));
                d->items = {a[0]};
                numpy_dtypes_.insert(d);
                return d;
            }
            case Callable::NumpyScalar: return numpy_scalar(a);
            case Callable::NumpyArray: {  // _reconstruct(ndarray, (0,), b'b'); BUILD then gives its shape
                if (a.empty() || !globals_.count(a[0]) || a[0]->text != "numpy.ndarray")
                    malformed(Msg::pickle_numpy_reconstruct);
                PickleValue* array = other(Message(Msg::pickle_value_numpy_array));
                numpy_arrays_.insert(array);
                return array;
            }
            case Callable::None: break;
        }
        malformed(Msg::pickle_unreachable);
    }

    // ---- numpy values ----------------------------------------------------------------------------
    // UTF-8 (as the pickle's str holds it) of code points below 256, as the bytes they stand for.
    std::string latin1(const std::string& utf8) {
        std::string out;
        for (std::size_t i = 0; i < utf8.size(); ++i) {
            const auto c = static_cast<unsigned char>(utf8[i]);
            if (c < 0x80) {
                out += static_cast<char>(c);
            } else if ((c == 0xc2 || c == 0xc3) && i + 1 < utf8.size()) {
                out += static_cast<char>(((c & 0x03) << 6) | (static_cast<unsigned char>(utf8[++i]) & 0x3f));
            } else {
                malformed(Msg::pickle_latin1);
            }
        }
        return out;
    }
    // A dtype's type code ('f8', 'i8', '?') and byte order ('<', '>', '|', '=').
    std::pair<std::string, std::string> numpy_dtype(const PickleValue* d, Msg what) {
        if (!numpy_dtypes_.count(d)) malformed(Message(Msg::pickle_not_numpy_dtype).with("part", Message(what)));
        return {d->items[0]->text, d->items.size() > 1 ? d->items[1]->text : "="};
    }
    // scalar(dtype, bytes): np.float64(0.93) a float, np.int64(5) an int, np.bool_ a bool; any other
    // dtype a value shown by its name. Stored little-endian ('>' is refused).
    PickleValue* numpy_scalar(const std::vector<const PickleValue*>& a) {
        if (a.size() != 2 || a[1]->kind != Kind::Bytes) malformed(Msg::pickle_numpy_scalar_args);
        const std::pair<std::string, std::string> dtype = numpy_dtype(a[0], Msg::pickle_part_numpy_scalar_dtype);
        const std::string& code = dtype.first;
        const std::string& order = dtype.second;
        const std::string& b = a[1]->text;
        if (order == ">") malformed(Message(Msg::pickle_numpy_scalar_big_endian, {{"dtype", shown(code)}}));
        auto load = [&](auto zero) {
            if (b.size() != sizeof zero) malformed(Message(Msg::pickle_numpy_scalar_bytes, {{"dtype", shown(code)}, {"count", std::to_string(b.size())}}));
            std::memcpy(&zero, b.data(), sizeof zero);
            return zero;
        };
        PickleValue* v = nullptr;
        if (code == "f8") (v = make(Kind::Float))->number = load(double{});
        else if (code == "f4") (v = make(Kind::Float))->number = load(float{});
        else if (code == "i8") (v = make(Kind::Int))->integer = load(std::int64_t{});
        else if (code == "i4") (v = make(Kind::Int))->integer = load(std::int32_t{});
        else if (code == "u4") (v = make(Kind::Int))->integer = load(std::uint32_t{});
        else if (code == "i2") (v = make(Kind::Int))->integer = load(std::int16_t{});
        else if (code == "u2") (v = make(Kind::Int))->integer = load(std::uint16_t{});
        else if (code == "i1") (v = make(Kind::Int))->integer = load(std::int8_t{});
        else if (code == "u1") (v = make(Kind::Int))->integer = load(std::uint8_t{});
        else if (code == "b1") (v = make(Kind::Bool))->flag = load(std::uint8_t{}) != 0;
        else v = other(Message(Msg::pickle_value_numpy_scalar, {{"dtype", shown(code)}}));
        return v;
    }
    // BUILD of a dtype: (version, byte order, ...); of an array: (version, shape, dtype, fortran, data).
    // The array stays a value named by its shape and dtype: its elements are not a tensor's.
    void build_numpy(PickleValue* v, const PickleValue* state) {
        if (state->kind != Kind::Tuple || state->items.size() < 2) malformed(Msg::pickle_numpy_state);
        const std::vector<const PickleValue*>& s = state->items;
        if (numpy_dtypes_.count(v)) {
            require(s[1], Kind::String, Msg::pickle_part_numpy_byte_order);
            v->items.resize(1);
            v->items.push_back(s[1]);
            return;
        }
        if (s.size() != 5) malformed(Msg::pickle_numpy_array_state);
        std::string shape;
        for (std::uint64_t n : counts(s[1], Msg::pickle_part_numpy_array_shape)) shape += (shape.empty() ? "" : ", ") + std::to_string(n);
        v->described = Message(Msg::pickle_value_numpy_array_of,
                               {{"shape", shape}, {"dtype", shown(numpy_dtype(s[2], Msg::pickle_part_numpy_array_dtype).first)}});
        v->text = english(v->described);
    }

    // NEWOBJ(_EX): cls.__new__(cls, *args) of an inert class, as an Object without attributes yet.
    PickleValue* new_object(const PickleValue* cls) {
        const auto g = globals_.find(cls);
        if (g == globals_.end() || !g->second.inert)
            malformed(Message(Msg::pickle_newobj).with("found", found_message(cls)));
        PickleValue* object = make(Kind::Object);
        object->text = cls->text;
        return object;
    }
    // BUILD: the state an object's __setstate__ would get: its __dict__, or (__dict__, slots).
    void build(PickleValue* object, const PickleValue* state) {
        const PickleValue* parts[2] = {state, nullptr};
        if (state->kind == Kind::Tuple && state->items.size() == 2) parts[0] = state->items[0], parts[1] = state->items[1];
        for (const PickleValue* part : parts) {
            if (!part || part->kind == Kind::None) continue;
            if (part->kind == Kind::Dict)
                object->entries.insert(object->entries.end(), part->entries.begin(), part->entries.end());
            else
                object->items.push_back(part);
        }
    }

    void set_items(PickleValue* dict, const std::vector<PickleValue*>& kv) {
        if (dict->kind != Kind::Dict && dict->kind != Kind::Object)
            malformed(Message(Msg::pickle_setitem_on).with("found", kind_message(dict->kind)));
        if (kv.size() % 2) malformed(Msg::pickle_setitems_odd);
        // Keys are kept as written (a repeated key is rare; core/files/torch_save names the second one apart).
        for (std::size_t i = 0; i < kv.size(); i += 2) dict->entries.emplace_back(kv[i], kv[i + 1]);
    }
    void append(PickleValue* list, const std::vector<PickleValue*>& items) {
        if (list->kind != Kind::List && list->kind != Kind::Set && list->kind != Kind::Object)
            malformed(Message(Msg::pickle_append_on).with("found", kind_message(list->kind)));
        list->items.insert(list->items.end(), items.begin(), items.end());
    }

    void step(std::uint8_t op, std::size_t at) {
        switch (op) {
            case 0x80: {  // PROTO
                const std::uint8_t version = byte();
                if (version > 4)
                    fail(Message(Msg::pickle_protocol, {{"file", label_}, {"version", std::to_string(version)}}));
                break;
            }
            case 0x95: take(8); break;        // FRAME: a length hint only
            case '(': marks_.push_back(stack_.size()); break;  // MARK
            case '0': pop(); break;           // POP
            case '1': pop_mark(); break;      // POP_MARK
            case '2': push(top()); break;     // DUP
            case 'N': push(make(Kind::None)); break;
            case 0x88: case 0x89: {           // NEWTRUE, NEWFALSE
                PickleValue* b = make(Kind::Bool);
                b->flag = op == 0x88;
                push(b);
                break;
            }
            case 'J': {                       // BININT: signed 4 bytes
                const auto u = static_cast<std::uint32_t>(little(4));
                std::int32_t s;
                std::memcpy(&s, &u, 4);
                push(integer(s));
                break;
            }
            case 'K': push(integer(byte())); break;                                          // BININT1
            case 'M': push(integer(static_cast<std::int64_t>(little(2)))); break;            // BININT2
            case 0x8a: push(long_integer(byte())); break;                                    // LONG1
            case 0x8b: push(long_integer(little(4))); break;                                 // LONG4
            case 'G': {                                                                       // BINFLOAT: big-endian double
                const std::uint8_t* b = take(8);
                std::uint64_t bits = 0;
                for (int i = 0; i < 8; ++i) bits = (bits << 8) | b[i];
                PickleValue* f = make(Kind::Float);
                std::memcpy(&f->number, &bits, 8);
                push(f);
                break;
            }
            case 'X': push(text(Kind::String, bytes_text(little(4)))); break;                // BINUNICODE
            case 0x8c: push(text(Kind::String, bytes_text(byte()))); break;                   // SHORT_BINUNICODE
            case 0x8d: push(text(Kind::String, bytes_text(little(8)))); break;                // BINUNICODE8
            case 'T': push(text(Kind::String, bytes_text(little(4)))); break;                 // BINSTRING (Python 2 str)
            case 'U': push(text(Kind::String, bytes_text(byte()))); break;                    // SHORT_BINSTRING
            case 'B': push(text(Kind::Bytes, bytes_text(little(4)))); break;                  // BINBYTES
            case 'C': push(text(Kind::Bytes, bytes_text(byte()))); break;                     // SHORT_BINBYTES
            case 0x8e: push(text(Kind::Bytes, bytes_text(little(8)))); break;                 // BINBYTES8
            case ')': push(make(Kind::Tuple)); break;                                         // EMPTY_TUPLE
            case 't': push(tuple(pop_mark())); break;                                         // TUPLE
            case 0x85: case 0x86: case 0x87: {                                                // TUPLE1..3
                std::vector<PickleValue*> items(op - 0x84);
                for (std::size_t i = items.size(); i-- > 0;) items[i] = pop();
                push(tuple(std::move(items)));
                break;
            }
            case ']': push(make(Kind::List)); break;                                          // EMPTY_LIST
            case 'l': {                                                                       // LIST
                PickleValue* l = make(Kind::List);
                for (PickleValue* v : pop_mark()) l->items.push_back(v);
                push(l);
                break;
            }
            case '}': push(make(Kind::Dict)); break;                                          // EMPTY_DICT
            case 'd': {                                                                       // DICT
                PickleValue* d = make(Kind::Dict);
                set_items(d, pop_mark());
                push(d);
                break;
            }
            case 0x8f: push(make(Kind::Set)); break;                                          // EMPTY_SET
            case 0x91: {                                                                      // FROZENSET
                PickleValue* s = make(Kind::Set);
                for (PickleValue* v : pop_mark()) s->items.push_back(v);
                push(s);
                break;
            }
            case 'a': {                                                                       // APPEND
                PickleValue* v = pop();
                append(top(), {v});
                break;
            }
            case 'e': case 0x90: {                                                            // APPENDS, ADDITEMS
                std::vector<PickleValue*> items = pop_mark();
                append(top(), items);
                break;
            }
            case 's': {                                                                       // SETITEM
                PickleValue* v = pop();
                PickleValue* k = pop();
                set_items(top(), {k, v});
                break;
            }
            case 'u': {                                                                       // SETITEMS
                std::vector<PickleValue*> kv = pop_mark();
                set_items(top(), kv);
                break;
            }
            case 'q': memo_put(byte()); break;                                                // BINPUT
            case 'r': memo_put(little(4)); break;                                             // LONG_BINPUT
            case 0x94: memo_put(memo_.size()); break;                                         // MEMOIZE
            case 'h': push(memo_get(byte())); break;                                          // BINGET
            case 'j': push(memo_get(little(4))); break;                                       // LONG_BINGET
            case 'c': {                                                                       // GLOBAL
                const std::string module = line();
                const std::string name = line();
                push(global(module, name));
                break;
            }
            case 0x93: {                                                                      // STACK_GLOBAL
                PickleValue* name = pop();
                PickleValue* module = pop();
                require(module, Kind::String, Msg::pickle_part_stack_global_module);
                require(name, Kind::String, Msg::pickle_part_stack_global_name);
                push(global(module->text, name->text));
                break;
            }
            case 'Q': push(persistent_load(pop())); break;                                   // BINPERSID
            case 'R': {                                                                       // REDUCE
                PickleValue* args = pop();
                PickleValue* callable = pop();
                push(call(callable, args));
                break;
            }
            case 0x81: {                                                                      // NEWOBJ
                PickleValue* args = pop();
                require(args, Kind::Tuple, Msg::pickle_part_newobj_args);
                push(new_object(pop()));
                break;
            }
            case 0x92: {                                                                      // NEWOBJ_EX
                require(pop(), Kind::Dict, Msg::pickle_part_newobj_ex_kwargs);
                require(pop(), Kind::Tuple, Msg::pickle_part_newobj_ex_args);
                push(new_object(pop()));
                break;
            }
            case 'b': {                                                                       // BUILD: obj.__setstate__(state)
                const PickleValue* state = pop();
                PickleValue* obj = top();
                if (obj->kind == Kind::Object) {
                    build(obj, state);
                } else if (numpy_dtypes_.count(obj) || numpy_arrays_.count(obj)) {
                    build_numpy(obj, state);
                } else if (obj->kind != Kind::Dict && obj->kind != Kind::Tensor) {
                    // A state_dict's _metadata and a tensor subclass's __dict__ are not needed.
                    malformed(Message(Msg::pickle_build_on).with("found", kind_message(obj->kind)));
                }
                break;
            }
            default: {
                char code[8];
                std::snprintf(code, sizeof code, "0x%02x", op);
                p_ = begin_ + at;
                malformed(Message(Msg::pickle_opcode, {{"opcode", code}}));
            }
        }
    }

    const std::uint8_t* p_;
    const std::uint8_t* end_;
    const std::uint8_t* begin_;
    const std::string& label_;
    Unpickled out_;
    std::vector<PickleValue*> stack_;
    std::vector<std::size_t> marks_;
    std::unordered_map<std::uint64_t, PickleValue*> memo_;
    std::unordered_map<const PickleValue*, GlobalInfo> globals_;
    std::unordered_set<const PickleValue*> numpy_dtypes_, numpy_arrays_;
};

}  // namespace

Message kind_message(PickleValue::Kind kind) {
    switch (kind) {
        case Kind::None: return Message(Msg::pickle_kind_none);
        case Kind::Bool: return Message(Msg::pickle_kind_bool);
        case Kind::Int: return Message(Msg::pickle_kind_int);
        case Kind::Float: return Message(Msg::pickle_kind_float);
        case Kind::String: return Message(Msg::pickle_kind_str);
        case Kind::Bytes: return Message(Msg::pickle_kind_bytes);
        case Kind::Tuple: return Message(Msg::pickle_kind_tuple);
        case Kind::List: return Message(Msg::pickle_kind_list);
        case Kind::Dict: return Message(Msg::pickle_kind_dict);
        case Kind::Set: return Message(Msg::pickle_kind_set);
        case Kind::Global: return Message(Msg::pickle_kind_type);
        case Kind::Storage: return Message(Msg::pickle_kind_storage);
        case Kind::Tensor: return Message(Msg::pickle_kind_tensor);
        case Kind::Object: return Message(Msg::pickle_kind_object);
        case Kind::Other: return Message(Msg::pickle_kind_value);
    }
    return Message(Msg::pickle_kind_value);
}

Unpickled read_pickle(const std::uint8_t* data, std::size_t size, const std::string& label, std::size_t* used) {
    return Machine(data, size, label).run(used);
}

}  // namespace attnscope
