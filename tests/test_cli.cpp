// The attnscope command line, run as a separate process: exit codes, output, dumps, bad input.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "io.hpp"
#include "run_attnscope.hpp"
#include "trace.hpp"

using namespace attnscope;
using namespace attnscope::testing;
namespace fs = std::filesystem;

namespace {

const fs::path kGolden = fs::path(ATTNSCOPE_TEST_DATA) / "golden";

// A fresh folder per test under the system temp dir.
fs::path scratch(const std::string& name) { return scratch_dir("cli", name, true); }

void write_bytes(const fs::path& p, const std::string& bytes) { std::ofstream(p, std::ios::binary) << bytes; }

}  // namespace

TEST_CASE("trace prints the reference's shapes PyTorch lines and contiguity notes") {
    const ProcessResult r = run_attnscope("trace");
    REQUIRE(r.status == 0);
    CHECK(r.out.find("qkv        [2, 16, 2304]") != std::string::npos);
    CHECK(r.out.find("qkv_split  [2, 16, 3, 8, 96]") != std::string::npos);
    CHECK(r.out.find("qkv_heads  [3, 2, 8, 16, 96]") != std::string::npos);
    CHECK(r.out.find(".permute(2, 0, 3, 1, 4)") != std::string::npos);
    CHECK(r.out.find("scores     [2, 8, 16, 16]") != std::string::npos);
    CHECK(r.out.find("context_t  [2, 16, 8, 96]") != std::string::npos);
    CHECK(r.out.find("merged     [2, 16, 768]") != std::string::npos);
    CHECK(r.out.find("copy: context_t is not contiguous") != std::string::npos);
    CHECK(r.out.find("shapes 17/17 ok") != std::string::npos);
}

TEST_CASE("trace --json has config steps and checks - attn carries row_sum_max_error") {
    const ProcessResult r = run_attnscope("trace --json --batch 1 --tokens 5 --dim 24 --heads 3 --qkv-bias");
    REQUIRE(r.status == 0);
    const auto j = nlohmann::json::parse(r.out);
    CHECK(j["config"]["batch"] == 1);
    CHECK(j["config"]["heads"] == 3);
    CHECK(j["config"]["qkv_bias"] == true);
    REQUIRE(j["steps"].size() == 17);
    CHECK(j["steps"][2]["name"] == "qkv_split");
    CHECK(j["steps"][2]["shape"] == nlohmann::json::array({1, 5, 3, 3, 8}));
    CHECK(j["steps"][3]["code"] == ".permute(2, 0, 3, 1, 4)");
    CHECK(j["steps"][3]["contiguous"] == false);
    const auto& attn = j["steps"][10];
    REQUIRE(attn["name"] == "attn");
    CHECK(attn["row_sum_max_error"].get<double>() < 1e-5);
    CHECK(attn["failing_rows"] == 0);
    CHECK(j["checks"]["ok"] == true);
}

TEST_CASE("run --dump writes every step as .npy and trace.json readable back") {
    const fs::path dir = scratch("dump");
    const ProcessResult r = run_attnscope("run --dump '" + dir.string() + "'");
    REQUIRE(r.status == 0);
    for (const char* step : {"input", "qkv", "qkv_split", "qkv_heads", "q", "k", "v", "k_t", "scores", "scaled", "attn",
                             "attn_drop", "context", "context_t", "merged", "out", "out_drop"})
        CHECK(fs::exists(dir / (std::string(step) + ".npy")));
    CHECK(shape_of(read_npy((dir / "qkv_heads.npy").string())) == Shape{3, 2, 8, 16, 96});
    const auto j = nlohmann::json::parse(read_text(dir / "trace.json"));
    const auto t = nlohmann::json::parse(run_attnscope("trace --json").out);
    CHECK(j["steps"].size() == t["steps"].size());
    CHECK(j["steps"][14]["shape"] == t["steps"][14]["shape"]);
    CHECK(j["config"] == t["config"]);
}

TEST_CASE("run with PyTorch's weights and input reproduces PyTorch's steps (bare and --block names)") {
    const fs::path golden = kGolden / "nobias_b1_n10_c48_h6";
    const std::string input = " --input '" + (golden / "input.npy").string() + "' --heads 6";
    for (const std::string& weights :
         {"--weights '" + (golden / "weights.safetensors").string() + "'",
          "--weights '" + (golden / "checkpoint_blocks.safetensors").string() + "' --block 3"}) {
        CAPTURE(weights);
        const fs::path dir = scratch("golden_run");
        REQUIRE(run_attnscope("run " + weights + input + " --dump '" + dir.string() + "'").status == 0);
        for (const char* step : {"scores", "attn", "merged", "out"}) {
            const Array ours = read_npy((dir / (std::string(step) + ".npy")).string());
            const Array torch = read_npy((golden / (std::string(step) + ".npy")).string());
            REQUIRE(shape_of(ours) == shape_of(torch));
            CHECK(xt::amax(xt::abs(ours - torch))() <= 1e-5f * std::max(1.0f, xt::amax(xt::abs(torch))()));
        }
    }
}

TEST_CASE("bad options exit 2 with one line naming the option") {
    check_usage_error("trace --dim 100", "--dim 100 is not divisible by --heads 8");
    check_usage_error("trace --tokens 10000000", "over the memory budget");
    check_usage_error("trace --tokens 100000000000000000", "--tokens: '100000000000000000' is not a whole number");
    check_usage_error("trace --heads abc", "--heads");
    check_usage_error("trace --tokens -5", "--tokens");
    check_usage_error("trace --batch 0", "--batch must be at least 1");
    check_usage_error("trace --attn-drop 1", "--attn-drop");
    check_usage_error("trace --frobnicate", "frobnicate");
    check_usage_error("run", "--dump");
    check_usage_error("run --block 2 --dump /tmp/x", "--block needs --weights");
    check_usage_error("bench --repeat 0", "--repeat 0");
    check_usage_error("--step nope --screenshot /tmp/x.png", "--step nope: no such step");
    check_usage_error("--size 10x10 --screenshot /tmp/x.png", "--size 10x10");
    CHECK(run_attnscope("--help").status == 0);
}

TEST_CASE("bad files exit 2 with one line naming the file and leave no trace.json") {
    const fs::path dir = scratch("bad_files");
    const fs::path dump = dir / "dump";
    const std::string to_dump = " --dump '" + dump.string() + "'";
    const fs::path golden = kGolden / "bias_b2_n16_c64_h4";

    check_usage_error("run --input '" + (dir / "missing.npy").string() + "'" + to_dump, "missing.npy: ");
    write_bytes(dir / "garbage.npy", "this is not a numpy file at all");
    check_usage_error("run --input '" + (dir / "garbage.npy").string() + "'" + to_dump, "garbage.npy: ");
    write_npy((dir / "x2d.npy").string(), xt::zeros<float>({4, 8}));
    check_usage_error("run --input '" + (dir / "x2d.npy").string() + "'" + to_dump, "expected 3-D [B, N, C]");
    Array nan_input = xt::zeros<float>({1, 4, 8});
    nan_input(0, 2, 5) = NAN;
    write_npy((dir / "nan.npy").string(), nan_input);
    check_usage_error("run --input '" + (dir / "nan.npy").string() + "'" + to_dump, "nan.npy contains 1 NaN/Inf value (first at [0, 2, 5])");
    // Weights for dim 64 given an input of dim 120.
    write_npy((dir / "x120.npy").string(), xt::zeros<float>({1, 4, 120}));
    check_usage_error("run --weights '" + (golden / "weights.safetensors").string() + "' --input '" +
                          (dir / "x120.npy").string() + "'" + to_dump,
                      "weights.safetensors: qkv.weight has shape [192, 64], expected [3*C, C] = [360, 120] for dim 120");
    write_bytes(dir / "broken.safetensors", std::string("\xff\xff\xff\xff\xff\xff\xff\x7f{}", 10));
    check_usage_error("run --weights '" + (dir / "broken.safetensors").string() + "'" + to_dump, "broken.safetensors: ");
    check_usage_error("run --input '" + (golden / "input.npy").string() + "' --dim 32" + to_dump,
                      "--dim 32 disagrees with");
    CHECK_FALSE(fs::exists(dump / "trace.json"));
    write_bytes(dir / "a_file", "x");
    check_usage_error("run --dump '" + (dir / "a_file").string() + "'", "a_file: cannot create the dump folder");
}

TEST_CASE("bench --json prints the median time of the recorded forward") {
    const ProcessResult r = run_attnscope("bench --repeat 3 --json --batch 1 --tokens 8 --dim 32 --heads 4");
    REQUIRE(r.status == 0);
    const auto j = nlohmann::json::parse(r.out);
    CHECK(j["median_ms"].get<double>() > 0.0);
    CHECK(j["repeat"] == 3);
    CHECK(j["config"]["tokens"] == 8);
    // where the time goes: one entry per recorded step plus the checks, in milliseconds
    const auto& steps = j["step_ms"];
    CHECK(steps.size() == attention_step_names().size() + 1);
    for (const auto& name : attention_step_names()) CHECK(steps.contains(name));
    CHECK(steps["qkv"].get<double>() >= 0.0);
    CHECK(steps.contains("checks"));
}
