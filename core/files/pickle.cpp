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
            fail("the pickle ends with " + std::to_string(stack_.size()) + " values on its stack (expected 1)");
        out_.root = stack_.back();
        if (used) *used = offset();
        return std::move(out_);
    }

private:
    // ---- errors and bytes --------------------------------------------------------------------
    [[noreturn]] void fail(const std::string& what) const { throw FileError(label_ + ": " + what); }
    [[noreturn]] void malformed(const std::string& what) const {
        fail("malformed pickle at byte " + std::to_string(offset()) + ": " + what);
    }
    std::size_t offset() const { return static_cast<std::size_t>(p_ - begin_); }
    std::size_t left() const { return static_cast<std::size_t>(end_ - p_); }

    const std::uint8_t* take(std::uint64_t n) {
        if (n > left()) malformed("needs " + std::to_string(n) + " more bytes, " + std::to_string(left()) + " left");
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
        if (!nl) malformed("a GLOBAL's name has no end of line");
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
        if (stack_.size() <= (marks_.empty() ? 0 : marks_.back())) malformed("pops from an empty stack");
        PickleValue* v = stack_.back();
        stack_.pop_back();
        return v;
    }
    PickleValue* top() {
        if (stack_.size() <= (marks_.empty() ? 0 : marks_.back())) malformed("reads an empty stack");
        return stack_.back();
    }
    // The values above the last MARK, which is removed.
    std::vector<PickleValue*> pop_mark() {
        if (marks_.empty()) malformed("no MARK to pop to");
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
    // LONG1/LONG4: two's complement, little-endian, n bytes.
    PickleValue* long_integer(std::uint64_t n) {
        if (n > 8) {
            take(n);
            return text(Kind::Other, "an integer of " + std::to_string(n) + " bytes");
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
        if (it == memo_.end()) malformed("memo entry " + std::to_string(index) + " was never stored");
        return it->second;
    }
    void require(const PickleValue* v, Kind kind, const char* what) {
        if (v->kind != kind)
            malformed(std::string(what) + " must be " + kind_text(kind) + ", found " + kind_text(v->kind));
    }
    std::uint64_t count(const PickleValue* v, const char* what) {
        require(v, Kind::Int, what);
        if (v->integer < 0) malformed(std::string(what) + " is negative (" + std::to_string(v->integer) + ")");
        return static_cast<std::uint64_t>(v->integer);
    }
    std::vector<std::uint64_t> counts(const PickleValue* v, const char* what) {
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
            fail("pickle global '" + shown(full) + "' can run code; attnscope never runs code from a file and refuses "
                 "it (save tensors, dicts of tensors or a model's state_dict())");
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
            malformed("a persistent id must be ('storage', type, key, location, numel[, view])");
        const PickleValue* type = pid->items[1];
        const auto g = globals_.find(type);
        if (g == globals_.end() || !g->second.storage)
            malformed("a storage's type must be one of torch's storage classes, found " + std::string(kind_text(type->kind)) +
                      (type->kind == Kind::Global ? " " + type->text : ""));
        require(pid->items[2], Kind::String, "a storage's key");
        require(pid->items[3], Kind::String, "a storage's location");
        PickleValue* s = make(Kind::Storage);
        s->storage.dtype = g->second.storage->dtype;
        s->storage.item_size = g->second.storage->item_size;
        s->storage.key = pid->items[2]->text;
        s->storage.numel = count(pid->items[4], "a storage's numel");
        if (pid->items.size() == 6 && pid->items[5]->kind != Kind::None) {
            const PickleValue* view = pid->items[5];
            if (view->kind != Kind::Tuple || view->items.size() != 3)
                malformed("a storage's view must be None or (view_key, offset, numel)");
            require(view->items[0], Kind::String, "a storage view's key");
            s->storage.view = true;
            s->storage.view_offset = count(view->items[1], "a storage view's offset");
            s->storage.view_numel = count(view->items[2], "a storage view's numel");
        }
        return s;
    }

    // ============================================================================================
    // [SECTION] Calls
    // ============================================================================================
    PickleValue* call(const PickleValue* callable, const PickleValue* args) {
        const auto g = globals_.find(callable);
        if (g != globals_.end() && g->second.inert)
            fail("pickle calls '" + shown(callable->text) + "' to rebuild a value, which would run the file's code; "
                 "attnscope never runs code from a file (save tensors, dicts of tensors or a model's state_dict())");
        if (g == globals_.end() || g->second.callable == Callable::None)
            malformed("REDUCE calls " + std::string(kind_text(callable->kind)) +
                      (callable->kind == Kind::Global ? " " + callable->text : "") + ", which is not a function attnscope knows");
        require(args, Kind::Tuple, "REDUCE's arguments");
        const std::vector<const PickleValue*>& a = args->items;
        switch (g->second.callable) {
            case Callable::OrderedDict: {
                PickleValue* d = make(Kind::Dict);
                if (a.empty()) return d;
                if (a.size() != 1 || a[0]->kind != Kind::List) malformed("OrderedDict takes () or a list of pairs");
                for (const PickleValue* pair : a[0]->items) {
                    if (pair->kind != Kind::Tuple || pair->items.size() != 2) malformed("OrderedDict's items must be pairs");
                    d->entries.emplace_back(pair->items[0], pair->items[1]);
                }
                return d;
            }
            case Callable::Set: {  // set() or set([items])
                PickleValue* set = make(Kind::Set);
                if (a.empty()) return set;
                if (a.size() != 1 || a[0]->kind != Kind::List) malformed("set takes () or a list");
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
                if (a.size() != 6 && a.size() != 7) malformed("_rebuild_tensor_v2 takes 6 or 7 arguments, found " + std::to_string(a.size()));
                require(a[0], Kind::Storage, "a tensor's storage");
                PickleValue* t = make(Kind::Tensor);
                t->tensor.storage = &a[0]->storage;
                t->tensor.offset = count(a[1], "a tensor's storage offset");
                t->tensor.size = counts(a[2], "a tensor's size");
                t->tensor.stride = counts(a[3], "a tensor's stride");
                if (t->tensor.size.size() != t->tensor.stride.size())
                    malformed("a tensor has " + std::to_string(t->tensor.size.size()) + " sizes but " +
                              std::to_string(t->tensor.stride.size()) + " strides");
                return t;
            }
            case Callable::RebuildParameter: {  // (data, requires_grad, hooks[, state])
                if (a.size() != 3 && a.size() != 4) malformed("_rebuild_parameter takes 3 or 4 arguments");
                require(a[0], Kind::Tensor, "a parameter's data");
                PickleValue* t = make(Kind::Tensor);
                t->tensor = a[0]->tensor;
                t->tensor.parameter = true;
                return t;
            }
            case Callable::RebuildFromType: {  // (func, type, args, state): func(*args) for Tensor or Parameter
                if (a.size() != 4) malformed("_rebuild_from_type_v2 takes 4 arguments");
                const bool plain_type = globals_.count(a[1]) &&
                                        (a[1]->text == "torch.Tensor" || a[1]->text == "torch.nn.parameter.Parameter");
                const auto func = globals_.find(a[0]);
                const bool rebuilds = func != globals_.end() && (func->second.callable == Callable::RebuildTensor ||
                                                                 func->second.callable == Callable::RebuildParameter);
                if (!plain_type || !rebuilds)
                    malformed("_rebuild_from_type_v2 rebuilds a torch.Tensor or Parameter with _rebuild_tensor_v2 or _rebuild_parameter only");
                return call(a[0], a[2]);
            }
            case Callable::Size: {
                if (a.size() != 1 || a[0]->kind != Kind::Tuple) malformed("torch.Size takes one tuple");
                counts(a[0], "a torch.Size");
                PickleValue* t = make(Kind::Tuple);
                t->items = a[0]->items;
                return t;
            }
            case Callable::Device: {
                if (a.empty() || a[0]->kind != Kind::String) malformed("torch.device takes a string");
                return text(Kind::Other, "device '" + a[0]->text + "'");
            }
            case Callable::Encode: {  // _codecs.encode(text, 'latin1'): code points 0-255 as bytes
                if (a.size() != 2 || a[0]->kind != Kind::String || a[1]->kind != Kind::String ||
                    (a[1]->text != "latin1" && a[1]->text != "latin-1"))
                    malformed("_codecs.encode takes a str and 'latin1'");
                return text(Kind::Bytes, latin1(a[0]->text));
            }
            case Callable::NumpyDtype: {  // numpy.dtype(code, align, copy); BUILD then gives its byte order
                if (a.empty() || a[0]->kind != Kind::String) malformed("numpy.dtype takes a type code");
                PickleValue* d = text(Kind::Other, "a numpy dtype '" + shown(a[0]->text) + "'");
                d->items = {a[0]};
                numpy_dtypes_.insert(d);
                return d;
            }
            case Callable::NumpyScalar: return numpy_scalar(a);
            case Callable::NumpyArray: {  // _reconstruct(ndarray, (0,), b'b'); BUILD then gives its shape
                if (a.empty() || !globals_.count(a[0]) || a[0]->text != "numpy.ndarray")
                    malformed("numpy's _reconstruct rebuilds a numpy.ndarray only");
                PickleValue* array = text(Kind::Other, "a numpy array");
                numpy_arrays_.insert(array);
                return array;
            }
            case Callable::None: break;
        }
        malformed("unreachable call");
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
                malformed("_codecs.encode's text has a character above U+00FF, which latin1 cannot encode");
            }
        }
        return out;
    }
    // A dtype's type code ('f8', 'i8', '?') and byte order ('<', '>', '|', '=').
    std::pair<std::string, std::string> numpy_dtype(const PickleValue* d, const char* what) {
        if (!numpy_dtypes_.count(d)) malformed(std::string(what) + " must be a numpy.dtype");
        return {d->items[0]->text, d->items.size() > 1 ? d->items[1]->text : "="};
    }
    // scalar(dtype, bytes): np.float64(0.93) a float, np.int64(5) an int, np.bool_ a bool; any other
    // dtype a value shown by its name. Stored little-endian ('>' is refused).
    PickleValue* numpy_scalar(const std::vector<const PickleValue*>& a) {
        if (a.size() != 2 || a[1]->kind != Kind::Bytes) malformed("numpy's scalar takes a dtype and bytes");
        const std::pair<std::string, std::string> dtype = numpy_dtype(a[0], "a numpy scalar's dtype");
        const std::string& code = dtype.first;
        const std::string& order = dtype.second;
        const std::string& b = a[1]->text;
        if (order == ">") malformed("a numpy scalar of dtype '" + shown(code) + "' is big-endian; attnscope reads little-endian values");
        auto load = [&](auto zero) {
            if (b.size() != sizeof zero) malformed("a numpy scalar of dtype '" + shown(code) + "' has " + std::to_string(b.size()) + " bytes");
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
        else v = text(Kind::Other, "a numpy " + shown(code) + " scalar");
        return v;
    }
    // BUILD of a dtype: (version, byte order, ...); of an array: (version, shape, dtype, fortran, data).
    // The array stays a value named by its shape and dtype: its elements are not a tensor's.
    void build_numpy(PickleValue* v, const PickleValue* state) {
        if (state->kind != Kind::Tuple || state->items.size() < 2) malformed("a numpy value's state must be a tuple");
        const std::vector<const PickleValue*>& s = state->items;
        if (numpy_dtypes_.count(v)) {
            require(s[1], Kind::String, "a numpy dtype's byte order");
            v->items.resize(1);
            v->items.push_back(s[1]);
            return;
        }
        if (s.size() != 5) malformed("a numpy array's state must be (version, shape, dtype, fortran, data)");
        std::string shape;
        for (std::uint64_t n : counts(s[1], "a numpy array's shape")) shape += (shape.empty() ? "" : ", ") + std::to_string(n);
        v->text = "a numpy array [" + shape + "] of " + shown(numpy_dtype(s[2], "a numpy array's dtype").first) +
                  " (not read: save it as a tensor, torch.from_numpy(a))";
    }

    // NEWOBJ(_EX): cls.__new__(cls, *args) of an inert class, as an Object without attributes yet.
    PickleValue* new_object(const PickleValue* cls) {
        const auto g = globals_.find(cls);
        if (g == globals_.end() || !g->second.inert)
            malformed("NEWOBJ makes " + std::string(kind_text(cls->kind)) + (cls->kind == Kind::Global ? " " + cls->text : "") +
                      ", which is not a class attnscope keeps as a record");
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
            malformed("SETITEM(S) on " + std::string(kind_text(dict->kind)));
        if (kv.size() % 2) malformed("SETITEMS with an odd number of values");
        // Keys are kept as written (a repeated key is rare; core/files/torch_save names the second one apart).
        for (std::size_t i = 0; i < kv.size(); i += 2) dict->entries.emplace_back(kv[i], kv[i + 1]);
    }
    void append(PickleValue* list, const std::vector<PickleValue*>& items) {
        if (list->kind != Kind::List && list->kind != Kind::Set && list->kind != Kind::Object)
            malformed("APPEND(S)/ADDITEMS on " + std::string(kind_text(list->kind)));
        list->items.insert(list->items.end(), items.begin(), items.end());
    }

    void step(std::uint8_t op, std::size_t at) {
        switch (op) {
            case 0x80: {  // PROTO
                const std::uint8_t version = byte();
                if (version > 4)
                    fail("pickle protocol " + std::to_string(version) + "; attnscope reads protocols 2 to 4 (torch.save's default is 2)");
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
                require(module, Kind::String, "STACK_GLOBAL's module");
                require(name, Kind::String, "STACK_GLOBAL's name");
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
                require(args, Kind::Tuple, "NEWOBJ's arguments");
                push(new_object(pop()));
                break;
            }
            case 0x92: {                                                                      // NEWOBJ_EX
                require(pop(), Kind::Dict, "NEWOBJ_EX's keyword arguments");
                require(pop(), Kind::Tuple, "NEWOBJ_EX's arguments");
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
                    malformed("BUILD sets the state of " + std::string(kind_text(obj->kind)) +
                              "; attnscope only keeps an object's, a dict's or a tensor's");
                }
                break;
            }
            default: {
                char code[8];
                std::snprintf(code, sizeof code, "0x%02x", op);
                p_ = begin_ + at;
                malformed(std::string("opcode ") + code +
                          " is not one torch.save writes (attnscope reads pickle protocols 2 to 4 without INST, OBJ "
                          "or extension codes)");
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

const char* kind_text(PickleValue::Kind kind) {
    switch (kind) {
        case Kind::None: return "None";
        case Kind::Bool: return "a bool";
        case Kind::Int: return "an int";
        case Kind::Float: return "a float";
        case Kind::String: return "a str";
        case Kind::Bytes: return "bytes";
        case Kind::Tuple: return "a tuple";
        case Kind::List: return "a list";
        case Kind::Dict: return "a dict";
        case Kind::Set: return "a set";
        case Kind::Global: return "a type";
        case Kind::Storage: return "a storage";
        case Kind::Tensor: return "a tensor";
        case Kind::Object: return "an object";
        case Kind::Other: return "a value";
    }
    return "a value";
}

Unpickled read_pickle(const std::uint8_t* data, std::size_t size, const std::string& label, std::size_t* used) {
    return Machine(data, size, label).run(used);
}

}  // namespace attnscope
