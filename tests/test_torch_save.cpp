// Tests of core/files/torch_save and core/files/pickle: torch.save files listed and loaded through
// TensorSource, and every kind of hostile or foreign file refused with one line.
//
// Truth from outside: tests/data/torch/ is written by tools/make_torch_fixtures.py with torch.save
// itself; expected.npz holds torch's own float32 conversion of every float tensor.
#include <doctest/doctest.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "io.hpp"
#include "pickle.hpp"
#include "run_attnscope.hpp"
#include "open_error.hpp"
#include "tensor_source.hpp"

using namespace attnscope;
using attnscope::testing::open_error;
using namespace std::string_literals;
namespace fs = std::filesystem;

namespace {

const std::string kData = std::string(ATTNSCOPE_TEST_DATA) + "/torch/";

nlohmann::json expected_listing() {
    std::ifstream in(kData + "expected.json");
    return nlohmann::json::parse(in);
}

bool same_bits(const Array& a, const Array& b) {
    return shape_of(a) == shape_of(b) && (a.size() == 0 || std::memcmp(a.data(), b.data(), a.size() * 4) == 0);
}

std::string pickle_error(const std::string& bytes) {
    try {
        read_pickle(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size(), "p.pkl");
    } catch (const FileError& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST_CASE("torch.save: every readable fixture lists the names, dtypes and shapes torch gave, and loads torch's values bit for bit") {
    const nlohmann::json listing = expected_listing();
    const TensorSource expected = TensorSource::open(kData + "expected.npz");
    std::size_t compared = 0;
    for (const auto& [file, entries] : listing.items()) {
        CAPTURE(file);
        const std::string path = kData + (file.rfind("crafted", 0) == 0 ? "bad/" : "") + file;
        const TensorSource source = TensorSource::open(path);
        CHECK(source.format() == "torch.save");
        REQUIRE(source.tensors().size() == entries.size());
        for (std::size_t i = 0; i < entries.size(); ++i) {
            const TensorInfo& info = source.tensors()[i];
            const auto& e = entries[i];
            CAPTURE(info.name);
            CHECK(info.name == e["name"].get<std::string>());
            CHECK(info.dtype == e["dtype"].get<std::string>());
            CHECK(info.shape == e["shape"].get<Shape>());
            const std::string key = file + "/" + info.name;
            if (expected.find(key)) {
                CHECK(info.problem.empty());
                CHECK(same_bits(source.load(info.name), expected.load(key)));
                ++compared;
            } else {
                CHECK(info.listed_only);  // integers, bools, and values that are not tensors
                CHECK_THROWS_AS(source.load(info.name), FileError);
            }
        }
    }
    CHECK(compared == expected.tensors().size());
}

TEST_CASE("torch.save: views of one storage (unbind, transpose, a row) keep their own offsets and strides") {
    const TensorSource acts = TensorSource::open(kData + "acts.pt");
    const TensorSource expected = TensorSource::open(kData + "expected.npz");
    for (const char* name : {"q", "k", "v", "k_t", "row"}) {
        CAPTURE(name);
        CHECK(same_bits(acts.load(name), expected.load(std::string("acts.pt/") + name)));
    }
    // k_t is k with its last two axes swapped: the strided gather and the contiguous read agree.
    const Array k = acts.load("k"), k_t = acts.load("k_t");
    CHECK(k_t(1, 0, 3, 2) == k(1, 0, 2, 3));
}

TEST_CASE("torch.save: values that are not tensors are listed with what they are, never loaded") {
    const TensorSource ck = TensorSource::open(kData + "checkpoint.pth");
    const TensorInfo* epoch = ck.find("epoch");
    REQUIRE(epoch);
    CHECK(epoch->listed_only);
    CHECK(epoch->dtype == "int");
    CHECK(english(epoch->problem) == kData + "checkpoint.pth: 'epoch' is an int (3), not a tensor");
    CHECK(english(ck.find("note")->problem).find("is a str ('after one step')") != std::string::npos);
    CHECK(english(ck.find("optimizer.param_groups.0.betas.1")->problem).find("a float (0.999)") != std::string::npos);
    CHECK_THROWS_WITH_AS(ck.load("epoch"), doctest::Contains("not a tensor"), FileError);
    const TensorSource acts = TensorSource::open(kData + "acts.pt");
    CHECK_THROWS_WITH_AS(acts.load("ids"), doctest::Contains("tensor 'ids' has dtype I64"), FileError);
}

TEST_CASE("torch.save: foreign and hostile files are refused with one line that says what they are") {
    struct Case {
        const char* file;
        const char* message;
    };
    for (const Case& c : {
             Case{"bad/scripted.pt", "a TorchScript archive (torch.jit.save)"},
             Case{"bad/plain.pkl", "a plain Python pickle, not a torch.save archive"},
             Case{"bad/system.pt", "pickle global 'posix.system' can run code; attnscope never runs code from a file"},
             Case{"bad/eval.pt", "pickle global '__builtin__.eval' can run code"},
             Case{"bad/truncated.pt", "not a readable torch.save file (zip archive)"},
             Case{"bad/missing_storage.pt", "tensor 'a': its storage record 'missing_storage/data/7' is not in the archive"},
             Case{"bad/past_storage.pt", "tensor 'a' [2, 2] at storage offset 4 reaches element 7 of its storage '0', which holds 6"},
             Case{"bad/overflow_shape.pt", "the size overflows"},
             Case{"bad/short_record.pt", "should hold 6 elements of F32 but its record has 20 bytes"},
             Case{"bad/wrong_rank.pt", "a tensor has 2 sizes but 1 strides"},
         }) {
        CAPTURE(c.file);
        const std::string error = open_error(kData + c.file);
        CHECK(error.find(kData + c.file + ": ") == 0);
        CHECK(error.find(c.message) != std::string::npos);
        CHECK(error.find('\n') == std::string::npos);
    }
    CHECK_FALSE(fs::exists("/tmp/attnscope_pwned"));
    // A shape of 2^60 elements (stride 0, as an expanded tensor has) lists, but is never allocated.
    const TensorSource huge = TensorSource::open(kData + "bad/huge_shape.pt");
    CHECK_THROWS_WITH_AS(huge.load("a"), doctest::Contains("over the memory budget"), FileError);
}

TEST_CASE("torch.save on the command line: inspect lists a checkpoint (exit 0); hostile pickles exit 2 with one line") {
    using attnscope::testing::run_attnscope;
    const auto ok = run_attnscope("inspect " + kData + "checkpoint.pth");
    CHECK(ok.status == 0);
    CHECK(ok.out.find("epoch") != std::string::npos);
    CHECK(ok.out.find("not loaded: 'epoch' is an int (3), not a tensor") != std::string::npos);
    for (const char* file : {"bad/system.pt", "bad/eval.pt", "bad/past_storage.pt", "bad/truncated.pt"}) {
        CAPTURE(file);
        const auto r = run_attnscope("inspect " + kData + file);
        CHECK(r.status == 2);
        CHECK(r.err.rfind("attnscope: " + kData + file + ": ", 0) == 0);
        CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    }
    CHECK(run_attnscope("inspect " + kData + "bad/huge_shape.pt").status == 2);
    CHECK_FALSE(fs::exists("/tmp/attnscope_pwned"));
}

TEST_CASE("pickle: malformed streams fail with the byte and the reason, in bounded time and memory") {
    // STOP with nothing on the stack; an unknown opcode; a memo entry never stored.
    CHECK(pickle_error("\x80\x02.").find("ends with 0 values on its stack") != std::string::npos);
    CHECK(pickle_error(std::string("\x80\x02i", 3)).find("opcode 0x69 is not one torch.save writes") != std::string::npos);
    CHECK(pickle_error("\x80\x02h\x05.").find("memo entry 5 was never stored") != std::string::npos);
    // A string that claims 4 GB: refused from the length alone.
    CHECK(pickle_error(std::string("\x80\x02X\xff\xff\xff\xff", 7)).find("needs 4294967295 more bytes") != std::string::npos);
    // Protocol 5 is not what torch.save writes; NEWOBJ makes records of classes only.
    CHECK(pickle_error("\x80\x05N.").find("pickle protocol 5") != std::string::npos);
    CHECK(pickle_error(std::string("\x80\x02", 2) + "ccollections\nOrderedDict\n)\x81.").find("NEWOBJ makes a type collections.OrderedDict") != std::string::npos);
    // REDUCE on an accepted global that is not a function.
    CHECK(pickle_error("\x80\x02" "ctorch\nfloat32\n.").empty());  // a dtype as a value is fine...
    CHECK(pickle_error("\x80\x02" "ctorch\nfloat32\n)R.").find("not a function attnscope knows") != std::string::npos);  // ...not as a call
    // A list appended to itself is a value like any other.
    CHECK(pickle_error("\x80\x02]q\x00h\x00" "a."s).empty());
    // POP below a MARK, a MARK never closed.
    CHECK(pickle_error("\x80\x02(0.").find("pops from an empty stack") != std::string::npos);
    CHECK(pickle_error("\x80\x02(N.").find("values on its stack") != std::string::npos);
}

TEST_CASE("pickle: sharing that would list 2^40 names, and a list inside itself, are listed in bounded time") {
    // L0 = []; L(i+1) = [L(i), L(i)] 40 times, the result saved as the whole object.
    const fs::path dir = fs::temp_directory_path() / ("attnscope_pickle_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    auto write_archive = [&](const std::string& name, const std::string& pickle) {
        // A stored zip with one member <stem>/data.pkl, written by hand (local header, central directory, end record).
        const std::string member = fs::path(name).stem().string() + "/data.pkl";
        auto u16 = [](unsigned v) { return std::string{static_cast<char>(v & 0xff), static_cast<char>(v >> 8)}; };
        auto u32 = [&](unsigned v) { return u16(v & 0xffff) + u16(v >> 16); };
        unsigned crc = 0xffffffffu;
        for (unsigned char ch : pickle) {
            crc ^= ch;
            for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1)));
        }
        crc ^= 0xffffffffu;
        const std::string sizes = u32(crc) + u32(pickle.size()) + u32(pickle.size());
        const std::string local = "PK\x03\x04" + u16(20) + u16(0) + u16(0) + u16(0) + u16(0) + sizes + u16(member.size()) + u16(0) + member;
        const std::string central = "PK\x01\x02" + u16(20) + u16(20) + u16(0) + u16(0) + u16(0) + u16(0) + sizes +
                                    u16(member.size()) + u16(0) + u16(0) + u16(0) + u16(0) + u32(0) + u32(0) + member;
        const std::string end = "PK\x05\x06" + u16(0) + u16(0) + u16(1) + u16(1) + u32(central.size()) +
                                u32(local.size() + pickle.size()) + u16(0);
        std::ofstream(dir / name, std::ios::binary) << local << pickle << central << end;
        return (dir / name).string();
    };
    std::string doubling = "\x80\x02]";
    for (int i = 0; i < 40; ++i) doubling += "\x32\x86";  // DUP, TUPLE2: (L, L)
    doubling += ".";
    const std::string error = open_error(write_archive("doubling.pt", doubling));
    CHECK(error.find("refer to each other more than") != std::string::npos);
    // [x, [x, ...]]: the list holds itself and a value; the value is listed once.
    const TensorSource self = TensorSource::open(write_archive("self.pt", "\x80\x02]q\x00h\x00" "a(K\x07" "e."s));
    REQUIRE(self.tensors().size() == 1);
    CHECK(self.tensors()[0].name == "1");
    CHECK(english(self.tensors()[0].problem).find("is an int (7)") != std::string::npos);
    fs::remove_all(dir);
}

TEST_CASE("torch.save: several threads load from one file at once and get torch's values") {
    const TensorSource acts = TensorSource::open(kData + "acts.pt");
    const TensorSource expected = TensorSource::open(kData + "expected.npz");
    std::vector<std::string> names;
    for (const TensorInfo& t : acts.tensors())
        if (t.problem.empty()) names.push_back(t.name);
    std::atomic<int> wrong{0};
    std::vector<std::thread> threads;
    for (int k = 0; k < 4; ++k)
        threads.emplace_back([&, k] {
            for (int round = 0; round < 25; ++round)
                for (std::size_t i = 0; i < names.size(); ++i) {
                    const std::string& name = names[(i + k) % names.size()];
                    if (!same_bits(acts.load(name), expected.load("acts.pt/" + name))) ++wrong;
                }
        });
    for (std::thread& t : threads) t.join();
    CHECK(wrong == 0);
}
