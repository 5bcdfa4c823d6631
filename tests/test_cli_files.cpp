// `attnscope inspect` and `attnscope check` run as a separate process: output, exit codes
// (0 read / all match, 3 divergence, 2 unreadable) and one-line errors for malformed files.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "run_attnscope.hpp"

using json = nlohmann::json;
namespace fs = std::filesystem;
using namespace attnscope::testing;

namespace {

const std::string kData = std::string(ATTNSCOPE_TEST_DATA) + "/activations/";

// Runs attnscope in the fixtures folder, so that paths in the output are short.
ProcessResult run_in_fixtures(const std::string& args) { return run_attnscope(args, kData); }

std::string last_line(const std::string& text) {
    const std::size_t end = text.find_last_not_of('\n');
    const std::size_t start = text.find_last_of('\n', end);
    return text.substr(start == std::string::npos ? 0 : start + 1,
                       end - (start == std::string::npos ? 0 : start + 1) + 1);
}

// Exit 2, exactly one line on stderr, naming the file and containing `phrase`.
void check_unreadable(const std::string& args, const std::string& file, const std::string& phrase) {
    CAPTURE(args);
    const ProcessResult r = run_in_fixtures(args);
    CAPTURE(r.err);
    CHECK(r.status == 2);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK(r.err.rfind("attnscope: " + file, 0) == 0);
    CHECK(r.err.find(phrase) != std::string::npos);
}

}  // namespace

TEST_CASE("check: each buggy implementation ends in its first divergence, exit 3") {
    std::ifstream in(kData + "expected.json");
    const json expected = json::parse(in);
    for (const auto& [name, e] : expected.items()) {
        std::string options;
        for (const auto& o : e["options"]) options += " " + o.get<std::string>();
        const ProcessResult r = run_in_fixtures("check " + name + options);
        CAPTURE(name);
        CAPTURE(r.out);
        CAPTURE(r.err);
        CHECK(r.status == 3);
        const std::string last = last_line(r.out);
        CHECK(last.rfind("first divergence: " + e["first_divergence"].get<std::string>() + " \xe2\x80\x94 ", 0) == 0);
        CHECK(last.find(e["phrase"].get<std::string>()) != std::string::npos);
    }
}

TEST_CASE("check: hook exports match every step, exit 0 - one line per step present, in pipeline order") {
    const ProcessResult r = run_in_fixtures("check timm_export.safetensors --block 1");
    CAPTURE(r.err);
    REQUIRE(r.status == 0);
    CHECK(last_line(r.out) == "all steps match");
    const std::vector<std::string> order = {"input", "qkv", "q", "k", "v", "attn", "merged", "out"};
    std::size_t at = 0;
    for (const auto& step : order) {
        const std::size_t line = r.out.find("\n" + step + " ", at);
        CHECK(line != std::string::npos);
        at = line + 1;
    }
    CHECK(r.out.find("blocks.1.attn.attn") != std::string::npos);
    CHECK(r.out.find("ok (max error") != std::string::npos);
    const ProcessResult hf = run_in_fixtures("check hf_export.safetensors --block 0 --heads 4");
    CHECK(hf.status == 0);
    CHECK(hf.out.find("Hugging Face names, block 0") != std::string::npos);
}

TEST_CASE("check: missing choices and bad inputs exit 2 with one line") {
    check_unreadable("check timm_export.safetensors", "timm_export.safetensors",
                     "holds the steps of blocks 0, 1; choose one with --block I");
    check_unreadable("check bug_heads_reshape --weights timm_model.safetensors", "timm_model.safetensors",
                     "choose one with --block I");
    check_unreadable("check bug_heads_reshape", "bug_heads_reshape", "no attention weights");
    check_unreadable("check attn_maps.npz --block 0 --weights timm_model.safetensors", "attn_maps.npz",
                     "no input x [B, N, C]");
    check_unreadable("check bug_no_scale.npz --input bad/nan_input.npy", "bad/nan_input.npy",
                     "the input holds 240 NaN and 0 Inf values");
    check_unreadable("check bug_no_scale.npz --input bad/scalar.npy", "bad/scalar.npy",
                     "the input has shape [], expected [B, N, C]");
    check_unreadable("check bad/scalar_attn.npz", "bad/scalar_attn.npz", "'attn' is a 0-d scalar");
    check_unreadable("check bug_merge.safetensors --heads 5", "--dim 24 is not divisible by --heads 5", "--heads 5");
    check_unreadable("check bad/bomb_inflates.npz", "bad/bomb_inflates.npz", "inflates past its declared size");
}

TEST_CASE("inspect --json: every tensor with dtype, shape, role - attention maps carry the row-sum check") {
    const ProcessResult r = run_in_fixtures("inspect attn_maps.npz --json");
    REQUIRE(r.status == 0);
    const json j = json::parse(r.out);
    REQUIRE(j["tensors"].size() == 3);
    const json& good = j["tensors"][0];
    CHECK(good["name"] == "blocks.0.attn.attn");
    CHECK(good["dtype"] == "F32");
    CHECK(good["shape"] == json::array({2, 4, 5, 5}));
    CHECK(good["role"] == "attn");
    CHECK(good["block"] == 0);
    CHECK(good["row_sum_max_error"].get<double>() < 1e-5);
    CHECK(good["failing_rows"] == 0);
    const json& columns = j["tensors"][2];
    CHECK(columns["role"].is_null());
    CHECK(columns["failing_rows"] == 40);
    CHECK(columns["row_sum_max_error"].get<double>() > 0.1);
    const json model = json::parse(run_in_fixtures("inspect hf_model.safetensors --json").out);
    for (const auto& t : model["tensors"]) {
        CHECK_FALSE(t.contains("row_sum_max_error"));  // square weights are not attention maps
        if (t["name"] == "vit.encoder.layer.1.attention.attention.key.bias") {
            CHECK(t["role"] == "k.bias");
            CHECK(t["convention"] == "Hugging Face");
        }
    }
}

TEST_CASE("inspect: the table names roles - NaN is reported on stderr with exit 0") {
    const ProcessResult r = run_in_fixtures("inspect timm_export.safetensors");
    REQUIRE(r.status == 0);
    CHECK(r.out.rfind("timm_export.safetensors: safetensors, ", 0) == 0);
    CHECK(r.out.find("qkv.weight (timm, block 1)") != std::string::npos);
    CHECK(r.out.find("attention map blocks.0.attn.attn: All 40 rows sum to 1") != std::string::npos);
    const ProcessResult nan = run_in_fixtures("inspect bad/nan_attn.npz");
    CHECK(nan.status == 0);
    CHECK(nan.err == "attnscope: bad/nan_attn.npz: tensor 'attn' holds 200 NaN and 0 Inf values\n");
    CHECK(nan.out.find("40 of 40 rows do not sum to 1") != std::string::npos);
    CHECK(run_in_fixtures("inspect bug_heads_reshape").status == 0);
    CHECK(run_in_fixtures("inspect bad/scalar.npy").status == 0);
}

TEST_CASE("inspect: malformed files give one line on stderr and exit 2") {
    check_unreadable("inspect bad/truncated.npz", "bad/truncated.npz", "not a readable .npz");
    check_unreadable("inspect bad/wrong_magic.npz", "bad/wrong_magic.npz", "starts with the bytes PK");
    check_unreadable("inspect bad/wrong_magic.safetensors", "bad/wrong_magic.safetensors", "header length");
    check_unreadable("inspect bad/lying_header.npz", "bad/lying_header.npz", "holds 100 bytes of data but its header");
    check_unreadable("inspect bad/bomb_declared.npz", "bad/bomb_declared.npz", "over the memory budget");
    check_unreadable("inspect bad/bomb_inflates.npz", "bad/bomb_inflates.npz", "(a zip bomb?)");
    check_unreadable("inspect bad/int64.npz", "bad/int64.npz", "'<i8' (signed integer) is not supported");
    check_unreadable("inspect bad/axes33.npy", "bad/axes33.npy", "has 33 axes; attnscope reads at most 32");
    check_unreadable("inspect no_such_file.npz", "no_such_file.npz", "No such file");
    check_unreadable("inspect", "", "FILE is required");
}
