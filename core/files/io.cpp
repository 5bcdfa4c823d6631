// File formats: .npy and .safetensors (see io.hpp for the contract).
//
// [SECTION] Small helpers: error messages, little-endian bytes, float16/bfloat16
// [SECTION] MappedFile
// [SECTION] write_file_atomic
// [SECTION] .npy: header parser (a Python dict literal), reader, writer
// [SECTION] .safetensors: header validation, loader, writer
//
// Every FileError message is one line that starts with the path: "x.npy: <what is wrong>".
// Multi-byte values are assembled from bytes (never by casting a pointer into the file), so
// unaligned data is fine and the code does not depend on the host's byte order.

#include "io.hpp"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

namespace attnscope {

// ============================================================================================
// [SECTION] Small helpers
// ============================================================================================
namespace {

[[noreturn]] void fail(Msg code, std::initializer_list<std::pair<const char*, std::string>> args) {
    throw FileError(Message(code, args));
}

std::string errno_text(int err) { return std::strerror(err); }

// A short, printable, one-line excerpt of untrusted text for error messages.
std::string excerpt(const std::string& text, std::size_t max_len = 120) {
    std::string out;
    for (std::size_t i = 0; i < text.size() && i < max_len; ++i) {
        unsigned char c = static_cast<unsigned char>(text[i]);
        out += (c >= 0x20 && c < 0x7f) ? static_cast<char>(c) : '?';
    }
    if (text.size() > max_len) out += "...";
    return out;
}

std::uint16_t load_u16(const std::uint8_t* p) {
    return static_cast<std::uint16_t>(p[0] | (p[1] << 8));
}
std::uint32_t load_u32(const std::uint8_t* p) {
    return static_cast<std::uint32_t>(p[0]) | (static_cast<std::uint32_t>(p[1]) << 8) |
           (static_cast<std::uint32_t>(p[2]) << 16) | (static_cast<std::uint32_t>(p[3]) << 24);
}
std::uint64_t load_u64(const std::uint8_t* p) {
    return static_cast<std::uint64_t>(load_u32(p)) |
           (static_cast<std::uint64_t>(load_u32(p + 4)) << 32);
}
void append_u16(std::string& out, std::uint16_t v) {
    out += static_cast<char>(v & 0xff);
    out += static_cast<char>(v >> 8);
}
void append_u64(std::string& out, std::uint64_t v) {
    for (int i = 0; i < 8; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}
void append_f32(std::string& out, float f) {
    std::uint32_t bits;
    std::memcpy(&bits, &f, 4);
    for (int i = 0; i < 4; ++i) out += static_cast<char>((bits >> (8 * i)) & 0xff);
}

float float_from_bits(std::uint32_t bits) {
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

// IEEE 754 binary16 -> binary32, exact for every input (NaN payloads kept).
float half_to_float(std::uint16_t h) {
    const std::uint32_t sign = static_cast<std::uint32_t>(h >> 15) << 31;
    const std::uint32_t exponent = (h >> 10) & 0x1f;
    const std::uint32_t mantissa = h & 0x3ff;
    if (exponent == 0x1f)  // inf (mantissa 0) or NaN
        return float_from_bits(sign | 0x7f800000u | (mantissa << 13));
    if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24, exact in float32
        const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
        return sign ? -magnitude : magnitude;
    }
    return float_from_bits(sign | ((exponent + (127 - 15)) << 23) | (mantissa << 13));
}

float bfloat16_to_float(std::uint16_t b) { return float_from_bits(static_cast<std::uint32_t>(b) << 16); }

enum class FloatKind { F16, BF16, F32, F64 };

// Converts count little-endian values starting at src into out (src may be unaligned).
void convert_to_float(FloatKind kind, const std::uint8_t* src, std::size_t count, float* out) {
    switch (kind) {
        case FloatKind::F16:
            for (std::size_t i = 0; i < count; ++i) out[i] = half_to_float(load_u16(src + 2 * i));
            break;
        case FloatKind::BF16:
            for (std::size_t i = 0; i < count; ++i) out[i] = bfloat16_to_float(load_u16(src + 2 * i));
            break;
        case FloatKind::F32:
            for (std::size_t i = 0; i < count; ++i) out[i] = float_from_bits(load_u32(src + 4 * i));
            break;
        case FloatKind::F64:
            for (std::size_t i = 0; i < count; ++i) {
                const std::uint64_t bits = load_u64(src + 8 * i);
                double d;
                std::memcpy(&d, &bits, 8);
                out[i] = static_cast<float>(d);  // round to nearest, like numpy's astype
            }
            break;
    }
}

}  // namespace

bool is_float_dtype(const std::string& dtype) {
    return dtype == "F16" || dtype == "BF16" || dtype == "F32" || dtype == "F64";
}

void decode_floats(const std::string& dtype, const std::uint8_t* src, std::size_t count, float* out) {
    const FloatKind kind = dtype == "F16"    ? FloatKind::F16
                           : dtype == "BF16" ? FloatKind::BF16
                           : dtype == "F32"  ? FloatKind::F32
                           : dtype == "F64"  ? FloatKind::F64
                                             : throw FileError(Message(Msg::decode_not_float, {{"dtype", dtype}}));
    convert_to_float(kind, src, count, out);
}

// ============================================================================================
// [SECTION] MappedFile
// ============================================================================================
MappedFile MappedFile::open(const std::string& path) {
    // O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused below anyway).
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) fail(Msg::file_os_error, {{"file", path}, {"reason", errno_text(errno)}});
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        const int err = errno;
        ::close(fd);
        fail(Msg::file_os_error, {{"file", path}, {"reason", errno_text(err)}});
    }
    if (S_ISDIR(st.st_mode)) {
        ::close(fd);
        fail(Msg::file_is_directory, {{"file", path}});
    }
    if (!S_ISREG(st.st_mode)) {
        ::close(fd);
        fail(Msg::file_not_regular, {{"file", path}});
    }
    MappedFile file;
    file.path_ = path;
    if (st.st_size > 0) {
        if (static_cast<std::uint64_t>(st.st_size) > std::numeric_limits<std::size_t>::max()) {
            ::close(fd);
            fail(Msg::file_too_large_to_map, {{"file", path}});
        }
        const std::size_t size = static_cast<std::size_t>(st.st_size);
        void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            const int err = errno;
            ::close(fd);
            fail(Msg::file_cannot_map, {{"file", path}, {"reason", errno_text(err)}});
        }
        file.data_ = static_cast<const std::uint8_t*>(p);
        file.size_ = size;
    }
    ::close(fd);  // the mapping stays valid without the descriptor
    return file;
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : path_(std::move(other.path_)), data_(other.data_), size_(other.size_) {
    other.data_ = nullptr;
    other.size_ = 0;
}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
    if (this != &other) {
        if (data_) ::munmap(const_cast<std::uint8_t*>(data_), size_);
        path_ = std::move(other.path_);
        data_ = other.data_;
        size_ = other.size_;
        other.data_ = nullptr;
        other.size_ = 0;
    }
    return *this;
}

MappedFile::~MappedFile() {
    if (data_) ::munmap(const_cast<std::uint8_t*>(data_), size_);
}

// ============================================================================================
// [SECTION] write_file_atomic
// ============================================================================================
void write_file_atomic(const std::string& path, const std::string& bytes) {
    // The temporary file sits in the same folder so that rename() is atomic. O_EXCL with a
    // name made of the pid and a counter avoids clashes; the mode is 0666 minus the umask,
    // like any newly created file.
    static std::atomic<std::uint64_t> counter{0};
    const std::size_t slash = path.find_last_of('/');
    const std::string dir = slash == std::string::npos ? std::string() : path.substr(0, slash + 1);
    const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
    std::string tmp;
    int fd = -1;
    for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
        tmp = dir + "." + base + ".tmp." + std::to_string(::getpid()) + "." +
              std::to_string(counter.fetch_add(1));
        fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST) break;
    }
    if (fd < 0) fail(Msg::file_cannot_create_temporary, {{"file", path}, {"reason", errno_text(errno)}});

    auto abandon = [&](const std::string& step, int err) {
        if (fd >= 0) ::close(fd);
        ::unlink(tmp.c_str());
        fail(Msg::file_cannot_write, {{"file", path}, {"step", step}, {"reason", errno_text(err)}});
    };
    std::size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
        if (n < 0) {
            if (errno == EINTR) continue;
            abandon("cannot write", errno);
        }
        done += static_cast<std::size_t>(n);
    }
    if (::fsync(fd) != 0) abandon("cannot sync", errno);
    const int rc = ::close(fd);
    fd = -1;
    if (rc != 0) abandon("cannot close", errno);
    if (::rename(tmp.c_str(), path.c_str()) != 0) abandon("cannot replace the file", errno);
    // Make the rename itself durable; a failure here loses nothing already written.
    const int dir_fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd >= 0) {
        ::fsync(dir_fd);
        ::close(dir_fd);
    }
}

// ============================================================================================
// [SECTION] .npy
// ============================================================================================
// Format (numpy.lib.format): "\x93NUMPY", major, minor, header length (u16 LE for 1.0, u32 LE
// for 2.0 and 3.0), the header (a Python dict literal such as
// "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }" padded with spaces, ending in
// '\n'), then the raw data. 3.0 differs from 2.0 only in allowing UTF-8 in the header.
namespace {

constexpr char kNpyMagic[] = "\x93NUMPY";
constexpr std::size_t kNpyMagicLen = 6;
constexpr std::size_t kNpyMaxHeader = 1 << 20;  // real headers are about 100 bytes

// A parsed Python literal: only what .npy headers contain.
struct PyValue {
    enum Kind { Str, Int, Bool, None, Tuple, List, Dict, Other } kind = Other;
    std::string text;  // Str: the string; Int: the digits with sign; Other: the token
    bool flag = false;  // Bool
    std::vector<PyValue> items;  // Tuple, List
    std::vector<std::pair<PyValue, PyValue>> entries;  // Dict
};

const char* kind_name(PyValue::Kind k) {
    switch (k) {
        case PyValue::Str: return "a string";
        case PyValue::Int: return "an integer";
        case PyValue::Bool: return "a boolean";
        case PyValue::None: return "None";
        case PyValue::Tuple: return "a tuple";
        case PyValue::List: return "a list";
        case PyValue::Dict: return "a dict";
        default: return "something else";
    }
}

class PyLiteralParser {
public:
    PyLiteralParser(const std::string& text, const std::string& path) : s_(text), path_(path) {}

    PyValue parse_document() {
        PyValue v = value(0);
        skip_space();
        if (pos_ != s_.size()) error(Message(Msg::npy_parse_text_after_dict));
        return v;
    }

private:
    [[noreturn]] void error(Message problem) const {
        throw FileError(Message(Msg::npy_malformed_header,
                                {{"file", path_}, {"column", std::to_string(pos_ + 1)}, {"header", excerpt(s_)}})
                            .with("problem", std::move(problem)));
    }
    void skip_space() {
        while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' ||
                                    s_[pos_] == '\r'))
            ++pos_;
    }
    bool peek(char c) {
        skip_space();
        return pos_ < s_.size() && s_[pos_] == c;
    }
    void expect(char c) {
        if (!peek(c)) error(Message(Msg::npy_parse_expected_char, {{"char", std::string(1, c)}}));
        ++pos_;
    }

    PyValue value(int depth) {
        if (depth > 32) error(Message(Msg::npy_parse_too_deep));
        skip_space();
        if (pos_ >= s_.size()) error(Message(Msg::npy_parse_unexpected_end));
        const char c = s_[pos_];
        if (c == '{') return sequence(depth, '}', PyValue::Dict);
        if (c == '(') return sequence(depth, ')', PyValue::Tuple);
        if (c == '[') return sequence(depth, ']', PyValue::List);
        if (c == '\'' || c == '"') return string();
        if (c == '-' || c == '+' || (c >= '0' && c <= '9')) return integer();
        if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
            const std::size_t start = pos_;
            while (pos_ < s_.size() &&
                   (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_'))
                ++pos_;
            PyValue v;
            v.text = s_.substr(start, pos_ - start);
            if (v.text == "True" || v.text == "False") {
                v.kind = PyValue::Bool;
                v.flag = v.text == "True";
            } else if (v.text == "None") {
                v.kind = PyValue::None;
            } else {
                pos_ = start;
                error(Message(Msg::npy_parse_unexpected_name, {{"name", excerpt(v.text, 20)}}));
            }
            return v;
        }
        error(Message(Msg::npy_parse_unexpected_char, {{"char", excerpt(std::string(1, c))}}));
    }

    PyValue sequence(int depth, char close, PyValue::Kind kind) {
        PyValue v;
        v.kind = kind;
        ++pos_;  // the opening bracket
        bool saw_comma = false;  // "(3)" is an int in Python, "(3,)" a tuple
        while (!peek(close)) {
            if (kind == PyValue::Dict) {
                PyValue key = value(depth + 1);
                expect(':');
                PyValue val = value(depth + 1);
                v.entries.emplace_back(std::move(key), std::move(val));
            } else {
                v.items.push_back(value(depth + 1));
            }
            if (peek(',')) {
                ++pos_;
                saw_comma = true;
            } else if (!peek(close)) {
                error(Message(Msg::npy_parse_expected_comma, {{"close", std::string(1, close)}}));
            }
        }
        ++pos_;  // the closing bracket
        if (kind == PyValue::Tuple && v.items.size() == 1 && !saw_comma) {
            PyValue inner = std::move(v.items[0]);  // parenthesised expression, not a tuple
            return inner;
        }
        return v;
    }

    PyValue string() {
        const char quote = s_[pos_++];
        PyValue v;
        v.kind = PyValue::Str;
        while (true) {
            if (pos_ >= s_.size()) error(Message(Msg::npy_parse_unterminated_string));
            const char c = s_[pos_++];
            if (c == quote) break;
            if (c == '\\') {
                if (pos_ >= s_.size()) error(Message(Msg::npy_parse_unterminated_string));
                v.text += s_[pos_++];  // enough for names; .npy dtype strings have no escapes
            } else {
                v.text += c;
            }
        }
        return v;
    }

    PyValue integer() {
        PyValue v;
        v.kind = PyValue::Int;
        if (s_[pos_] == '-' || s_[pos_] == '+') {
            if (s_[pos_] == '-') v.text += '-';
            ++pos_;
        }
        const std::size_t digits = pos_;
        while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') v.text += s_[pos_++];
        if (pos_ == digits) error(Message(Msg::npy_parse_expected_digits));
        if (pos_ < s_.size() && (s_[pos_] == 'L' || s_[pos_] == 'l')) ++pos_;  // Python 2 long
        if (pos_ < s_.size() && (s_[pos_] == '.' || s_[pos_] == 'e' || s_[pos_] == 'E'))
            error(Message(Msg::npy_parse_fraction));
        return v;
    }

    const std::string& s_;
    const std::string& path_;
    std::size_t pos_ = 0;
};

std::string py_repr(const PyValue& v) {
    switch (v.kind) {
        case PyValue::Str: return "'" + v.text + "'";
        case PyValue::Int: return v.text;
        case PyValue::Bool: return v.flag ? "True" : "False";
        case PyValue::None: return "None";
        case PyValue::Tuple:
        case PyValue::List: {
            std::string out = v.kind == PyValue::Tuple ? "(" : "[";
            for (std::size_t i = 0; i < v.items.size(); ++i)
                out += (i ? ", " : "") + py_repr(v.items[i]);
            if (v.kind == PyValue::Tuple && v.items.size() == 1) out += ",";
            return out + (v.kind == PyValue::Tuple ? ")" : "]");
        }
        case PyValue::Dict: return "{...}";
        default: return v.text;
    }
}

std::string npy_shape_text(const Shape& shape) {
    std::string out = "(";
    for (std::size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
    if (shape.size() == 1) out += ",";
    return out + ")";
}

// A description of a numpy type kind for "dtype '<i8' (signed integer) is not supported".
std::string dtype_kind_text(const std::string& descr) {
    std::size_t i = 0;
    if (!descr.empty() && std::strchr("<>|=", descr[0])) i = 1;
    if (i >= descr.size()) return "";
    switch (descr[i]) {
        case 'b': return " (bool)";
        case '?': return " (bool)";
        case 'i': return " (signed integer)";
        case 'u': return " (unsigned integer)";
        case 'c': return " (complex)";
        case 'f': return " (floating point of this size)";
        case 'O': return " (Python objects, saved with allow_pickle)";
        case 'U': return " (unicode string)";
        case 'S': return " (byte string)";
        case 'a': return " (byte string)";
        case 'V': return " (raw bytes / void)";
        case 'M': return " (datetime)";
        case 'm': return " (timedelta)";
        default: return "";
    }
}

// Returns the element size and kind for an accepted descr, or throws.
std::pair<std::size_t, FloatKind> npy_dtype(const std::string& descr, const std::string& path) {
    // '<' is little-endian; '|' ("not applicable") and '=' (native, little-endian on every
    // machine attnscope runs on) are accepted for floats too. numpy writes '<' itself.
    if (descr.size() == 3 && descr[1] == 'f') {
        const std::string size = descr.substr(2);
        if (size == "2" || size == "4" || size == "8") {
            if (descr[0] == '>')
                fail(Msg::npy_big_endian, {{"file", path}, {"descr", descr}});
            if (descr[0] == '<' || descr[0] == '|' || descr[0] == '=') {
                if (size == "2") return {2, FloatKind::F16};
                if (size == "4") return {4, FloatKind::F32};
                return {8, FloatKind::F64};
            }
        }
    }
    fail(Msg::npy_dtype_unsupported, {{"file", path}, {"descr", excerpt(descr, 40)}, {"kind", dtype_kind_text(descr)}});
}

// Parses a dimension: a non-negative integer that fits in size_t.
std::size_t npy_dim(const PyValue& v, const PyValue& shape, const std::string& path) {
    if (v.kind != PyValue::Int)
        fail(Msg::npy_shape_not_tuple, {{"file", path}, {"found", py_repr(shape)}});
    if (!v.text.empty() && v.text[0] == '-') {
        bool all_zero = v.text.find_first_not_of('0', 1) == std::string::npos;
        if (!all_zero)
            fail(Msg::npy_shape_negative, {{"file", path}, {"shape", py_repr(shape)}, {"dim", v.text}});
    }
    std::size_t n = 0;
    for (char c : v.text) {
        if (c == '-') continue;
        const std::size_t digit = static_cast<std::size_t>(c - '0');
        if (n > (std::numeric_limits<std::size_t>::max() - digit) / 10)
            fail(Msg::npy_shape_too_large, {{"file", path}, {"shape", py_repr(shape)}, {"dim", excerpt(v.text, 40)}});
        n = n * 10 + digit;
    }
    return n;
}

}  // namespace

std::size_t npy_header_size(const std::uint8_t* data, std::size_t size, const std::string& path) {
    if (size < kNpyMagicLen || std::memcmp(data, kNpyMagic, kNpyMagicLen) != 0)
        fail(Msg::npy_magic, {{"file", path}});
    if (size < kNpyMagicLen + 2) fail(Msg::npy_truncated_after_magic, {{"file", path}});
    const int major = data[6];
    const int minor = data[7];
    std::size_t len_bytes = 0;
    if (major == 1 && minor == 0)
        len_bytes = 2;
    else if ((major == 2 || major == 3) && minor == 0)
        len_bytes = 4;
    else
        fail(Msg::npy_version, {{"file", path}, {"version", std::to_string(major) + "." + std::to_string(minor)}});
    const std::size_t prefix = kNpyMagicLen + 2 + len_bytes;
    if (size < prefix)
        fail(Msg::npy_truncated_length, {{"file", path}, {"size", std::to_string(size)}});
    const std::size_t header_len = len_bytes == 2 ? load_u16(data + 8) : load_u32(data + 8);
    if (header_len > kNpyMaxHeader)
        fail(Msg::npy_header_absurd,
             {{"file", path}, {"length", std::to_string(header_len)}, {"limit", std::to_string(kNpyMaxHeader)}});
    return prefix + header_len;
}

NpyHeader parse_npy_header(const std::uint8_t* data, std::size_t size, const std::string& path) {
    const std::size_t header_end = npy_header_size(data, size, path);
    const std::size_t prefix = data[6] == 1 ? kNpyMagicLen + 4 : kNpyMagicLen + 6;
    if (header_end > size)
        fail(Msg::header_past_end,
             {{"file", path}, {"length", std::to_string(header_end - prefix)}, {"size", std::to_string(size)}});
    const std::string header(reinterpret_cast<const char*>(data + prefix), header_end - prefix);
    const PyValue dict = PyLiteralParser(header, path).parse_document();
    if (dict.kind != PyValue::Dict)
        fail(Msg::npy_header_not_dict, {{"file", path}, {"kind", kind_name(dict.kind)}, {"header", excerpt(header)}});
    const PyValue* descr = nullptr;
    const PyValue* fortran = nullptr;
    const PyValue* shape_value = nullptr;
    for (const auto& [key, value] : dict.entries) {
        if (key.kind != PyValue::Str)
            fail(Msg::npy_header_key_not_string,
                 {{"file", path}, {"kind", kind_name(key.kind)}, {"header", excerpt(header)}});
        const PyValue** slot = key.text == "descr"           ? &descr
                               : key.text == "fortran_order" ? &fortran
                               : key.text == "shape"         ? &shape_value
                                                             : nullptr;
        if (!slot) fail(Msg::npy_header_unexpected_key, {{"file", path}, {"key", excerpt(key.text, 40)}});
        if (*slot) fail(Msg::npy_header_key_twice, {{"file", path}, {"key", key.text}});
        *slot = &value;
    }
    if (!descr) fail(Msg::npy_header_no_descr, {{"file", path}, {"header", excerpt(header)}});
    if (!fortran) fail(Msg::npy_header_no_fortran_order, {{"file", path}, {"header", excerpt(header)}});
    if (!shape_value) fail(Msg::npy_header_no_shape, {{"file", path}, {"header", excerpt(header)}});

    if (descr->kind == PyValue::List)
        fail(Msg::npy_structured_dtype, {{"file", path}});
    if (descr->kind != PyValue::Str)
        fail(Msg::npy_descr_not_string, {{"file", path}, {"found", py_repr(*descr)}});
    const std::size_t itemsize = npy_dtype(descr->text, path).first;
    if (fortran->kind != PyValue::Bool)
        fail(Msg::npy_fortran_order_not_bool, {{"file", path}, {"found", py_repr(*fortran)}});
    if (shape_value->kind != PyValue::Tuple)
        fail(Msg::npy_shape_not_tuple, {{"file", path}, {"found", py_repr(*shape_value)}});

    Shape shape;
    for (const PyValue& d : shape_value->items) shape.push_back(npy_dim(d, *shape_value, path));
    std::size_t count = 0;
    std::size_t nbytes = 0;
    try {
        count = element_count(shape);
        nbytes = checked_mul(count, itemsize);
    } catch (const std::overflow_error&) {
        fail(Msg::npy_size_overflows, {{"file", path}, {"shape", npy_shape_text(shape)}, {"descr", descr->text}});
    }
    return {descr->text, fortran->flag, std::move(shape), header_end, nbytes};
}

Array parse_npy(const std::uint8_t* data, std::size_t size, const std::string& path) {
    const NpyHeader header = parse_npy_header(data, size, path);
    const FloatKind kind = npy_dtype(header.descr, path).second;
    const Shape& shape = header.shape;
    const std::size_t nbytes = header.data_bytes;
    const std::string shape_text = npy_shape_text(shape) + " of " + header.descr;
    const std::size_t available = size - header.data_offset;
    if (available < nbytes)
        fail(Msg::npy_truncated_data, {{"file", path},
                                       {"shape", shape_text},
                                       {"needs", std::to_string(nbytes)},
                                       {"has", std::to_string(available)}});
    if (available > nbytes)
        fail(Msg::npy_extra_bytes, {{"file", path},
                                    {"extra", std::to_string(available - nbytes)},
                                    {"shape", shape_text},
                                    {"needs", std::to_string(nbytes)},
                                    {"has", std::to_string(available)}});

    Array out = make_array(shape);
    const std::size_t count = out.size();
    if (count == 0) return out;
    prefault_for_writing(out.data(), count * sizeof(float));
    const std::uint8_t* src = data + header.data_offset;
    if (!header.fortran_order || shape.size() < 2) {
        convert_to_float(kind, src, count, out.data());
        return out;
    }
    // Fortran order: the first index varies fastest in the file. Walk the file's elements
    // in order with an odometer over the indices and scatter into row-major positions.
    std::vector<float> column_major(count);
    convert_to_float(kind, src, count, column_major.data());
    const Strides strides = contiguous_strides(shape);
    std::vector<std::size_t> index(shape.size(), 0);
    std::size_t dest = 0;
    float* out_data = out.data();
    for (std::size_t i = 0; i < count; ++i) {
        out_data[dest] = column_major[i];
        for (std::size_t axis = 0; axis < shape.size(); ++axis) {
            if (++index[axis] < shape[axis]) {
                dest += static_cast<std::size_t>(strides[axis]);
                break;
            }
            dest -= static_cast<std::size_t>(strides[axis]) * (shape[axis] - 1);
            index[axis] = 0;
        }
    }
    return out;
}

Array read_npy(const std::string& path) {
    const MappedFile file = MappedFile::open(path);
    return parse_npy(file.data(), file.size(), path);
}

std::string encode_npy(const Array& values) {
    const Shape shape = shape_of(values);
    std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': " + npy_shape_text(shape) + ", }";
    // Pad with spaces so that magic (6) + version (2) + length (2) + header, ending in '\n',
    // is a multiple of 64, as numpy does.
    const std::size_t unpadded = kNpyMagicLen + 2 + 2 + header.size() + 1;
    header.append((64 - unpadded % 64) % 64, ' ');
    header += '\n';
    if (header.size() > 0xffff)
        throw FileError(Message(Msg::encode_npy_header, {{"shape", npy_shape_text(shape)}}));
    std::string out(kNpyMagic, kNpyMagicLen);
    out += '\x01';
    out += '\x00';
    append_u16(out, static_cast<std::uint16_t>(header.size()));
    out += header;
    out.reserve(out.size() + values.size() * 4);
    const float* p = values.data();
    for (std::size_t i = 0; i < values.size(); ++i) append_f32(out, p[i]);
    return out;
}

void write_npy(const std::string& path, const Array& values) {
    write_file_atomic(path, encode_npy(values));
}

// ============================================================================================
// [SECTION] .safetensors
// ============================================================================================
// Format: u64 LE header length N, N bytes of UTF-8 JSON (possibly padded with spaces), then the
// data section. The header maps each tensor name to {"dtype", "shape", "data_offsets": [begin,
// end]} (offsets relative to the data section), plus an optional "__metadata__" object of
// strings. entries() keeps the header's order (parsed with nlohmann::ordered_json), which is
// the data order for every writer we know. Gaps between tensors are tolerated.
namespace {

constexpr std::uint64_t kSafetensorsMaxHeader = 100'000'000;  // as in the reference library
struct DtypeSize {
    const char* name;
    std::size_t size;
};
constexpr DtypeSize kSafetensorsDtypes[] = {
    {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E4M3", 1}, {"F8_E5M2", 1}, {"I16", 2},
    {"U16", 2},  {"F16", 2}, {"BF16", 2}, {"I32", 4},     {"U32", 4},     {"F32", 4},
    {"I64", 8},  {"U64", 8}, {"F64", 8},
};

std::size_t safetensors_dtype_size(const std::string& dtype) {
    for (const auto& d : kSafetensorsDtypes)
        if (dtype == d.name) return d.size;
    return 0;
}

std::string known_dtypes_text() {
    std::string out;
    for (const auto& d : kSafetensorsDtypes) out += (out.empty() ? "" : ", ") + std::string(d.name);
    return out;
}

std::string json_type(const nlohmann::ordered_json& j) {
    if (j.is_number_float()) return "a number with a fraction";
    if (j.is_number_integer() && !j.is_number_unsigned()) return "a negative integer";
    switch (j.type()) {
        case nlohmann::ordered_json::value_t::null: return "null";
        case nlohmann::ordered_json::value_t::object: return "an object";
        case nlohmann::ordered_json::value_t::array: return "an array";
        case nlohmann::ordered_json::value_t::string: return "a string";
        case nlohmann::ordered_json::value_t::boolean: return "a boolean";
        default: return "a number";
    }
}

std::string json_excerpt(const nlohmann::ordered_json& j) { return excerpt(j.dump(), 60); }

std::string one_line(std::string text) {
    // nlohmann messages start with "[json.exception.parse_error.101] "; keep what follows.
    const std::size_t bracket = text.find("] ");
    if (!text.empty() && text[0] == '[' && bracket != std::string::npos) text = text.substr(bracket + 2);
    return excerpt(text, 300);
}

}  // namespace

SafetensorsFile SafetensorsFile::open(const std::string& path) {
    using json = nlohmann::ordered_json;
    SafetensorsFile st;
    st.file_ = MappedFile::open(path);
    const std::uint8_t* bytes = st.file_.data();
    const std::size_t size = st.file_.size();
    if (size < 8)
        fail(Msg::st_too_short, {{"file", path}, {"size", std::to_string(size)}});
    const std::uint64_t n = load_u64(bytes);
    if (n > kSafetensorsMaxHeader)
        fail(Msg::st_header_too_large, {{"file", path}, {"length", std::to_string(n)}});
    if (n > size - 8)
        fail(Msg::header_past_end, {{"file", path}, {"length", std::to_string(n)}, {"size", std::to_string(size)}});
    st.data_start_ = 8 + static_cast<std::size_t>(n);
    const std::uint64_t data_size = size - st.data_start_;

    // Parse, refusing duplicate top-level names (JSON parsers would silently keep one).
    std::string duplicate;
    std::vector<std::string> seen;
    json header;
    try {
        const char* begin = reinterpret_cast<const char*>(bytes + 8);
        header = json::parse(
            begin, begin + n,
            [&](int depth, json::parse_event_t event, json& parsed) {
                if (depth == 1 && event == json::parse_event_t::key && duplicate.empty()) {
                    const std::string& key = parsed.get_ref<const std::string&>();
                    if (std::find(seen.begin(), seen.end(), key) != seen.end()) duplicate = key;
                    seen.push_back(key);
                }
                return true;
            });
    } catch (const json::exception& e) {
        fail(Msg::st_header_not_json, {{"file", path}, {"reason", one_line(e.what())}});
    }
    if (!header.is_object())
        fail(Msg::st_header_not_object, {{"file", path}, {"found", json_type(header)}});
    if (!duplicate.empty()) fail(Msg::st_header_name_twice, {{"file", path}, {"name", excerpt(duplicate, 80)}});

    for (const auto& [name, info] : header.items()) {
        const std::string tensor = excerpt(name, 80);
        if (name == "__metadata__") {
            if (!info.is_object())
                fail(Msg::st_metadata_not_object, {{"file", path}, {"found", json_type(info)}});
            for (const auto& [key, value] : info.items()) {
                if (!value.is_string())
                    fail(Msg::st_metadata_value_not_string,
                         {{"file", path}, {"key", excerpt(key, 80)}, {"found", json_type(value)}});
                st.metadata_[key] = value.get<std::string>();
            }
            continue;
        }
        if (!info.is_object()) fail(Msg::st_entry_not_object, {{"file", path}, {"name", tensor}, {"found", json_type(info)}});
        SafetensorsEntry entry;
        entry.name = name;

        const auto dtype = info.find("dtype");
        if (dtype == info.end() || !dtype->is_string()) fail(Msg::st_entry_no_dtype, {{"file", path}, {"name", tensor}});
        entry.dtype = dtype->get<std::string>();
        const std::size_t item_size = safetensors_dtype_size(entry.dtype);
        if (item_size == 0)
            fail(Msg::st_entry_unknown_dtype,
                 {{"file", path}, {"name", tensor}, {"dtype", excerpt(entry.dtype, 40)}, {"known", known_dtypes_text()}});

        const auto shape = info.find("shape");
        if (shape == info.end() || !shape->is_array())
            fail(Msg::st_entry_no_shape, {{"file", path}, {"name", tensor}});
        for (const json& d : *shape) {
            if (!d.is_number_unsigned())
                fail(Msg::st_entry_bad_dimension,
                     {{"file", path}, {"name", tensor}, {"shape", json_excerpt(*shape)}, {"found", json_type(d)}});
            const std::uint64_t dim = d.get<std::uint64_t>();
            if (dim > std::numeric_limits<std::size_t>::max())
                fail(Msg::st_entry_dimension_too_large, {{"file", path}, {"name", tensor}, {"dim", std::to_string(dim)}});
            entry.shape.push_back(static_cast<std::size_t>(dim));
        }

        const auto offsets = info.find("data_offsets");
        if (offsets == info.end() || !offsets->is_array() || offsets->size() != 2 ||
            !(*offsets)[0].is_number_unsigned() || !(*offsets)[1].is_number_unsigned())
        {
            if (offsets == info.end()) fail(Msg::st_entry_no_offsets, {{"file", path}, {"name", tensor}});
            fail(Msg::st_entry_bad_offsets, {{"file", path}, {"name", tensor}, {"found", json_excerpt(*offsets)}});
        }
        entry.begin = (*offsets)[0].get<std::uint64_t>();
        entry.end = (*offsets)[1].get<std::uint64_t>();
        if (entry.end < entry.begin)
            fail(Msg::st_entry_offsets_reversed, {{"file", path},
                                                  {"name", tensor},
                                                  {"begin", std::to_string(entry.begin)},
                                                  {"end", std::to_string(entry.end)}});
        if (entry.end > data_size)
            fail(Msg::st_entry_offsets_past_end, {{"file", path},
                                                  {"name", tensor},
                                                  {"begin", std::to_string(entry.begin)},
                                                  {"end", std::to_string(entry.end)},
                                                  {"size", std::to_string(data_size)}});
        std::size_t nbytes = 0;
        try {
            nbytes = checked_mul(element_count(entry.shape), item_size);
        } catch (const std::overflow_error&) {
            fail(Msg::st_entry_size_overflows, {{"file", path}, {"name", tensor}, {"shape", format_shape(entry.shape)}});
        }
        if (nbytes != entry.end - entry.begin)
            fail(Msg::st_entry_size_mismatch, {{"file", path},
                                               {"name", tensor},
                                               {"shape", format_shape(entry.shape)},
                                               {"dtype", entry.dtype},
                                               {"needs", std::to_string(nbytes)},
                                               {"begin", std::to_string(entry.begin)},
                                               {"end", std::to_string(entry.end)},
                                               {"holds", std::to_string(entry.end - entry.begin)}});
        st.entries_.push_back(std::move(entry));
    }

    // No two tensors may share bytes. Sort non-empty ranges by begin; each must start at or
    // after the furthest end seen so far.
    std::vector<const SafetensorsEntry*> ranges;
    for (const auto& e : st.entries_)
        if (e.end > e.begin) ranges.push_back(&e);
    std::sort(ranges.begin(), ranges.end(), [](const SafetensorsEntry* a, const SafetensorsEntry* b) {
        return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
    });
    const SafetensorsEntry* furthest = nullptr;
    for (const SafetensorsEntry* e : ranges) {
        if (furthest && e->begin < furthest->end)
            fail(Msg::st_tensors_overlap, {{"file", path},
                                           {"first", excerpt(furthest->name, 80)},
                                           {"first_begin", std::to_string(furthest->begin)},
                                           {"first_end", std::to_string(furthest->end)},
                                           {"second", excerpt(e->name, 80)},
                                           {"second_begin", std::to_string(e->begin)},
                                           {"second_end", std::to_string(e->end)}});
        if (!furthest || e->end > furthest->end) furthest = e;
    }
    return st;
}

const SafetensorsEntry* SafetensorsFile::find(const std::string& name) const {
    for (const auto& e : entries_)
        if (e.name == name) return &e;
    return nullptr;
}

Array SafetensorsFile::load(const std::string& name) const {
    const SafetensorsEntry* e = find(name);
    if (!e) {
        std::string names;
        const std::size_t shown = std::min<std::size_t>(entries_.size(), 5);
        for (std::size_t i = 0; i < shown; ++i) names += (i ? ", " : "") + excerpt(entries_[i].name, 80);
        if (entries_.size() > shown) names += ", ...";
        const Msg code = entries_.empty()       ? Msg::st_no_such_tensor_empty
                         : entries_.size() == 1 ? Msg::st_no_such_tensor_one
                                                : Msg::st_no_such_tensor;
        fail(code, {{"file", path()}, {"name", excerpt(name, 80)}, {"count", std::to_string(entries_.size())}, {"names", names}});
    }
    if (!is_float_dtype(e->dtype))
        fail(Msg::st_tensor_not_float, {{"file", path()}, {"name", excerpt(name, 80)}, {"dtype", e->dtype}});
    Array out = make_array(e->shape);
    prefault_for_writing(out.data(), out.size() * sizeof(float));
    if (out.size() > 0) decode_floats(e->dtype, file_.data() + data_start_ + e->begin, out.size(), out.data());
    return out;
}

void write_safetensors(const std::string& path, const std::vector<std::pair<std::string, Array>>& tensors,
                       const std::map<std::string, std::string>& metadata) {
    using json = nlohmann::ordered_json;
    json header = json::object();
    if (!metadata.empty()) {
        json meta = json::object();
        for (const auto& [key, value] : metadata) meta[key] = value;
        header["__metadata__"] = std::move(meta);
    }
    std::uint64_t offset = 0;
    for (const auto& [name, values] : tensors) {
        if (name == "__metadata__") fail(Msg::st_write_metadata_name, {{"file", path}});
        if (header.contains(name)) fail(Msg::st_write_name_twice, {{"file", path}, {"name", excerpt(name, 80)}});
        const std::uint64_t nbytes = static_cast<std::uint64_t>(values.size()) * 4;
        json entry = json::object();
        entry["dtype"] = "F32";
        entry["shape"] = shape_of(values);
        entry["data_offsets"] = {offset, offset + nbytes};
        header[name] = std::move(entry);
        offset += nbytes;
    }
    std::string text;
    try {
        text = header.dump();
    } catch (const json::exception& e) {  // e.g. a name that is not valid UTF-8
        fail(Msg::st_write_cannot_encode, {{"file", path}, {"reason", one_line(e.what())}});
    }
    text.append((8 - text.size() % 8) % 8, ' ');
    std::string out;
    out.reserve(8 + text.size() + offset);
    append_u64(out, text.size());
    out += text;
    for (const auto& [name, values] : tensors) {
        const float* p = values.data();
        for (std::size_t i = 0; i < values.size(); ++i) append_f32(out, p[i]);
    }
    write_file_atomic(path, out);
}

}  // namespace attnscope
