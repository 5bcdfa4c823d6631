// One attention layer saved by the libraries people use, opened under each naming convention:
// the reference article's MultiHeadAttention (qkv_proj, out_proj), torch.nn.MultiheadAttention
// (in_proj_weight, out_proj; batch first and sequence first), Hugging Face ViT (query, key,
// value, attention.output.dense), and the reference class inside a training checkpoint.
//
// Truth from outside: tests/data/conventions/ is written by tools/make_convention_fixtures.py;
// every expected tensor is what the PyTorch module itself computed (nn.MultiheadAttention's attn
// with need_weights=True, average_attn_weights=False).
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>
#include <xtensor/xmath.hpp>
#include <xtensor/xsort.hpp>

#include "activations.hpp"
#include "io.hpp"
#include "roles.hpp"
#include "run_attnscope.hpp"
#include "step_table.hpp"
#include "tensor_source.hpp"
#include "weights.hpp"

using namespace attnscope;
using attnscope::testing::run_attnscope;
using attnscope::testing::scratch_dir;
namespace fs = std::filesystem;

namespace {

const fs::path kData = fs::path(ATTNSCOPE_TEST_DATA) / "conventions";

fs::path scratch(const std::string& name) { return scratch_dir("conventions", name, false); }

// Runs `attnscope run` on the case's weights file and input and compares the dumped steps with
// the module's own tensors.
void check_run(const fs::path& weights, const fs::path& golden, const std::vector<std::string>& steps,
               const std::string& extra = "") {
    const fs::path dir = scratch(golden.filename().string() + weights.extension().string());
    const auto r = run_attnscope("run --weights '" + weights.string() + "' --input '" + (golden / "input.npy").string() +
                                 "' --heads 4 --dump '" + dir.string() + "'" + extra);
    REQUIRE_MESSAGE(r.status == 0, r.err);
    for (const std::string& step : steps) {
        CAPTURE(step);
        const Array ours = read_npy((dir / (step + ".npy")).string());
        const Array torch = read_npy((golden / (step + ".npy")).string());
        REQUIRE(shape_of(ours) == shape_of(torch));
        CHECK(xt::amax(xt::abs(ours - torch))() <= 1e-5f * std::max(1.0f, xt::amax(xt::abs(torch))()));
    }
    fs::remove_all(dir);
}

}  // namespace

TEST_CASE("the reference article's MultiHeadAttention: every step of run equals the class's own, from torch.save and safetensors") {
    const std::vector<std::string> steps = {"qkv", "qkv_split", "qkv_heads", "q",       "k",         "v",      "k_t",
                                            "scores", "scaled", "attn",     "attn_drop", "context", "context_t", "merged", "out"};
    for (const char* file : {"weights.pt", "weights.safetensors"}) {
        CAPTURE(file);
        check_run(kData / "reference_mha" / file, kData / "reference_mha", steps);
    }
    const SourceWeights w = load_attention_weights(TensorSource::open((kData / "reference_mha" / "weights.pt").string()), {}, {});
    CHECK(w.convention == kReferenceConvention);
    CHECK_FALSE(w.block);
    CHECK(w.weights.qkv_bias);
}

TEST_CASE("check on the class's intermediates saved with torch.save: all match; a scale after the softmax is found") {
    const fs::path dir = kData / "reference_mha";
    const std::string weights = " --weights '" + (dir / "weights.pt").string() + "' --heads 4";
    const auto ok = run_attnscope("check '" + (dir / "acts.pt").string() + "'" + weights);
    CHECK(ok.status == 0);
    CHECK(ok.out.find("all steps match") != std::string::npos);
    const auto bug = run_attnscope("check '" + (dir / "acts_bug.pt").string() + "'" + weights);
    CHECK(bug.status == 3);
    CHECK(bug.out.find("first divergence: attn") != std::string::npos);
}

TEST_CASE("nn.MultiheadAttention, batch first and sequence first: out and every head's attention equal the module's") {
    for (const char* c : {"nn_mha_batch_first", "nn_mha_seq_first"}) {
        CAPTURE(c);
        for (const char* file : {"weights.pt", "weights.safetensors"}) {
            CAPTURE(file);
            check_run(kData / c / file, kData / c, {"attn", "out"});
        }
        const SourceWeights w = load_attention_weights(TensorSource::open((kData / c / "weights.pt").string()), {}, {});
        CHECK(w.convention == kTorchMhaConvention);
    }
}

TEST_CASE("Hugging Face ViT names in a pytorch_model.bin: query, key, value stacked give nn.MultiheadAttention's numbers") {
    check_run(kData / "hugging_face" / "pytorch_model.bin", kData / "hugging_face", {"attn", "out"});
    const SourceWeights hf = load_attention_weights(TensorSource::open((kData / "hugging_face" / "pytorch_model.bin").string()), {}, {});
    const SourceWeights mha = load_attention_weights(TensorSource::open((kData / "nn_mha_batch_first" / "weights.pt").string()), {}, {});
    CHECK(hf.convention == kHuggingFaceConvention);
    CHECK(hf.block == std::optional<std::size_t>(0));
    CHECK(hf.weights.qkv_weight == mha.weights.qkv_weight);
    CHECK(*hf.weights.qkv_bias == *mha.weights.qkv_bias);
}

TEST_CASE("Hugging Face names: the steps show ViTSelfAttention's lines in run and in the app, unless --reference says otherwise") {
    const fs::path bin = kData / "hugging_face" / "pytorch_model.bin";
    const fs::path dir = scratch("hf_lines");
    auto code_of = [&dir](const std::string& step) {
        const auto j = nlohmann::json::parse(std::ifstream(dir / "trace.json"));
        for (const auto& s : j["steps"])
            if (s["name"] == step) return s["code"].get<std::string>();
        return std::string("(no step " + step + ")");
    };
    const std::string run = "run --weights '" + bin.string() + "' --input '" +
                            (kData / "hugging_face" / "input.npy").string() + "' --heads 4 --dump '" + dir.string() + "'";
    REQUIRE(run_attnscope(run).status == 0);
    CHECK(code_of("scaled") == step_info("scaled", Reference::hf)->code);
    CHECK(code_of("out_drop") == "self.output.dropout(hidden_states)");
    REQUIRE(run_attnscope(run + " --reference vit --force").status == 0);
    CHECK(code_of("scaled") == "* self.scale");
    fs::remove_all(dir);
    // The app opens the same file as one block on a seeded input, with the same lines.
    const FileTrace opened = trace_from_file(TensorSource::open(bin.string()), std::nullopt, 4);
    CHECK(opened.trace.config.reference == Reference::hf);
    CHECK(opened.trace.at("q").code == "query_layer = self.transpose_for_scores(mixed_query_layer)");
}

TEST_CASE("a training checkpoint holding the reference class in two blocks: --block picks one, none asks") {
    const fs::path ck = kData / "nested_checkpoint" / "checkpoint.pth";
    check_run(ck, kData / "nested_checkpoint", {"attn", "out"}, " --block 1");
    const auto r = run_attnscope("run --weights '" + ck.string() + "' --input '" +
                                 (kData / "nested_checkpoint" / "input.npy").string() + "' --heads 4 --dump '" +
                                 scratch("noblock").string() + "'");
    CHECK(r.status == 2);
    CHECK(r.err.find("holds the attention weights of blocks 0, 1; choose one with --block I") != std::string::npos);
    // inspect names each tensor's role and convention, out_proj's from the qkv_proj beside it.
    const auto j = nlohmann::json::parse(run_attnscope("inspect --json '" + ck.string() + "'").out);
    CHECK(j["format"] == "torch.save");
    CHECK(j["tensors"][3]["name"] == "model.blocks.0.attn.out_proj.bias");
    CHECK(j["tensors"][3]["role"] == "proj.bias");
    CHECK(j["tensors"][3]["convention"] == kReferenceConvention);
    CHECK(j["tensors"][6]["block"] == 1);
}

TEST_CASE("weight names of every convention, with the block in each one's own numbering") {
    auto described = [](const std::string& name, const Shape& shape) { return describe_role(recognize_role(name, shape)); };
    CHECK(described("qkv_proj.weight", {72, 24}) == "qkv.weight (reference MultiHeadAttention)");
    CHECK(described("layers.4.self_attn.in_proj_weight", {72, 24}) == "qkv.weight (nn.MultiheadAttention, block 4)");
    CHECK(described("encoder.layers.encoder_layer_11.self_attention.in_proj_bias", {72}) ==
          "qkv.bias (nn.MultiheadAttention, block 11)");
    CHECK(described("attn.q_proj_weight", {24, 24}) == "q.weight (nn.MultiheadAttention)");
    CHECK(described("encoder.layers.encoder_layer_2.self_attention.out_proj.weight", {24, 24}) ==
          "proj.weight (reference MultiHeadAttention or nn.MultiheadAttention, block 2)");
    CHECK(recognize_role("in_proj_weight", {72}).kind == RoleKind::None);  // a weight must be 2-D
    std::vector<Role> roles = {recognize_role("a.out_proj.weight", {4, 4}), recognize_role("a.in_proj_weight", {12, 4}),
                               recognize_role("b.out_proj.bias", {4}), recognize_role("b.qkv_proj.bias", {12})};
    resolve_conventions(roles);
    CHECK(roles[0].convention == kTorchMhaConvention);
    CHECK(roles[2].convention == kReferenceConvention);
}

TEST_CASE("files that match no convention say what each convention is called; two layers in one block are refused") {
    const auto r = run_attnscope("run --weights '" + (fs::path(ATTNSCOPE_TEST_DATA) / "torch" / "one.pt").string() +
                                 "' --dump '" + scratch("none").string() + "'");
    CHECK(r.status == 2);
    for (const char* name : {"qkv.weight", "qkv_proj.weight", "in_proj_weight", "attention.attention.{query,key,value}"})
        CHECK(r.err.find(name) != std::string::npos);
    // An encoder's and a decoder's attention side by side, without block numbers.
    const fs::path dir = scratch("two_layers");
    fs::create_directories(dir);
    const Array w = xt::zeros<float>({12, 4}), b = xt::zeros<float>({4}), p = xt::zeros<float>({4, 4});
    write_safetensors((dir / "two.safetensors").string(), {{"enc.in_proj_weight", w}, {"enc.out_proj.weight", p},
                                                           {"enc.out_proj.bias", b}, {"dec.in_proj_weight", w},
                                                           {"dec.out_proj.weight", p}, {"dec.out_proj.bias", b}});
    CHECK_THROWS_WITH_AS(load_attention_weights(TensorSource::open((dir / "two.safetensors").string()), {}, {}),
                         doctest::Contains("two attention layers, 'enc' and 'dec'"), FileError);
    fs::remove_all(dir);
}

TEST_CASE("nn.MultiheadAttention with keys and values of other widths (kdim, vdim) is refused as cross-attention") {
    const fs::path file = kData / "cross_attention" / "weights.pt";
    const auto r = run_attnscope("run --weights '" + file.string() + "' --dump '" + scratch("cross").string() + "'");
    CHECK(r.status == 2);
    CHECK(r.err.find(file.string() + ": q_proj_weight [24, 24], k_proj_weight [24, 12] and v_proj_weight [24, 6] differ") !=
          std::string::npos);
    CHECK(r.err.find("cross-attention; attnscope steps through self-attention") != std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
}
