// --causal, --valid-tokens, --flash, --tile, --kv-cache, --window, --shift, --patch-merge on the command line.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "io.hpp"
#include "run_attnscope.hpp"

using namespace attnscope;
using namespace attnscope::testing;
namespace fs = std::filesystem;

namespace {

fs::path scratch(const std::string& name) { return scratch_dir("beyond", name, true); }

}  // namespace

TEST_CASE("cli beyond: --causal --valid-tokens add the masked step and keep the other names") {
    const ProcessResult r = run_attnscope("trace --causal --valid-tokens 12,16");
    REQUIRE(r.status == 0);
    CHECK(r.out.find("masked     [2, 8, 16, 16]") != std::string::npos);
    CHECK(r.out.find("shapes 18/18 ok") != std::string::npos);
    CHECK(r.out.find("attn rows: max |sum - 1| =") != std::string::npos);
    CHECK(r.out.find("of 224 over") != std::string::npos);  // (12 + 16) valid rows x 8 heads
    CHECK(r.out.find("mask: causal, valid 12,16") != std::string::npos);
}

TEST_CASE("cli beyond: run --flash --tile 16x16 --causal dumps the steps that still exist") {
    const fs::path dir = scratch("flash");
    const ProcessResult r =
        run_attnscope("run --flash --tile 16x16 --causal --tokens 40 --dim 64 --heads 2 --dump '" + dir.string() + "'");
    CAPTURE(r.err);
    REQUIRE(r.status == 0);
    for (const char* step : {"input", "qkv", "q", "k", "v", "context", "context_t", "merged", "out"})
        CHECK(fs::exists(dir / (std::string(step) + ".npy")));
    for (const char* step : {"k_t", "scores", "scaled", "attn", "attn_drop"}) CHECK_FALSE(fs::exists(dir / (std::string(step) + ".npy")));
    CHECK(r.out.find("was never stored") != std::string::npos);
    const auto j = nlohmann::json::parse(read_text(dir / "trace.json"));
    CHECK(j["config"]["path"] == "flash");
    CHECK(j["beyond"]["flash"]["tile"] == nlohmann::json::array({16, 16}));
    CHECK(j["beyond"]["flash"]["tiles"].size() == 9);  // ceil(40 / 16)^2 tiles of batch item 0, head 0
    // the same dump names and values as the standard causal path
    const fs::path std_dir = scratch("flash_std");
    REQUIRE(run_attnscope("run --causal --tokens 40 --dim 64 --heads 2 --dump '" + std_dir.string() + "'").status == 0);
    const Array a = read_npy((dir / "out.npy").string()), b = read_npy((std_dir / "out.npy").string());
    REQUIRE(shape_of(a) == shape_of(b));
    double worst = 0;
    for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, double(std::fabs(a.data()[i] - b.data()[i])));
    CHECK(worst < 1e-5);
}

TEST_CASE("cli beyond: run --flash dumps the final m and l of every row, equal to PyTorch's softmax max and sum") {
    // tools/make_tile_golden.py: timm's attention, causal and padded, m = max_j s_ij and l = sum_j exp(s_ij - m_i)
    const fs::path golden = fs::path(ATTNSCOPE_TEST_DATA) / "tiles" / "causal_padding_b2_n37_c16_h2";
    const fs::path dir = scratch("flash_ml");
    const ProcessResult r = run_attnscope("run --flash --tile 4x8 --causal --valid-tokens 30,37 --heads 2 --input '" +
                                          (golden / "input.npy").string() + "' --weights '" +
                                          (golden / "weights.safetensors").string() + "' --dump '" + dir.string() + "'");
    CAPTURE(r.err);
    REQUIRE(r.status == 0);
    CHECK(r.out.find("flash_m.npy, flash_l.npy") != std::string::npos);
    for (const auto& [ours, torch] : {std::pair{"flash_m.npy", "row_max.npy"}, std::pair{"flash_l.npy", "row_sum.npy"}}) {
        CAPTURE(ours);
        const Array a = read_npy((dir / ours).string()), b = read_npy((golden / torch).string());
        REQUIRE(shape_of(a) == Shape{2, 2, 37});
        REQUIRE(shape_of(b) == shape_of(a));
        double worst = 0;  // relative to max(1, |torch|)
        for (std::size_t i = 0; i < a.size(); ++i)
            worst = std::max(worst, std::fabs(double(a.data()[i]) - b.data()[i]) / std::max(1.0, std::fabs(double(b.data()[i]))));
        CHECK(worst < 1e-5);
    }
    // The standard path has no m and l to dump.
    const fs::path std_dir = scratch("flash_ml_std");
    REQUIRE(run_attnscope("run --tokens 8 --dim 16 --heads 2 --dump '" + std_dir.string() + "'").status == 0);
    CHECK_FALSE(fs::exists(std_dir / "flash_m.npy"));
}

TEST_CASE("cli beyond: run --kv-cache writes merged and out and per-token records") {
    const fs::path dir = scratch("kv");
    const ProcessResult r = run_attnscope("run --kv-cache --tokens 12 --dim 32 --heads 4 --dump '" + dir.string() + "'");
    CAPTURE(r.err);
    REQUIRE(r.status == 0);
    CHECK(shape_of(read_npy((dir / "merged.npy").string())) == Shape{2, 12, 32});
    CHECK(shape_of(read_npy((dir / "out.npy").string())) == Shape{2, 12, 32});
    CHECK(r.out.find("recomputing every prefix") != std::string::npos);
    const auto j = nlohmann::json::parse(read_text(dir / "trace.json"));
    CHECK(j["config"]["causal"] == true);
    REQUIRE(j["beyond"]["kv_cache"]["tokens"].size() == 12);
    CHECK(j["beyond"]["kv_cache"]["tokens"][11]["cache_shape"] == nlohmann::json::array({2, 4, 12, 8}));
}

TEST_CASE("cli beyond: run --window 4 --shift dumps the partition steps") {
    const fs::path dir = scratch("win");
    const ProcessResult r = run_attnscope("run --window 4 --shift --tokens 64 --dim 32 --heads 2 --dump '" + dir.string() + "'");
    CAPTURE(r.err);
    REQUIRE(r.status == 0);
    CHECK(shape_of(read_npy((dir / "win_perm.npy").string())) == Shape{2, 2, 2, 4, 4, 32});
    CHECK(shape_of(read_npy((dir / "attn.npy").string())) == Shape{8, 2, 16, 16});
    CHECK(shape_of(read_npy((dir / "tokens_out.npy").string())) == Shape{2, 64, 32});
}

TEST_CASE("cli beyond: run --window 4 --shift --patch-merge dumps the merged grid and the second stage") {
    const fs::path dir = scratch("merge");
    const ProcessResult r = run_attnscope(
        "run --window 4 --shift --patch-merge --tokens 64 --dim 16 --heads 2 --dump '" + dir.string() + "'");
    CAPTURE(r.err);
    REQUIRE(r.status == 0);
    CHECK(shape_of(read_npy((dir / "patch_merge_x3.npy").string())) == Shape{2, 4, 4, 16});
    CHECK(shape_of(read_npy((dir / "patch_merge_cat.npy").string())) == Shape{2, 4, 4, 64});
    CHECK(shape_of(read_npy((dir / "patch_merge_reduction.npy").string())) == Shape{2, 16, 32});
    CHECK(shape_of(read_npy((dir / "stage2_attn.npy").string())) == Shape{2, 4, 16, 16});  // 4 heads, one window
    CHECK(shape_of(read_npy((dir / "stage2_tokens_out.npy").string())) == Shape{2, 16, 32});
    const ProcessResult help = run_attnscope("trace --help");
    CHECK(help.out.find("--patch-merge") != std::string::npos);
}

TEST_CASE("cli beyond: bad options end in one line naming the option") {
    check_usage_error("trace --flash --tile 16by16", "--tile");
    check_usage_error("trace --flash --tile 0x16", "--tile");
    check_usage_error("trace --tile 8x8", "--tile BRxBC needs --flash");
    check_usage_error("trace --valid-tokens 12,16,3", "--valid-tokens 12,16,3 has 3 values but --batch is 2");
    check_usage_error("trace --valid-tokens 12,x", "--valid-tokens");
    check_usage_error("trace --flash --kv-cache", "give one of them");
    check_usage_error("trace --window 4 --tokens 197", "leave out the class token");
    check_usage_error("trace --shift", "--shift needs --window M");
    check_usage_error("trace --patch-merge", "--patch-merge needs --window M");
    check_usage_error("trace --window 3 --tokens 81 --patch-merge", "the grid side must be even; N = 81 = 9*9");
    check_usage_error("trace --window 4 --tokens 144 --patch-merge",
                      "merged grid side 6 (half of 12) is not divisible");
    check_usage_error("trace --flash --training --attn-drop 0.1", "--flash runs in eval mode only");
}
