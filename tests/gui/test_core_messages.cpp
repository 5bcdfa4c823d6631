// Every message core can write for the user has a Chinese in po/zh_CN.po, also those no fixture or
// demo triggers:
//  - every code of core/tensor/messages.inc has a Chinese template with the same {name}s;
//  - core runs on bad inputs built here byte by byte (pictures, .npy and .safetensors headers, zip
//    archives, torch.save pickles, attention weights, ViT checkpoints), and every error it writes
//    must say what the case expects, be a coded message and translate completely.
#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "attention_maps.hpp"
#include "config.hpp"
#include "heads.hpp"
#include "image.hpp"
#include "io.hpp"
#include "logic/core_text.hpp"
#include "logic/engine_runner.hpp"
#include "memory_budget.hpp"
#include "tensor_source.hpp"
#include "vit.hpp"
#include "weights.hpp"

using namespace attnscope;
using namespace attnscope::ui;
namespace fs = std::filesystem;

// ---- core on bad inputs ----------------------------------------------------------------------

namespace {

// A folder of its own under the system's temp folder, removed at the end.
struct TempDir {
    fs::path path;
    TempDir() {
        path = fs::temp_directory_path() / ("attnscope_core_messages_" + std::to_string(::getpid()));
        fs::remove_all(path);
        fs::create_directories(path);
    }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
    std::string write(const std::string& name, const std::string& bytes) const {
        const fs::path p = path / name;
        std::ofstream(p, std::ios::binary) << bytes;
        return p.string();
    }
};

std::string read_text(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::string u16(std::uint32_t v) { return {char(v & 0xff), char((v >> 8) & 0xff)}; }
std::string u32(std::uint32_t v) { return u16(v & 0xffff) + u16(v >> 16); }
std::string u64(std::uint64_t v) { return u32(static_cast<std::uint32_t>(v)) + u32(static_cast<std::uint32_t>(v >> 32)); }
std::string be32(std::uint32_t v) { return {char(v >> 24), char((v >> 16) & 0xff), char((v >> 8) & 0xff), char(v & 0xff)}; }

std::uint32_t crc32(const std::string& bytes) {
    std::uint32_t c = 0xffffffffu;
    for (unsigned char b : bytes) {
        c ^= b;
        for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
    }
    return ~c;
}

// A zip archive of stored members; a member may claim another compression method or encryption.
struct ZipEntry {
    std::string name, data;
    std::uint16_t method = 0;  // 0 stored
    std::uint16_t flags = 0;   // bit 0: encrypted
};

std::string zip_archive(const std::vector<ZipEntry>& entries) {
    std::string out, directory;
    for (const ZipEntry& e : entries) {
        const std::string fields = u16(e.flags) + u16(e.method) + u16(0) + u16(0x21) + u32(crc32(e.data)) +
                                   u32(static_cast<std::uint32_t>(e.data.size())) +
                                   u32(static_cast<std::uint32_t>(e.data.size())) +
                                   u16(static_cast<std::uint32_t>(e.name.size())) + u16(0);
        directory += u32(0x02014b50) + u16(20) + u16(20) + fields + u16(0) + u16(0) + u16(0) + u32(0) +
                     u32(static_cast<std::uint32_t>(out.size())) + e.name;
        out += u32(0x04034b50) + u16(20) + fields + e.name + e.data;
    }
    const auto count = static_cast<std::uint32_t>(entries.size());
    return out + directory + u32(0x06054b50) + u16(0) + u16(0) + u16(count) + u16(count) +
           u32(static_cast<std::uint32_t>(directory.size())) + u32(static_cast<std::uint32_t>(out.size())) + u16(0);
}

// A .npy file: magic, version, header (padded to 64 bytes, ending in '\n'), data.
std::string npy(const std::string& header, const std::string& data = "", char major = 1) {
    std::string h = header;
    while ((10 + h.size() + 1) % 64 != 0) h += ' ';
    h += '\n';
    return std::string("\x93NUMPY", 6) + major + '\0' + u16(static_cast<std::uint32_t>(h.size())) + h + data;
}

std::string floats(std::size_t n) { return std::string(4 * n, '\0'); }

// A .safetensors file: header length, JSON header, data.
std::string safetensors(const std::string& header, const std::string& data = "") {
    return u64(header.size()) + header + data;
}

// A PNG's signature and IHDR chunk (stb_image does not check the CRC).
std::string png_head(std::uint32_t width, std::uint32_t height) {
    const std::string ihdr = "IHDR" + be32(width) + be32(height) + std::string("\x08\x02\x00\x00\x00", 5);
    return std::string("\x89PNG\r\n\x1a\n", 8) + be32(13) + ihdr + be32(crc32(ihdr));
}

// A torch.save archive whose data.pkl is `pickle` (and byteorder `byteorder`).
std::string torch_file(const std::string& pickle, const std::string& byteorder = "little") {
    return zip_archive({{"archive/data.pkl", pickle}, {"archive/byteorder", byteorder}, {"archive/version", "3\n"}});
}

// The demo ViT's tensors and metadata, to write altered copies of.
struct Checkpoint {
    std::vector<std::pair<std::string, Array>> tensors;
    std::map<std::string, std::string> metadata;
    Array& at(const std::string& name) {
        for (auto& [n, a] : tensors)
            if (n == name) return a;
        throw std::runtime_error("the demo ViT has no tensor " + name);
    }
    void erase(const std::string& name) {
        tensors.erase(std::remove_if(tensors.begin(), tensors.end(), [&](const auto& t) { return t.first == name; }),
                      tensors.end());
    }
};

Checkpoint demo_checkpoint() {
    const TensorSource source =
        TensorSource::open(std::string(ATTNSCOPE_SOURCE_DIR) + "/assets/models/demo_vit.safetensors");
    Checkpoint c;
    for (const TensorInfo& t : source.tensors()) c.tensors.emplace_back(t.name, source.load(t.name));
    c.metadata = source.metadata();
    return c;
}

Array zeros(std::vector<std::size_t> shape) { return Array(shape, 0.0f); }

// What `run` throws ("" when it does not).
// What run() throws, as the app receives it: the exception's message (coded, or its text).
Message error_of(const std::function<void()>& run) {
    try {
        run();
    } catch (const std::exception& e) {
        return message_of(e);
    }
    return {};
}

// The error of opening `path` as the GUI's File > Open does (the worker's job).
Message open_error(const std::string& path, std::optional<std::size_t> block = std::nullopt) {
    return error_of([&] { EngineRunner::file_job(path, block, std::nullopt, "")(RunHooks{}); });
}

}  // namespace

TEST_CASE("core messages: every coded message has a Chinese that takes the same arguments") {
    auto has_cjk = [](const std::string& text) {  // a lead byte of U+4E00..U+9FFF
        return std::any_of(text.begin(), text.end(), [](char c) { return (unsigned char)c >= 0xE4 && (unsigned char)c <= 0xE9; });
    };
    std::vector<std::string> missing;
    for (std::size_t i = 0; i < static_cast<std::size_t>(Msg::count); ++i) {
        const Msg code = static_cast<Msg>(i);
        const std::string name = message_name(code), english_template = message_template(code);
        CAPTURE(name);
        CAPTURE(english_template);
        if (!has_translation(english_template.c_str())) {
            missing.push_back(name);
            continue;
        }
        const std::string chinese = tr_in(Language::Chinese, english_template.c_str());
        CAPTURE(chinese);
        std::vector<std::string> en = template_names(english_template.c_str()), zh = template_names(chinese.c_str());
        std::sort(en.begin(), en.end());
        std::sort(zh.begin(), zh.end());
        CHECK(en == zh);  // every argument shown, none invented
        // Prose is Chinese; a template of names and punctuation only ("{file}: {reason}") or a single
        // word that is a name (".npz") may stay as it is.
        const std::string prose = fill_template(english_template.c_str(), [](const std::string&, std::string&) { return true; });
        const bool words = std::any_of(prose.begin(), prose.end(), [](char c) { return std::isalpha((unsigned char)c); }) &&
                           prose.find(' ') != std::string::npos;
        CHECK((has_cjk(chinese) || !words));
    }
    std::string list;
    for (const std::string& m : missing) list += "\n  " + m;
    INFO("core/tensor/messages.inc has these codes without a Chinese in po/zh_CN.po (make update-po):" << list);
    CHECK(missing.empty());
    // A file error in Chinese: the path and the numbers as they are, in the Chinese sentence's order.
    const Message m(Msg::header_past_end, {{"file", "/data/x.npy"}, {"length", "4096"}, {"size", "80"}});
    CHECK(english(m) == "/data/x.npy: header length 4096 bytes runs past the end of the file (80 bytes)");
    CHECK(tr_message_in(Language::Chinese, m) == "/data/x.npy：头部长度 4096 字节超出了文件末尾（文件共 80 字节）");
    const Message nested = Message(Msg::npy_malformed_header, {{"file", "a.npy"}, {"column", "7"}, {"header", "{'descr'"}})
                               .with("problem", Message(Msg::npy_parse_unexpected_end));
    CHECK(english(nested) == "a.npy: malformed header: unexpected end at column 7 in \"{'descr'\"");
    // A member of an archive as {file}: its path as it is, core's label words in Chinese.
    const Message member(Msg::npy_magic, {{"file", "/data/x.npz: member 'a.npy'"}});
    CHECK(tr_message_in(Language::Chinese, member).rfind("/data/x.npz：成员 'a.npy'：不是 .npy 文件", 0) == 0);
    CHECK(tr_message_in(Language::Chinese, nested) == "a.npy：头部格式错误：意外结束（第 7 列，位于 \"{'descr'\"）");
}

TEST_CASE("core messages: core's errors on crafted bad inputs all have a Chinese") {
    const TempDir dir;
    struct Case {
        std::string name;
        Message message;
        std::string expected;
        std::string library;  // where a library's own English starts (kept as it is), or ""
    };
    std::vector<Case> cases;
    auto expect = [&](const std::string& name, const Message& message, const std::string& expected,
                      const std::string& library = "") { cases.push_back({name, message, expected, library}); };
    const std::uint64_t budget = std::uint64_t{256} << 20;

    // Pictures (--image, the Image panel's Open).
    const std::string sample = read_text(fs::path(ATTNSCOPE_SOURCE_DIR) / "assets/samples/00_circle.png");
    REQUIRE(sample.size() > 200);
    auto picture = [&](const std::string& name, const std::string& bytes, const std::string& expected) {
        const std::string path = dir.write(name, bytes);
        expect(name, error_of([&] { load_image(path, budget); }), expected);
    };
    picture("truncated.png", sample.substr(0, sample.size() / 2), "cannot decode it as an image (");
    picture("header_only.png", png_head(64, 64), "cannot decode it as an image");
    picture("text.png", "this is a shopping list, not a picture\n", "; attnscope reads PNG, JPEG");
    picture("empty.png", "", "cannot decode it as an image");
    picture("empty.pgm", "P5 3 0 255\n", "the image is empty (3 x 0 pixels)");
    {
        const std::string path = dir.write("large.png", png_head(2000, 2000));
        expect("large.png", error_of([&] { load_image(path, std::uint64_t{1} << 20); }),
               "a 2000 x 2000 image needs ");
    }
    picture("zero_width.png", png_head(0, 64), "cannot decode it as an image");
    expect("missing picture", error_of([&] { load_image((dir.path / "nowhere.png").string(), budget); }), "no such file");

    // .npy headers (File > Open on a .npy).
    auto npy_case = [&](const std::string& name, const std::string& bytes, const std::string& expected) {
        expect(name, open_error(dir.write(name, bytes)), expected);
    };
    const std::string ok_header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
    npy_case("magic_only.npy", std::string("\x93NUMPY", 6), "truncated header: the file ends after the magic string");
    npy_case("version9.npy", npy(ok_header, floats(6), 9), "unsupported .npy format version 9.0");
    npy_case("short_length.npy", std::string("\x93NUMPY\x02\x00\x10", 9), "inside the header length field");
    npy_case("absurd_length.npy", std::string("\x93NUMPY\x02\x00", 8) + u32(0x7fffffff), "is absurd");
    npy_case("past_end.npy", std::string("\x93NUMPY\x01\x00", 8) + u16(4000) + "{'descr'", "runs past the end of the file");
    npy_case("list.npy", npy("['<f4', False, (2, 3)]"), "expected a dict, found a list");
    npy_case("int_key.npy", npy("{3: '<f4'}"), "a key is an integer, not a string");
    npy_case("extra_key.npy", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'colour': 'red'}"),
             "header has an unexpected key 'colour'");
    npy_case("twice.npy", npy("{'descr': '<f4', 'descr': '<f4'}"), "header has the key 'descr' twice");
    npy_case("no_shape.npy", npy("{'descr': '<f4', 'fortran_order': False}"), "header has no 'shape' key");
    npy_case("no_descr.npy", npy("{'fortran_order': False, 'shape': (2, 3)}"), "header has no 'descr' key");
    npy_case("no_order.npy", npy("{'descr': '<f4', 'shape': (2, 3)}"), "header has no 'fortran_order' key");
    npy_case("descr_int.npy", npy("{'descr': 4, 'fortran_order': False, 'shape': (2, 3)}"), "'descr' must be a dtype string");
    npy_case("order_str.npy", npy("{'descr': '<f4', 'fortran_order': 'no', 'shape': (2, 3)}"), "'fortran_order' must be True or False");
    npy_case("shape_list.npy", npy("{'descr': '<f4', 'fortran_order': False, 'shape': [2, 3]}"),
             "'shape' must be a tuple of non-negative integers");
    npy_case("negative.npy", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, -3)}"), "has a negative dimension");
    npy_case("too_large.npy", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999,)}"),
             "has a dimension too large to handle");
    npy_case("overflow.npy", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296)}"),
             "has too many elements (the size overflows)");
    npy_case("unterminated.npy", npy("{'descr': '<f4"), "unterminated string");
    npy_case("no_colon.npy", npy("{'descr' '<f4'}"), "expected ':'");
    npy_case("odd_char.npy", npy("{'descr': @}"), "unexpected character '@'");
    npy_case("odd_name.npy", npy("{'descr': Maybe}"), "unexpected name 'Maybe'");
    npy_case("trailing.npy", npy(ok_header + " and more"), "unexpected text after the dict");
    npy_case("fraction.npy", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2.5, 3)}"),
             "expected an integer, found a number with a fraction or exponent");
    npy_case("no_close.npy", npy("{'descr': '<f4' 'shape'}"), "expected ',' or '}'");
    npy_case("deep.npy", npy("{'descr': " + std::string(40, '(') + "}"), "nesting too deep");
    npy_case("short_data.npy", npy(ok_header, floats(5)), "holds 20 bytes of data but its header (shape [2, 3] of <f4) needs 24");
    npy_case("long_data.npy", npy(ok_header, floats(7)), "holds 28 bytes of data but its header (shape [2, 3] of <f4) needs 24");
    npy_case("big_endian.npy", npy("{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3), }", floats(6)),
             "is big-endian");

    // .safetensors headers.
    auto st_case = [&](const std::string& name, const std::string& bytes, const std::string& expected) {
        expect(name, open_error(dir.write(name, bytes)), expected);
    };
    st_case("tiny.safetensors", "abc", "a safetensors file starts with an 8-byte header length");
    st_case("huge_header.safetensors", u64(std::uint64_t{1} << 40), "is larger than the 100 MB limit");
    st_case("past_end.safetensors", u64(100) + "{}", "runs past the end of the file");
    // nlohmann::json's parse error follows in its English.
    expect("not_json.safetensors", open_error(dir.write("not_json.safetensors", safetensors("{\"a\": "))),
           "header is not valid JSON: ", "parse error at line 1");
    st_case("array.safetensors", safetensors("[1, 2]"), "header is not a JSON object (found an array)");
    st_case("twice.safetensors", safetensors(R"({"a": {}, "a": {}})"), "header names 'a' twice");
    st_case("meta_list.safetensors", safetensors(R"({"__metadata__": [1]})"), "__metadata__ must be an object of strings");
    st_case("meta_number.safetensors", safetensors(R"({"__metadata__": {"k": 1}})"), "is not a string (found a number)");
    st_case("entry_string.safetensors", safetensors(R"({"w": "x"})"), "entry is not a JSON object (found a string)");
    st_case("no_dtype.safetensors", safetensors(R"({"w": {"shape": [2]}})"), "has no 'dtype' string");
    st_case("odd_dtype.safetensors", safetensors(R"({"w": {"dtype": "Q8", "shape": [2], "data_offsets": [0, 2]}})"),
            "has unknown dtype 'Q8'; known dtypes: ");
    st_case("no_shape.safetensors", safetensors(R"({"w": {"dtype": "F32", "data_offsets": [0, 8]}})"), "has no 'shape' array");
    st_case("negative.safetensors", safetensors(R"({"w": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}})"),
            "every dimension must be a non-negative integer, found a negative integer");
    st_case("no_offsets.safetensors", safetensors(R"({"w": {"dtype": "F32", "shape": [2]}})"), "has no 'data_offsets' pair");
    st_case("backwards.safetensors", safetensors(R"({"w": {"dtype": "F32", "shape": [2], "data_offsets": [8, 0]}})", floats(2)),
            "with end before begin");
    st_case("beyond.safetensors", safetensors(R"({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 80]}})", floats(2)),
            "past the end of the data section");
    st_case("mismatch.safetensors", safetensors(R"({"w": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}})", floats(2)),
            "has a size mismatch");
    st_case("overlap.safetensors",
            safetensors(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}, )"
                        R"("b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})",
                        floats(3)),
            "overlap");
    st_case("ints.safetensors", safetensors(R"({"qkv.weight": {"dtype": "I32", "shape": [6, 2], "data_offsets": [0, 48]}})", floats(12)),
            "has dtype I32");

    // Zip archives: .npz and torch.save.
    const std::string one_npy = npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", floats(2));
    auto zip_case = [&](const std::string& name, const std::string& bytes, const std::string& expected) {
        expect(name, open_error(dir.write(name, bytes)), expected);
    };
    zip_case("same_name.npz", zip_archive({{"q.npy", one_npy}, {"q.npy", one_npy}}), "File already exists");
    zip_case("twice.npz", zip_archive({{"q", one_npy}, {"q.npy", one_npy}}), "holds the member 'q.npy' twice");
    zip_case("text_member.npz", zip_archive({{"attn.txt", "0.5 0.5"}}), "");
    zip_case("method99.npz", zip_archive({{"attn.npy", one_npy, 99}}), "");
    zip_case("encrypted.npz", zip_archive({{"attn.npy", one_npy, 0, 1}}), "");
    std::string cut = zip_archive({{"attn.npy", one_npy}});
    cut.erase(40, 20);  // a member's bytes gone: libzip finds the archive inconsistent
    zip_case("inconsistent.npz", cut, "not a readable .npz (zip archive): ");
    zip_case("no_pickle.pt", zip_archive({{"archive/weights.bin", floats(4)}}), "no tensor is named like a step");
    zip_case("big_endian.pt", torch_file("\x80\x02}.", "big"), "written on a big-endian machine (byteorder 'big')");
    zip_case("protocol5.pt", torch_file("\x80\x05}."), "pickle protocol 5; attnscope reads protocols 2 to 4");
    zip_case("inst.pt", torch_file("\x80\x02i__main__\nThing\n."), "is not one torch.save writes");
    zip_case("empty_stack.pt", torch_file("\x80\x02."), "the pickle ends with 0 values on its stack (expected 1)");
    zip_case("pop.pt", torch_file("\x80\x02" "0."), "pops from an empty stack");
    zip_case("memo.pt", torch_file("\x80\x02h\x05."), "memo entry 5 was never stored");
    zip_case("short_string.pt", torch_file(std::string("\x80\x02X\xff\x00\x00\x00", 7)), "more bytes, ");
    zip_case("appends_dict.pt", torch_file("\x80\x02}(K\x01" "e."), "APPEND(S)/ADDITEMS on a dict");
    zip_case("setitems_odd.pt", torch_file("\x80\x02}(K\x01u."), "SETITEMS with an odd number of values");
    zip_case("setitem_list.pt", torch_file("\x80\x02]K\x01K\x02s."), "SETITEM(S) on a list");
    zip_case("no_mark.pt", torch_file("\x80\x02" "1."), "no MARK to pop to");
    zip_case("global_eol.pt", torch_file("\x80\x02" "ctorch"), "a GLOBAL's name has no end of line");
    zip_case("reduce.pt", torch_file("\x80\x02" "ccollections\nOrderedDict\n" "K\x01\x85R."), "OrderedDict takes () or a list of pairs");
    zip_case("size.pt", torch_file("\x80\x02" "ctorch\nSize\n" "K\x01\x85R."), "torch.Size takes one tuple");

    // Attention weights in a file of the user's (File > Open, attnscope check --weights).
    const std::size_t C = 8;
    auto weights_file = [&](const std::string& name, std::vector<std::pair<std::string, Array>> tensors) {
        const std::string path = (dir.path / name).string();
        write_safetensors(path, tensors);
        return path;
    };
    const std::string two_layers = weights_file(
        "two_layers.safetensors", {{"layers.0.self_attn.in_proj_weight", zeros({3 * C, C})},
                                   {"layers.0.self_attn.out_proj.weight", zeros({C, C})},
                                   {"layers.0.cross_attn.in_proj_weight", zeros({3 * C, C})},
                                   {"layers.0.cross_attn.out_proj.weight", zeros({C, C})}});
    expect("two layers", open_error(two_layers), "two attention layers for block 0, '");
    const std::string cross = weights_file(
        "cross.safetensors", {{"attn.q_proj_weight", zeros({C, C})}, {"attn.k_proj_weight", zeros({C, 2 * C})},
                              {"attn.v_proj_weight", zeros({C, 2 * C})}, {"attn.out_proj.weight", zeros({C, C})},
                              {"attn.out_proj.bias", zeros({C})}});
    expect("cross-attention", open_error(cross), "keys and values of another width");
    std::vector<std::pair<std::string, Array>> blocks;
    for (const char* b : {"0", "1"}) {
        blocks.emplace_back(std::string("blocks.") + b + ".attn.qkv.weight", zeros({3 * C, C}));
        blocks.emplace_back(std::string("blocks.") + b + ".attn.qkv.bias", zeros({3 * C}));
        blocks.emplace_back(std::string("blocks.") + b + ".attn.proj.weight", zeros({C, C}));
        blocks.emplace_back(std::string("blocks.") + b + ".attn.proj.bias", zeros({C}));
    }
    const std::string two_blocks = weights_file("two_blocks.safetensors", blocks);
    expect("block out of range", open_error(two_blocks, 5), "has no block 5; its blocks are 0, 1");
    expect("block out of range (weights)", error_of([&] { load_attention_weights(two_blocks, 5, std::nullopt); }),
           "no attention weights for block 5; it holds blocks 0, 1");
    expect("no block chosen", error_of([&] { load_attention_weights(two_blocks, std::nullopt, std::nullopt); }),
           "holds the attention weights of blocks 0, 1; choose one with --block I");
    const std::string no_proj = weights_file("no_proj.safetensors", {{"qkv.weight", zeros({3 * C, C})}});
    expect("missing proj", error_of([&] { load_attention_weights(no_proj, std::nullopt, std::nullopt); }), "no proj.weight");
    const std::string bad_bias = weights_file("bad_bias.safetensors", {{"qkv.weight", zeros({3 * C, C})},
                                                                       {"qkv.bias", zeros({3 * C})},
                                                                       {"proj.weight", zeros({C, C})},
                                                                       {"proj.bias", zeros({C + 1})}});
    expect("wrong-shaped bias", error_of([&] { load_attention_weights(bad_bias, std::nullopt, std::nullopt); }),
           "proj.bias has shape [9]");
    const std::string nothing = weights_file("nothing.safetensors", {{"embedding.weight", zeros({4, C})}});
    expect("no weights", error_of([&] { load_attention_weights(nothing, std::nullopt, std::nullopt); }),
           "no attention weights; attnscope reads timm's");

    // ViT checkpoints: the demo ViT with one thing wrong (the Demo ViT menu, --model).
    auto vit_case = [&](const std::string& name, const std::function<void(Checkpoint&)>& change,
                        const std::string& expected, std::optional<std::size_t> heads = std::nullopt) {
        Checkpoint c = demo_checkpoint();
        change(c);
        const std::string path = (dir.path / (name + ".safetensors")).string();
        write_safetensors(path, c.tensors, c.metadata);
        expect("ViT " + name, error_of([&] { load_vit_model(path, heads, budget); }), expected);
    };
    vit_case("without_proj", [](Checkpoint& c) { c.erase("blocks.1.attn.proj.weight"); },
             "no tensor named 'blocks.1.attn.proj.weight'; a timm ViT checkpoint holds");
    vit_case("without_head", [](Checkpoint& c) { c.erase("head.weight"); }, "no tensor named 'head.weight'");
    vit_case("fc2", [](Checkpoint& c) { c.at("blocks.2.mlp.fc2.weight") = zeros({96, 100}); },
             "blocks.2.mlp.fc2.weight has shape [96, 100], expected [96, 192] to match M = 192 of");
    vit_case("qkv", [](Checkpoint& c) { c.at("blocks.0.attn.qkv.weight") = zeros({96, 96}); }, "expected [288, 96] to match [3*D, D] for dim D = 96");
    vit_case("patch", [](Checkpoint& c) { c.at("patch_embed.proj.weight") = zeros({96, 3, 8, 4}); },
             "expected [D, 3, p, p]: a square stride-p convolution over RGB");
    vit_case("positions", [](Checkpoint& c) { c.at("pos_embed") = zeros({1, 64, 96}); }, "patch positions do not form a square grid");
    vit_case("positions_dim", [](Checkpoint& c) { c.at("pos_embed") = zeros({1, 65, 95}); }, "+ P, D] with D = 96 from");
    vit_case("fc1", [](Checkpoint& c) { c.at("blocks.0.mlp.fc1.weight") = zeros({192}); }, "expected 2-D [M, D]");
    vit_case("head", [](Checkpoint& c) { c.at("head.weight") = zeros({4}); }, "expected 2-D [K, D]");
    vit_case("heads_word", [](Checkpoint& c) { c.metadata["num_heads"] = "three"; }, "is not a positive whole number");
    vit_case("no_heads", [](Checkpoint& c) { c.metadata.erase("num_heads"); }, "does not say how many heads its attention has (dim 96");
    vit_case("heads_chosen", [](Checkpoint&) {}, "is not divisible by 5 heads (from --heads)", 5);
    vit_case("image_size", [](Checkpoint& c) { c.metadata["image_size"] = "72"; }, "disagrees with the tensors");
    vit_case("labels", [](Checkpoint& c) { c.metadata["labels"] = R"(["circle"])"; }, "must be a JSON list of 4 names");
    vit_case("mean", [](Checkpoint& c) { c.metadata["mean"] = "[0.5]"; }, "must be a JSON list of 3 numbers");
    vit_case("layer_scale", [](Checkpoint& c) { c.tensors.emplace_back("blocks.0.ls1.gamma", zeros({96})); },
             "LayerScale is in every block or in none");
    vit_case("qkv_bias", [](Checkpoint& c) { c.erase("blocks.3.attn.qkv.bias"); }, "is missing but");
    expect("ViT of a weights file", error_of([&] { load_vit_model(two_blocks, std::nullopt, budget); }),
           "so not a ViT checkpoint attnscope knows");

    // Settings and views.
    Message budget_error;
    parse_byte_size("3X", &budget_error);
    expect("memory budget unit", budget_error, "unknown unit 'X'");
    parse_byte_size("lots", &budget_error);
    expect("memory budget words", budget_error, "expected a size like");
    parse_byte_size("12K", &budget_error);
    expect("memory budget small", budget_error, "must be at least 1M");
    expect("head fusion", error_of([] { parse_head_fusion("median"); }), "head fusion 'median' is not one of");

    MESSAGE(cases.size() << " errors of crafted inputs checked");
    std::vector<std::string> missing;
    std::size_t coded = 0;
    for (const Case& c : cases) {
        const std::string error = english(c.message);
        CAPTURE(c.name);
        CAPTURE(error);
        CHECK_FALSE(c.message.empty());
        CHECK(error.find(c.expected) != std::string::npos);
        const std::size_t library = c.library.empty() ? std::string::npos : error.find(c.library);
        CHECK((c.library.empty() || library != std::string::npos));
        if (c.message.code != Msg::text) {  // coded: translated from its code, every argument in place
            ++coded;
            const std::string chinese = tr_message_in(Language::Chinese, c.message);
            CAPTURE(chinese);
            for (const std::string& name : template_names(message_template(c.message.code)))
                CHECK(chinese.find("{" + name + "}") == std::string::npos);  // every argument given
            if (!has_message_translation(c.message)) missing.push_back(c.name + " (" + message_name(c.message.code) + ")");
            continue;
        }
        const std::string core_text = library == std::string::npos ? error : error.substr(0, library) + "LIBRARY";
        if (!has_core_translation(core_text)) missing.push_back(c.name + ": \"" + error + "\"");
    }
    MESSAGE(coded << " of them coded messages");
    CHECK(coded == cases.size());  // every error of core is a coded message
    std::string list;
    for (const std::string& m : missing) list += "\n  " + m;
    INFO("add these to app/gui/logic/core_messages.inc as NC_(\"core\", \"English with {} for each argument\") and their Chinese to po/zh_CN.po:" << list);
    CHECK(missing.empty());
}

TEST_CASE("core messages: where a head count came from, as core says it for real files, has a Chinese") {
    const fs::path data = ATTNSCOPE_TEST_DATA;
    auto from = [](const fs::path& file, std::size_t dim, std::size_t depth) {
        const std::optional<HeadCount> h = heads_from_file(TensorSource::open(file.string()), {dim, depth, 4 * dim});
        REQUIRE(h);
        return h->from;
    };
    const std::vector<std::pair<Message, std::string>> said = {
        {from(data / "saved" / "numpy" / "checkpoint.pt", 64, 2), "检查点中的 config.num_heads"},
        {from(data / "saved" / "whole" / "vit.pt", 64, 2), "文件中的 encoder.layers.encoder_layer_0.num_heads"},
        {from(data / "heads" / "hf_folder" / "pytorch_model.bin", 64, 3), "中的 num_attention_heads"},
        {from(data / "saved" / "legacy" / "vit.pth", 768, 12), "torchvision 的 vit_b_16 和 vit_b_32，timm 和 DeiT 的 base ViT（D 768，12 个块）"},
        {Message(Msg::heads_from_metadata), "元数据 num_heads"},
    };
    for (const auto& [message, chinese] : said) {
        CAPTURE(english(message));
        CHECK(message.code != Msg::text);
        CHECK(has_message_translation(message));
        CHECK(tr_message_in(Language::Chinese, message).find(chinese) != std::string::npos);
    }
}
