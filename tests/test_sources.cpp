// Tests of core/files/tensor_source: listing and lazy loading of .npy, .npz (stored and deflated),
// .safetensors and folders, and every kind of malformed file.
//
// Truth from outside: tests/data/activations/ is written by tools/make_activation_fixtures.py with
// numpy and torch (np.savez stores members, np.savez_compressed deflates them).
#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include <sys/resource.h>
#include <unistd.h>

#include "io.hpp"
#include "run_attnscope.hpp"
#include "open_error.hpp"
#include "tensor_source.hpp"

using namespace attnscope;
using attnscope::testing::open_error;
using attnscope::testing::scratch_dir;
namespace fs = std::filesystem;

namespace {

const std::string kData = std::string(ATTNSCOPE_TEST_DATA) + "/activations/";

std::vector<std::string> names_of(const TensorSource& s) {
    std::vector<std::string> names;
    for (const auto& t : s.tensors()) names.push_back(t.name);
    return names;
}

fs::path scratch(const std::string& name) { return scratch_dir("sources", name, true); }

}  // namespace

TEST_CASE("npz: stored members (np.savez) list in order and load as the safetensors export") {
    const TensorSource maps = TensorSource::open(kData + "attn_maps.npz");
    CHECK(maps.format() == "npz");
    CHECK(names_of(maps) == std::vector<std::string>{"blocks.0.attn.attn", "blocks.1.attn.attn", "columns_softmax"});
    CHECK(maps.tensors()[0].dtype == "F32");
    CHECK(maps.tensors()[0].shape == Shape{2, 4, 5, 5});
    const TensorSource exported = TensorSource::open(kData + "timm_export.safetensors");
    CHECK(maps.load("blocks.1.attn.attn") == exported.load("blocks.1.attn.attn"));
}

TEST_CASE("npz: deflated members (np.savez_compressed) equal the stored ones - folders and .npy too") {
    const TensorSource stored = TensorSource::open(kData + "bug_split.npz");
    const TensorSource deflated = TensorSource::open(kData + "bug_no_scale.npz");
    const TensorSource folder = TensorSource::open(kData + "bug_heads_reshape");
    CHECK(folder.format() == "folder");
    CHECK(names_of(folder) == std::vector<std::string>{"attn", "input", "k", "out", "q", "v"});
    const Array x = stored.load("x");
    CHECK(shape_of(x) == Shape{2, 5, 24});
    CHECK(deflated.load("x") == x);
    CHECK(folder.load("input") == x);
    const TensorSource single = TensorSource::open(kData + "bug_heads_reshape/q.npy");
    CHECK(single.format() == "npy");
    CHECK(names_of(single) == std::vector<std::string>{"q"});
    CHECK(single.load("q") == folder.load("q"));
}

TEST_CASE("load: unknown names and threads") {
    const TensorSource s = TensorSource::open(kData + "bug_no_scale.npz");
    CHECK_THROWS_WITH_AS(s.load("nope"), doctest::Contains("no tensor named 'nope'"), FileError);
    std::vector<Array> results(4);
    std::vector<std::thread> threads;
    for (std::size_t i = 0; i < results.size(); ++i) threads.emplace_back([&, i] { results[i] = s.load("attn"); });
    for (auto& t : threads) t.join();
    for (const auto& r : results) CHECK(r == results[0]);
}

namespace {

// What this process has read so far: bytes through read() and friends (/proc/self/io rchar) and
// page faults (mapped pages touched). Listing a file must move neither by anything like its size.
struct ReadCounters {
    std::uintmax_t bytes = 0;
    long faults = 0;
};
ReadCounters read_counters() {
    ReadCounters c;
    std::ifstream io("/proc/self/io");
    for (std::string key; io >> key;)
        if (key == "rchar:") io >> c.bytes;
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    c.faults = usage.ru_minflt + usage.ru_majflt;
    return c;
}

}  // namespace

TEST_CASE("a 1 GiB .npy and .safetensors list at once without reading their data") {
    const fs::path dir = scratch("large");
    const std::uintmax_t gib = std::uintmax_t(1) << 30;  // [16384, 16384] float32
    std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (16384, 16384), }";
    dict.append((64 - (10 + dict.size() + 1) % 64) % 64, ' ');
    dict += '\n';
    const std::string npy = std::string("\x93NUMPY\x01\x00", 8) + char(dict.size()) + char(dict.size() >> 8) + dict;
    std::string json = R"({"w":{"dtype":"F32","shape":[16384,16384],"data_offsets":[0,1073741824]}})";
    json.append((8 - json.size() % 8) % 8, ' ');
    std::string st(8, '\0');
    for (int i = 0; i < 8; ++i) st[i] = static_cast<char>((json.size() >> (8 * i)) & 0xff);
    st += json;
    for (const auto& [name, header] : {std::pair{"big.npy", npy}, std::pair{"big.safetensors", st}}) {
        CAPTURE(name);
        const std::string path = (dir / name).string();
        std::ofstream(path, std::ios::binary) << header;
        fs::resize_file(path, header.size() + gib);  // sparse: the data is never written
        const ReadCounters before = read_counters();
        const TensorSource source = TensorSource::open(path);
        const ReadCounters after = read_counters();
        REQUIRE(source.tensors().size() == 1);
        CHECK(source.tensors()[0].shape == Shape{16384, 16384});
        CHECK(source.tensors()[0].problem.empty());
        MESSAGE(std::string(name) << ": listing read " << after.bytes - before.bytes << " bytes, " << after.faults - before.faults
                     << " page faults");
        CHECK(after.bytes - before.bytes < (std::uintmax_t(1) << 20));  // the header, not the 1 GiB
        CHECK(after.faults - before.faults < 4096);                     // 16 MiB of 4 KiB pages at most
    }
    fs::remove_all(dir);
}

TEST_CASE("malformed files: one-line errors naming the file and what is wrong") {
    const std::string bad = kData + "bad/";
    CHECK(open_error(bad + "truncated.npz").find("truncated.npz: not a readable .npz") != std::string::npos);
    CHECK(open_error(bad + "wrong_magic.npz").find("starts with the bytes PK") != std::string::npos);
    CHECK(open_error(bad + "wrong_magic.safetensors").find("header length") != std::string::npos);
    CHECK(open_error(bad + "axes33.npy").find("has 33 axes; attnscope reads at most 32") != std::string::npos);
    CHECK(open_error(kData + "nothing_here.npz").find("No such file") != std::string::npos);
    const fs::path empty = scratch("empty");
    CHECK(open_error(empty.string()).find("holds no .npy files") != std::string::npos);
    std::ofstream(empty / "x.txt") << "hello";
    CHECK(open_error((empty / "x.txt").string()).find("unknown file type") != std::string::npos);
    fs::remove_all(empty);
}

TEST_CASE("malformed members are listed with their problem - load refuses them") {
    const std::string bad = kData + "bad/";
    auto problem = [](const std::string& path, const std::string& name) {
        const TensorSource s = TensorSource::open(path);
        REQUIRE(s.find(name));
        CHECK_THROWS_AS(s.load(name), FileError);
        return english(s.find(name)->problem);
    };
    CHECK(problem(bad + "lying_header.npz", "attn").find("holds 100 bytes of data but its header") !=
          std::string::npos);
    CHECK(problem(bad + "bomb_declared.npz", "attn").find("declares 1.0 TiB uncompressed, over the memory budget") !=
          std::string::npos);
    CHECK(problem(bad + "int64.npz", "labels").find("'<i8' (signed integer) is not supported") != std::string::npos);
    CHECK(TensorSource::open(bad + "int64.npz").find("attn")->problem.empty());
    // Declares 144 bytes and passes the listing; inflating gives 4 MB.
    const TensorSource bomb = TensorSource::open(bad + "bomb_inflates.npz");
    CHECK(bomb.find("attn")->problem.empty());
    CHECK_THROWS_WITH_AS(bomb.load("attn"), doctest::Contains("inflates past its declared size of 144 bytes"),
                         FileError);
}

TEST_CASE("0-d and NaN-filled tensors are listed as they are") {
    const TensorSource scalar = TensorSource::open(kData + "bad/scalar.npy");
    CHECK(scalar.tensors()[0].shape.empty());
    CHECK(scalar.load("scalar").size() == 1);
    const Array nan = TensorSource::open(kData + "bad/nan_attn.npz").load("attn");
    CHECK(std::isnan(nan(0, 0, 0, 0)));
}
