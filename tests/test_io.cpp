// Tests of core/files/io: .npy and .safetensors readers and writers, MappedFile, write_file_atomic.
//
// Truth from outside: tests/data/io/ is written by tools/make_io_fixtures.py with numpy and
// torch; expected.json holds the float32 bit patterns numpy/torch compute for each fixture.
// Every error path is exercised with bytes crafted here, and every check of an error looks for
// the path at the start of the message and a phrase specific to that error.

#include <doctest/doctest.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>

#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "io.hpp"

using namespace attnscope;
namespace fs = std::filesystem;

namespace {

const std::string kData = std::string(ATTNSCOPE_TEST_DATA) + "/io/";

// A fresh directory under the system temp dir, removed with everything in it at the end.
struct TempDir {
    fs::path dir;
    TempDir() {
        static std::atomic<int> counter{0};
        dir = fs::temp_directory_path() /
              ("attnscope_test_io_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
        fs::remove_all(dir);
        fs::create_directories(dir);
    }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(dir, ec);
    }
    std::string path(const std::string& name) const { return (dir / name).string(); }
    std::string write(const std::string& name, const std::string& bytes) const {
        const std::string p = path(name);
        std::ofstream out(p, std::ios::binary | std::ios::trunc);
        out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
        REQUIRE(out.good());
        return p;
    }
};

std::string read_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    REQUIRE(in.good());
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

const nlohmann::json& expected() {
    static const nlohmann::json j = nlohmann::json::parse(read_bytes(kData + "expected.json"));
    return j;
}

std::uint32_t bits_of(float f) {
    std::uint32_t b;
    std::memcpy(&b, &f, 4);
    return b;
}
float from_bits(std::uint32_t b) {
    float f;
    std::memcpy(&f, &b, 4);
    return f;
}

// Compares shape and every value bit for bit (two NaNs count as equal: NaN payloads after
// numpy's own casts are not something we promise).
void check_matches(const Array& a, const nlohmann::json& want, const std::string& what) {
    INFO(what);
    const Shape want_shape = want.at("shape").get<Shape>();
    REQUIRE(shape_of(a) == want_shape);
    const auto& bits = want.at("bits");
    REQUIRE(a.size() == bits.size());
    std::size_t mismatches = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        const std::uint32_t w = bits[i].get<std::uint32_t>();
        const float got = a.data()[i];
        const bool same = bits_of(got) == w || (std::isnan(got) && std::isnan(from_bits(w)));
        if (!same && mismatches++ < 5) {
            INFO("element " << i << ": got " << got << " (0x" << std::hex << bits_of(got)
                            << "), want " << from_bits(w) << " (0x" << w << ")");
            CHECK(same);
        }
    }
    CHECK(mismatches == 0);
}

// The message of the FileError f throws, or a marker saying what happened instead.
std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const FileError& e) {
        return e.what();
    } catch (const std::exception& e) {
        return std::string("<not a FileError: ") + e.what() + ">";
    }
    return "<no exception>";
}

bool starts_with(const std::string& s, const std::string& prefix) {
    return s.compare(0, prefix.size(), prefix) == 0;
}

// Checks that `expr` throws a FileError whose one-line message starts with "path: " and
// contains `phrase`.
#define CHECK_FILE_ERROR(expr, path, phrase)                                    \
    do {                                                                        \
        const std::string message_ = error_of([&] { (void)(expr); });           \
        INFO("message: " << message_);                                          \
        CHECK(starts_with(message_, std::string(path) + ": "));                 \
        CHECK(message_.find(phrase) != std::string::npos);                      \
        CHECK(message_.find('\n') == std::string::npos);                        \
    } while (0)

// A .npy file with the given header text (padded like numpy) and raw data.
std::string npy_bytes(const std::string& dict, const std::string& data, int major = 1) {
    const std::size_t len_bytes = major == 1 ? 2 : 4;
    std::string header = dict;
    const std::size_t unpadded = 8 + len_bytes + header.size() + 1;
    header.append((64 - unpadded % 64) % 64, ' ');
    header += '\n';
    std::string out = "\x93NUMPY";
    out += static_cast<char>(major);
    out += '\0';
    for (std::size_t i = 0; i < len_bytes; ++i) out += static_cast<char>((header.size() >> (8 * i)) & 0xff);
    return out + header + data;
}

std::string f4_header(const std::string& shape) {
    return "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }";
}

std::string u64_le(std::uint64_t v) {
    std::string out;
    for (int i = 0; i < 8; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
    return out;
}

// A safetensors file: header text as given (no padding), then data_size zero bytes.
std::string st_bytes(const std::string& header, std::size_t data_size) {
    return u64_le(header.size()) + header + std::string(data_size, '\0');
}

Array make(const Shape& shape, float start = 0.25f) {
    Array a = make_array(shape);
    for (std::size_t i = 0; i < a.size(); ++i) a.data()[i] = start + 1.5f * static_cast<float>(i) - 7.0f;
    return a;
}

bool same_bits(const Array& a, const Array& b) {
    if (shape_of(a) != shape_of(b)) return false;
    return a.size() == 0 || std::memcmp(a.data(), b.data(), a.size() * 4) == 0;
}

}  // namespace

// ============================================================================================
// .npy: reading numpy's files
// ============================================================================================
TEST_CASE("npy: numpy-written <f2 <f4 <f8 files read as numpy astype(float32) bit for bit") {
    for (const char* name : {"f2.npy", "f4.npy", "f8.npy"})
        check_matches(read_npy(kData + name), expected().at(name), name);
}

TEST_CASE("npy: Fortran-order files are converted to row-major") {
    for (const char* name : {"fortran_f4.npy", "fortran_f2.npy"})
        check_matches(read_npy(kData + name), expected().at(name), name);
}

TEST_CASE("npy: 0-d and 1-d and zero-size arrays") {
    for (const char* name : {"scalar_f4.npy", "scalar_f8.npy", "vector_f4.npy", "empty_f4.npy", "empty_f8.npy"})
        check_matches(read_npy(kData + name), expected().at(name), name);
    const Array scalar = read_npy(kData + "scalar_f4.npy");
    CHECK(scalar.dimension() == 0);
    CHECK(scalar() == 3.25f);
}

TEST_CASE("npy: format versions 2.0 and 3.0") {
    for (const char* name : {"v2_f4.npy", "v3_f4.npy"})
        check_matches(read_npy(kData + name), expected().at(name), name);
}

TEST_CASE("npy: float16 to float32 is exact for all 65536 bit patterns") {
    std::string data;
    for (std::uint32_t h = 0; h < 0x10000; ++h) {
        data += static_cast<char>(h & 0xff);
        data += static_cast<char>(h >> 8);
    }
    const std::string bytes =
        npy_bytes("{'descr': '<f2', 'fortran_order': False, 'shape': (65536,), }", data);
    const Array a = parse_npy(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size(), "all.npy");
    REQUIRE(a.size() == 0x10000);
    std::size_t wrong = 0;
    for (std::uint32_t h = 0; h < 0x10000; ++h) {
        // Independent reference: the value formula of IEEE 754 binary16.
        const std::uint32_t e = (h >> 10) & 0x1f, m = h & 0x3ff;
        const bool negative = h & 0x8000;
        const float got = a.data()[h];
        bool ok;
        if (e == 0x1f && m == 0) {
            ok = std::isinf(got) && std::signbit(got) == negative;
        } else if (e == 0x1f) {  // NaN: payload kept in the top mantissa bits
            ok = std::isnan(got) && std::signbit(got) == negative && ((bits_of(got) >> 13) & 0x3ff) == m;
        } else {
            const double magnitude = e == 0 ? std::ldexp(double(m), -24) : std::ldexp(double(1024 + m), int(e) - 25);
            ok = static_cast<double>(got) == (negative ? -magnitude : magnitude) && std::signbit(got) == negative;
        }
        if (!ok) ++wrong;
    }
    CHECK(wrong == 0);
}

TEST_CASE("npy: byte orders | and = are accepted for floats") {
    const std::string data("\x00\x00\x80\x3f\x00\x00\x00\x40", 8);  // 1.0f, 2.0f
    for (const char* order : {"|", "="}) {
        const std::string bytes =
            npy_bytes(std::string("{'descr': '") + order + "f4', 'fortran_order': False, 'shape': (2,), }", data);
        const Array a = parse_npy(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size(), "x.npy");
        REQUIRE(a.size() == 2);
        CHECK(a(0) == 1.0f);
        CHECK(a(1) == 2.0f);
    }
}

TEST_CASE("npy: header dict in another key order with double quotes and no trailing comma") {
    TempDir tmp;
    const std::string data("\x00\x00\x80\x3f\x00\x00\x00\x40\x00\x00\x40\x40\x00\x00\x80\x40", 16);
    const std::string p = tmp.write(
        "x.npy", npy_bytes("{\"shape\": (2,2), 'fortran_order' : True,'descr':'<f4'}", data));
    const Array a = read_npy(p);
    REQUIRE(shape_of(a) == Shape{2, 2});
    CHECK(a(0, 0) == 1.0f);
    CHECK(a(1, 0) == 2.0f);  // Fortran order: the first index varies fastest in the file
    CHECK(a(0, 1) == 3.0f);
    CHECK(a(1, 1) == 4.0f);
}

// ============================================================================================
// .npy: refusing what attnscope cannot read
// ============================================================================================
TEST_CASE("npy: unsupported dtypes written by numpy are refused naming the dtype") {
    const std::string accepts = "attnscope reads little-endian float16/float32/float64 (<f2, <f4, <f8)";
    struct Case {
        const char* file;
        const char* phrase;
    };
    for (const Case& c : {Case{"int64.npy", "dtype '<i8' (signed integer) is not supported"},
                          Case{"complex64.npy", "dtype '<c8' (complex) is not supported"},
                          Case{"object.npy", "dtype '|O' (Python objects, saved with allow_pickle) is not supported"},
                          Case{"big_endian_f4.npy", "dtype '>f4' is big-endian"},
                          Case{"bool.npy", "dtype '|b1' (bool) is not supported"},
                          Case{"unicode.npy", "dtype '<U2' (unicode string) is not supported"},
                          Case{"structured.npy", "dtype is structured (a list of fields)"}}) {
        const std::string path = kData + c.file;
        CHECK_FILE_ERROR(read_npy(path), path, c.phrase);
        CHECK_FILE_ERROR(read_npy(path), path, accepts);
    }
}

TEST_CASE("npy errors: magic string and version and header length") {
    TempDir tmp;
    const std::string good = npy_bytes(f4_header("(2,)"), std::string(8, '\0'));

    std::string p = tmp.write("magic.npy", "PK\x03\x04 not numpy at all");
    CHECK_FILE_ERROR(read_npy(p), p, "not a .npy file");
    p = tmp.write("empty.npy", "");
    CHECK_FILE_ERROR(read_npy(p), p, "not a .npy file");
    p = tmp.write("short_magic.npy", "\x93NUM");
    CHECK_FILE_ERROR(read_npy(p), p, "not a .npy file");

    p = tmp.write("no_version.npy", "\x93NUMPY");
    CHECK_FILE_ERROR(read_npy(p), p, "truncated header");
    p = tmp.write("truncated_len.npy", good.substr(0, 9));
    CHECK_FILE_ERROR(read_npy(p), p, "truncated header");

    std::string v4 = good;
    v4[6] = 4;
    p = tmp.write("v4.npy", v4);
    CHECK_FILE_ERROR(read_npy(p), p, "unsupported .npy format version 4.0");
    std::string v11 = good;
    v11[7] = 1;
    p = tmp.write("v11.npy", v11);
    CHECK_FILE_ERROR(read_npy(p), p, "unsupported .npy format version 1.1");

    // header length field says more bytes than the file has
    p = tmp.write("header_past_eof.npy", good.substr(0, 40));
    CHECK_FILE_ERROR(read_npy(p), p, "header length 118 bytes runs past the end of the file (40 bytes)");

    // a 2.0 file claiming a 4 GB header
    std::string absurd = "\x93NUMPY";
    absurd += '\x02';
    absurd += '\0';
    absurd += std::string("\xff\xff\xff\xff", 4);
    absurd += "{}";
    p = tmp.write("absurd.npy", absurd);
    CHECK_FILE_ERROR(read_npy(p), p, "header length 4294967295 bytes is absurd");
}

TEST_CASE("npy errors: header syntax and keys") {
    TempDir tmp;
    const std::string data(8, '\0');
    struct Case {
        const char* name;
        std::string header;
        const char* phrase;
    };
    const Case cases[] = {
        {"missing_descr", "{'fortran_order': False, 'shape': (2,), }", "header has no 'descr' key"},
        {"missing_shape", "{'descr': '<f4', 'fortran_order': False, }", "header has no 'shape' key"},
        {"missing_fortran", "{'descr': '<f4', 'shape': (2,), }", "header has no 'fortran_order' key"},
        {"unknown_key", "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}",
         "unexpected key 'x'"},
        {"duplicate_key", "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}",
         "key 'descr' twice"},
        {"not_a_dict", "['descr', '<f4']", "expected a dict, found a list"},
        {"unclosed_shape", "{'descr': '<f4', 'fortran_order': False, 'shape': (2, }", "malformed header"},
        {"unclosed_dict", "{'descr': '<f4', 'fortran_order': False, 'shape': (2,)", "malformed header"},
        {"unterminated_string", "{'descr': '<f4, 'fortran_order': False, 'shape': (2,)}", "malformed header"},
        {"bad_name", "{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2,)}", "unexpected name 'Maybe'"},
        {"deep", "{'descr': '<f4', 'fortran_order': False, 'shape': " + std::string(200, '(') + "}",
         "nesting too deep"},
        {"shape_list", f4_header("[2]"), "'shape' must be a tuple of non-negative integers, found [2]"},
        {"shape_int", f4_header("2"), "'shape' must be a tuple of non-negative integers, found 2"},
        {"shape_string", f4_header("(2, 'a')"), "'shape' must be a tuple of non-negative integers"},
        {"shape_float", f4_header("(2.0,)"), "expected an integer, found a number with a fraction"},
        {"negative_dim", f4_header("(-2, 3)"), "has a negative dimension -2"},
        {"huge_dim", f4_header("(99999999999999999999999,)"), "dimension too large"},
        {"descr_not_string", "{'descr': 4, 'fortran_order': False, 'shape': (2,)}", "'descr' must be a dtype string"},
        {"fortran_not_bool", "{'descr': '<f4', 'fortran_order': 0, 'shape': (2,)}",
         "'fortran_order' must be True or False"},
    };
    for (const Case& c : cases) {
        const std::string p = tmp.write(std::string(c.name) + ".npy", npy_bytes(c.header, data));
        CHECK_FILE_ERROR(read_npy(p), p, c.phrase);
    }
}

TEST_CASE("npy errors: shape overflow and truncated data and trailing bytes") {
    TempDir tmp;
    std::string p = tmp.write("overflow.npy", npy_bytes(f4_header("(4294967296, 4294967296, 2)"), ""));
    CHECK_FILE_ERROR(read_npy(p), p, "has too many elements (the size overflows)");
    // the element count fits but count * itemsize does not
    p = tmp.write("overflow_bytes.npy", npy_bytes(f4_header("(4611686018427387905,)"), ""));
    CHECK_FILE_ERROR(read_npy(p), p, "has too many elements (the size overflows)");
    // a huge but representable size must be refused by length, before any allocation
    p = tmp.write("huge.npy", npy_bytes(f4_header("(1000000000, 1000000000)"), std::string(8, '\0')));
    CHECK_FILE_ERROR(read_npy(p), p, "truncated data");

    p = tmp.write("truncated.npy", npy_bytes(f4_header("(2, 3)"), std::string(20, '\0')));
    CHECK_FILE_ERROR(read_npy(p), p, "truncated data: shape (2, 3) of <f4 needs 24 bytes, the file has 20");
    p = tmp.write("trailing.npy", npy_bytes(f4_header("(2, 3)"), std::string(28, '\0')));
    CHECK_FILE_ERROR(read_npy(p), p, "4 unexpected bytes after the data");
    p = tmp.write("trailing_empty.npy", npy_bytes(f4_header("(0,)"), "x"));
    CHECK_FILE_ERROR(read_npy(p), p, "1 unexpected bytes after the data");
}

TEST_CASE("npy errors: missing file and directory and FIFO") {
    TempDir tmp;
    const std::string missing = tmp.path("missing.npy");
    CHECK_FILE_ERROR(read_npy(missing), missing, "No such file or directory");
    CHECK(error_of([&] { read_npy(missing); }) == missing + ": No such file or directory");
    const std::string dir = tmp.path("folder.npy");
    fs::create_directory(dir);
    CHECK_FILE_ERROR(read_npy(dir), dir, "is a directory");
    const std::string fifo = tmp.path("fifo.npy");
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    CHECK_FILE_ERROR(read_npy(fifo), fifo, "is not a regular file");  // and does not hang
}

// ============================================================================================
// .npy: writing
// ============================================================================================
TEST_CASE("npy: encode_npy writes exactly the bytes numpy writes for float32 C-order arrays") {
    for (const char* name : {"f4.npy", "vector_f4.npy", "scalar_f4.npy", "empty_f4.npy", "fortran_f4.npy"}) {
        INFO(name);
        const Array a = read_npy(kData + name);
        if (std::string(name) == "fortran_f4.npy") {
            // numpy writes Fortran arrays in Fortran order; ours are always C order.
            const std::string bytes = encode_npy(a);
            CHECK(bytes.find("'fortran_order': False") != std::string::npos);
            continue;
        }
        CHECK(encode_npy(a) == read_bytes(kData + name));
    }
}

TEST_CASE("npy: write_npy round trip and header layout") {
    TempDir tmp;
    for (const Shape& shape : {Shape{}, Shape{1}, Shape{7}, Shape{2, 3}, Shape{2, 0, 3}, Shape{3, 1, 4, 2}}) {
        INFO(format_shape(shape));
        const Array a = make(shape);
        const std::string p = tmp.path("round.npy");
        write_npy(p, a);
        const std::string bytes = read_bytes(p);
        REQUIRE(bytes.size() >= 10);
        CHECK(bytes.compare(0, 8, std::string("\x93NUMPY\x01\x00", 8)) == 0);
        const std::size_t header_len = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
        CHECK((10 + header_len) % 64 == 0);
        CHECK(bytes[10 + header_len - 1] == '\n');
        CHECK(bytes.size() == 10 + header_len + a.size() * 4);
        CHECK(same_bits(read_npy(p), a));
    }
    // special values survive
    Array s = make_array({4});
    s(0) = std::numeric_limits<float>::infinity();
    s(1) = -0.0f;
    s(2) = std::numeric_limits<float>::denorm_min();
    s(3) = std::numeric_limits<float>::quiet_NaN();
    write_npy(tmp.path("special.npy"), s);
    CHECK(same_bits(read_npy(tmp.path("special.npy")), s));
}

TEST_CASE("write_file_atomic: replaces the file and failures name the path and leave no temp file") {
    TempDir tmp;
    const std::string p = tmp.path("out.bin");
    write_file_atomic(p, "first");
    write_file_atomic(p, "second");
    CHECK(read_bytes(p) == "second");
    std::size_t files = 0;
    for (const auto& entry : fs::directory_iterator(tmp.dir)) files += entry.is_regular_file() ? 1 : 0;
    CHECK(files == 1);

    const std::string in_missing_dir = tmp.path("no/such/dir/x.npy");
    CHECK_FILE_ERROR(write_npy(in_missing_dir, make({2})), in_missing_dir, "No such file or directory");

    // the target is a directory: the rename fails, and the temporary file must be removed
    const std::string dir = tmp.path("target_dir");
    fs::create_directory(dir);
    fs::create_directory(dir + "/inside");  // non-empty, so rename cannot replace it
    CHECK_FILE_ERROR(write_file_atomic(dir, "x"), dir, "cannot replace the file");
    std::size_t leftovers = 0;
    for (const auto& entry : fs::directory_iterator(tmp.dir))
        leftovers += entry.path().filename().string().find(".tmp.") != std::string::npos ? 1 : 0;
    CHECK(leftovers == 0);
}

TEST_CASE("MappedFile: empty files and moves") {
    TempDir tmp;
    const std::string empty = tmp.write("empty", "");
    MappedFile e = MappedFile::open(empty);
    CHECK(e.size() == 0);
    CHECK(e.data() == nullptr);
    CHECK(e.path() == empty);

    const std::string p = tmp.write("abc", "abc");
    MappedFile a = MappedFile::open(p);
    REQUIRE(a.size() == 3);
    CHECK(std::memcmp(a.data(), "abc", 3) == 0);
    MappedFile b(std::move(a));
    CHECK(b.size() == 3);
    CHECK(a.data() == nullptr);
    e = std::move(b);
    CHECK(e.size() == 3);
    CHECK(e.path() == p);
    CHECK(std::memcmp(e.data(), "abc", 3) == 0);
}

// ============================================================================================
// .safetensors: reading
// ============================================================================================
TEST_CASE("safetensors: hand-written F16/BF16/F32/F64/I64 file reads as numpy/torch float32") {
    const std::string path = kData + "mixed.safetensors";
    const auto& want = expected().at("mixed.safetensors");
    const SafetensorsFile st = SafetensorsFile::open(path);
    CHECK(st.path() == path);

    // entries() keeps the header's order (which here differs from the data order)
    std::vector<std::string> order;
    for (const auto& e : st.entries()) order.push_back(e.name);
    CHECK(order == want.at("order").get<std::vector<std::string>>());
    CHECK(st.metadata() == want.at("metadata").get<std::map<std::string, std::string>>());

    const SafetensorsEntry* half = st.find("half");
    REQUIRE(half != nullptr);
    CHECK(half->dtype == "F16");
    CHECK(half->shape == Shape{3});
    CHECK(half->begin == 0);
    CHECK(half->end == 6);
    CHECK(st.find("nope") == nullptr);
    CHECK(st.find("ids")->dtype == "I64");

    for (const auto& [name, values] : want.at("tensors").items()) check_matches(st.load(name), values, name);
    CHECK(st.load("scalar").dimension() == 0);

    CHECK_FILE_ERROR(st.load("ids"), path, "tensor 'ids' has dtype I64; attnscope reads F16, BF16, F32, F64");
    CHECK_FILE_ERROR(st.load("w65"), path, "no tensor named 'w65'; the file has 7 tensors: w64, half, blocks.0.bf16, empty, w32, ...");
}

TEST_CASE("safetensors: zero-length tensors may share offsets and gaps and header padding are fine") {
    TempDir tmp;
    const std::string header =
        R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[0,0]},)"
        R"("b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
        R"("c":{"dtype":"F16","shape":[2,0],"data_offsets":[4,4]},)"
        R"("d":{"dtype":"BF16","shape":[1],"data_offsets":[6,8]}}      )";
    std::string bytes = u64_le(header.size()) + header + std::string("\x00\x00\xc0\x3f\x99\x99\x80\x3f", 8);
    const std::string p = tmp.write("ok.safetensors", bytes);
    const SafetensorsFile st = SafetensorsFile::open(p);
    REQUIRE(st.entries().size() == 4);
    CHECK(st.metadata().empty());
    CHECK(st.load("a").size() == 0);
    CHECK(st.load("b")(0) == 1.5f);
    CHECK(shape_of(st.load("c")) == Shape{2, 0});
    CHECK(st.load("d")(0) == 1.0f);
}

TEST_CASE("safetensors errors: lengths") {
    TempDir tmp;
    std::string p = tmp.write("tiny.safetensors", "abc");
    CHECK_FILE_ERROR(SafetensorsFile::open(p), p, "file is 3 bytes; a safetensors file starts with an 8-byte header length");
    p = tmp.write("empty.safetensors", "");
    CHECK_FILE_ERROR(SafetensorsFile::open(p), p, "file is 0 bytes");
    p = tmp.write("past_eof.safetensors", u64_le(1000) + "{}        ");
    CHECK_FILE_ERROR(SafetensorsFile::open(p), p, "header length 1000 bytes runs past the end of the file (18 bytes)");
    p = tmp.write("huge_header.safetensors", u64_le(200'000'000) + "{}");
    CHECK_FILE_ERROR(SafetensorsFile::open(p), p, "larger than the 100 MB limit");
    p = tmp.write("max_u64.safetensors", u64_le(~std::uint64_t{0}) + "{}");
    CHECK_FILE_ERROR(SafetensorsFile::open(p), p, "larger than the 100 MB limit");
    const std::string missing = tmp.path("missing.safetensors");
    CHECK_FILE_ERROR(SafetensorsFile::open(missing), missing, "No such file or directory");
    CHECK_FILE_ERROR(SafetensorsFile::open(tmp.dir.string()), tmp.dir.string(), "is a directory");
}

TEST_CASE("safetensors errors: header JSON and entries") {
    TempDir tmp;
    struct Case {
        const char* name;
        std::string header;
        std::size_t data_size;
        const char* phrase;
    };
    const std::string f32x2 = R"("dtype":"F32","shape":[2])";
    const Case cases[] = {
        {"invalid_json", R"({"a": {"dtype": )", 0, "header is not valid JSON"},
        {"invalid_utf8", "{\"\xff\xfe\": 1}", 0, "header is not valid JSON"},
        {"empty_header", "", 0, "header is not valid JSON"},
        {"array", "[1, 2]", 0, "header is not a JSON object (found an array)"},
        {"entry_not_object", R"({"a": 3})", 0, "tensor 'a': entry is not a JSON object"},
        {"missing_dtype", R"({"a":{"shape":[2],"data_offsets":[0,8]}})", 8, "tensor 'a' has no 'dtype' string"},
        {"dtype_not_string", R"({"a":{"dtype":4,"shape":[2],"data_offsets":[0,8]}})", 8, "tensor 'a' has no 'dtype' string"},
        {"missing_shape", R"({"a":{"dtype":"F32","data_offsets":[0,8]}})", 8, "tensor 'a' has no 'shape' array"},
        {"missing_offsets", R"({"a":{)" + f32x2 + "}}", 8, "tensor 'a' has no 'data_offsets'"},
        {"offsets_three", R"({"a":{)" + f32x2 + R"(,"data_offsets":[0,4,8]}})", 8, "tensor 'a' has no 'data_offsets'"},
        {"offsets_negative", R"({"a":{)" + f32x2 + R"(,"data_offsets":[-8,0]}})", 8, "tensor 'a' has no 'data_offsets'"},
        {"unknown_dtype", R"({"a":{"dtype":"F128","shape":[2],"data_offsets":[0,8]}})", 8,
         "tensor 'a' has unknown dtype 'F128'; known dtypes: BOOL, U8"},
        {"negative_dim", R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8,
         "every dimension must be a non-negative integer, found a negative integer"},
        {"fraction_dim", R"({"a":{"dtype":"F32","shape":[2.5],"data_offsets":[0,8]}})", 8,
         "every dimension must be a non-negative integer, found a number with a fraction"},
        {"string_dim", R"({"a":{"dtype":"F32","shape":["2"],"data_offsets":[0,8]}})", 8,
         "every dimension must be a non-negative integer, found a string"},
        {"out_of_bounds", R"({"a":{)" + f32x2 + R"(,"data_offsets":[0,8]}})", 4,
         "tensor 'a' has data_offsets [0, 8] past the end of the data section (4 bytes)"},
        {"end_before_begin", R"({"a":{)" + f32x2 + R"(,"data_offsets":[8,0]}})", 8, "with end before begin"},
        {"overlap",
         R"({"a":{)" + f32x2 + R"(,"data_offsets":[0,8]},"b":{)" + f32x2 + R"(,"data_offsets":[4,12]}})", 12,
         "tensors 'a' [0, 8) and 'b' [4, 12) overlap"},
        {"overlap_contained",
         R"({"big":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},"small":{)" + f32x2 +
             R"(,"data_offsets":[4,12]},"later":{)" + f32x2 + R"(,"data_offsets":[12,20]}})",
         20, "overlap"},
        {"size_mismatch", R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8,
         "tensor 'a' has a size mismatch: shape [3] of F32 needs 12 bytes, data_offsets [0, 8] hold 8"},
        {"overflow", R"({"a":{"dtype":"F32","shape":[4294967296,4294967296,2],"data_offsets":[0,8]}})", 8,
         "tensor 'a' has shape [4294967296, 4294967296, 2] with too many elements (the size overflows)"},
        {"overflow_bytes", R"({"a":{"dtype":"F64","shape":[2305843009213693952],"data_offsets":[0,8]}})", 8,
         "too many elements (the size overflows)"},
        {"metadata_value", R"({"__metadata__":{"format":"pt","epochs":3}})", 0,
         "__metadata__ value for key 'epochs' is not a string"},
        {"metadata_not_object", R"({"__metadata__":["pt"]})", 0, "__metadata__ must be an object of strings"},
        {"duplicate", R"({"a":{)" + f32x2 + R"(,"data_offsets":[0,8]},"a":{)" + f32x2 + R"(,"data_offsets":[8,16]}})",
         16, "header names 'a' twice"},
    };
    for (const Case& c : cases) {
        const std::string p = tmp.write(std::string(c.name) + ".safetensors", st_bytes(c.header, c.data_size));
        CHECK_FILE_ERROR(SafetensorsFile::open(p), p, c.phrase);
    }
}

// ============================================================================================
// .safetensors: writing
// ============================================================================================
TEST_CASE("safetensors: write then read back with metadata in the given order") {
    TempDir tmp;
    const std::string p = tmp.path("round.safetensors");
    const std::vector<std::pair<std::string, Array>> tensors = {
        {"z.last_name_first", make({2, 3})}, {"scalar", make({})}, {"empty", make({0, 4})},
        {"a.weight", make({3, 1, 2}, 9.0f)}};
    const std::map<std::string, std::string> metadata = {{"format", "pt"}, {"model", "tiny \"vit\" \xc3\xa9"}};
    write_safetensors(p, tensors, metadata);

    const std::string bytes = read_bytes(p);
    std::uint64_t n = 0;
    for (int i = 0; i < 8; ++i) n |= static_cast<std::uint64_t>(static_cast<unsigned char>(bytes[i])) << (8 * i);
    CHECK(n % 8 == 0);
    const nlohmann::json header = nlohmann::json::parse(bytes.substr(8, n));
    CHECK(header.contains("__metadata__"));

    const SafetensorsFile st = SafetensorsFile::open(p);
    CHECK(st.metadata() == metadata);
    REQUIRE(st.entries().size() == tensors.size());
    std::uint64_t offset = 0;
    for (std::size_t i = 0; i < tensors.size(); ++i) {
        const SafetensorsEntry& e = st.entries()[i];
        INFO(e.name);
        CHECK(e.name == tensors[i].first);
        CHECK(e.dtype == "F32");
        CHECK(e.shape == shape_of(tensors[i].second));
        CHECK(e.begin == offset);  // contiguous, in the given order
        offset = e.end;
        CHECK(same_bits(st.load(e.name), tensors[i].second));
    }
    CHECK(bytes.size() == 8 + n + offset);

    // no metadata -> no __metadata__ key; no tensors -> still a valid file
    write_safetensors(p, {{"x", make({2})}});
    const std::string plain = read_bytes(p);
    CHECK(plain.find("__metadata__") == std::string::npos);
    CHECK(SafetensorsFile::open(p).metadata().empty());
    write_safetensors(p, {});
    CHECK(SafetensorsFile::open(p).entries().empty());
}

TEST_CASE("safetensors: write refuses duplicate and reserved names") {
    TempDir tmp;
    const std::string p = tmp.path("bad.safetensors");
    CHECK_FILE_ERROR(write_safetensors(p, {{"a", make({1})}, {"a", make({1})}}), p, "tensor name 'a' is given twice");
    CHECK_FILE_ERROR(write_safetensors(p, {{"__metadata__", make({1})}}), p, "'__metadata__' cannot be a tensor name");
    CHECK_FILE_ERROR(write_safetensors(p, {{"bad\xff", make({1})}}), p, "cannot encode the header");
    CHECK(!fs::exists(p));
}
