// Whole Vision Transformers of every family attnscope reads: torchvision's VisionTransformer (.pth and
// .safetensors), Hugging Face ViTForImageClassification and ViTModel names (pytorch_model.bin), and a
// timm DeiT distilled checkpoint (two tokens before the patches, two heads).
//
// Truth from outside: tests/data/vit_families/ is written by tools/make_vit_family_fixtures.py; the
// logits, the final LayerNorm's output and every block's per-head attention are what torchvision's
// modules computed (see the script for the two families whose own library is not in Debian).
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <nlohmann/json.hpp>
#include <xtensor/xmath.hpp>
#include <xtensor/xsort.hpp>

#include "attention_maps.hpp"
#include "io.hpp"
#include "run_attnscope.hpp"
#include "step_table.hpp"
#include "tensor_source.hpp"
#include "vit.hpp"
#include "vit_fixtures.hpp"

using namespace attnscope;
using attnscope::testing::run_attnscope;
using attnscope::testing::worst_vs_torch_scale;
namespace fs = std::filesystem;

namespace {

const fs::path kData = fs::path(ATTNSCOPE_TEST_DATA) / "vit_families";
constexpr std::uint64_t kNoLimit = UINT64_MAX;

void check_close(const Array& ours, const fs::path& torch_file) {
    CAPTURE(torch_file.string());
    const Array torch = read_npy(torch_file.string());
    REQUIRE(shape_of(ours) == shape_of(torch));
    CHECK(worst_vs_torch_scale(ours, torch) <= 1.0);
}

// Runs the checkpoint on pixels.npy and compares every recorded tensor the module gave.
VitTrace check_family(const fs::path& model_file, VitFamily family) {
    CAPTURE(model_file.string());
    const VitModel model = load_vit_model(model_file.string(), 4, kNoLimit);
    CHECK(model.config.family == family);
    const VitTrace t = run_vit(model, Tensor{read_npy((kData / "pixels.npy").string()), {"B", "3", "H", "W"}});
    const fs::path dir = model_file.parent_path();
    check_close(t.at("norm").tensor().values, dir / "norm.npy");
    for (std::size_t i = 0; i < t.blocks.size(); ++i) check_close(t.blocks[i].attn(), dir / ("block" + std::to_string(i) + "_attn.npy"));
    if (t.has_head()) check_close(t.logits(), dir / "logits.npy");
    return t;
}

}  // namespace

TEST_CASE("torchvision VisionTransformer, from torch.save and safetensors: logits, norm and every block's attention equal the module's") {
    for (const char* file : {"model.pth", "model.safetensors"}) {
        const VitTrace t = check_family(kData / "torchvision" / file, VitFamily::Torchvision);
        CHECK(t.config.tokens() == 17);
        CHECK(t.config.layer_norm_eps() == 1e-6f);
        // Each step shows torchvision's own line.
        CHECK(t.blocks[0].at("attn_out").code == "x, _ = self.self_attention(x, x, x, need_weights=False)");
        CHECK(t.blocks[0].at("fc2").code == "self.mlp[3](y)");
        CHECK(t.at("logits").code == "self.heads(x)");
        CHECK(t.blocks[1].attention.steps.size() == 17);
    }
}

TEST_CASE("Hugging Face ViTForImageClassification (vit. prefix, classifier) and ViTModel (no head): eps 1e-12, query/key/value stacked") {
    const VitTrace cls = check_family(kData / "hf_classifier" / "pytorch_model.bin", VitFamily::HuggingFace);
    CHECK(cls.config.layer_norm_eps() == 1e-12f);
    CHECK(cls.config.classes == 5);
    CHECK(cls.blocks[0].at("norm1").code == "self.layernorm_before(hidden_states)");
    // Inside each block the 17 steps show Hugging Face's ViTSelfAttention / ViTSelfOutput lines.
    const Trace& attention = cls.blocks[1].attention;
    CHECK(attention.config.reference == Reference::hf);
    CHECK(attention.at("scaled").code == "attention_scores / math.sqrt(self.attention_head_size)");
    CHECK(attention.at("scaled").formula.find("(/ sqrt(c) = / sqrt(12) = / 3.4641") != std::string::npos);
    CHECK(attention.at("out").operands.back().expr == "self.output.dense.weight");
    const fs::path hf_dir = kData / "hf_classifier";
    for (const auto& [step, torch_name] : std::vector<std::pair<const char*, const char*>>{
             {"q", "query_layer"}, {"k", "key_layer"}, {"v", "value_layer"}, {"scaled", "attention_scores"},
             {"attn", "attention_probs"}, {"merged", "context_layer"}, {"out_drop", "hidden_states"}}) {
        CAPTURE(step);
        check_close(attention.at(step).tensor().values, hf_dir / ("block1_" + std::string(torch_name) + ".npy"));
    }
    // Those tensors came from tools/make_vit_family_fixtures.py's HfViTSelfAttention: every line the
    // steps and the Shape view show is a line torch ran there.
    std::ifstream script_file(fs::path(ATTNSCOPE_TEST_DATA) / ".." / ".." / "tools" / "make_vit_family_fixtures.py");
    const std::string script((std::istreambuf_iterator<char>(script_file)), std::istreambuf_iterator<char>());
    REQUIRE(script.find("class HfViTSelfAttention") != std::string::npos);
    for (std::string_view line : forward_lines(Reference::hf)) CHECK_MESSAGE(script.find(line) != std::string::npos, line);
    for (const Step& step : attention.steps) {
        CAPTURE(step.name);
        CHECK(step.code == step_info(step.name, Reference::hf)->code);
        // "a, b" lists several calls, "a ... b" two parts of one line: each part is in the script.
        std::string code = step.code;
        for (std::size_t at; (at = code.find(" ... ")) != std::string::npos;) code.replace(at, 5, ", ");
        for (std::size_t begin = 0, end; begin <= code.size(); begin = end + 2) {
            end = std::min(code.find(", ", begin), code.size());
            CHECK_MESSAGE(script.find(code.substr(begin, end - begin)) != std::string::npos, code.substr(begin, end - begin));
        }
    }

    const VitTrace base = check_family(kData / "hf_model" / "pytorch_model.bin", VitFamily::HuggingFace);
    CHECK_FALSE(base.has_head());
    CHECK(base.head.size() == 2);  // norm, cls_out
    CHECK_THROWS_AS(base.at("logits"), std::out_of_range);
}

TEST_CASE("timm DeiT distilled: class and distillation tokens, the mean of both heads, the patch grid after two tokens") {
    for (const char* file : {"model.safetensors", "checkpoint.pth"}) {
        const VitTrace t = check_family(kData / "deit_distilled" / file, VitFamily::TimmDistilled);
        CHECK(t.config.tokens() == 18);
        CHECK(t.grid.prefix == 2);
        CHECK(t.grid.token(0, 0) == 2);
        CHECK(t.at("logits").code == "(self.head(x[:, 0]) + self.head_dist(x[:, 1])) / 2");
        // The class token's map over the patches skips both token columns.
        const Array map = token_map(head_attention(t.blocks[1].attn(), 0, 0), 0, t.grid);
        CHECK(map(3, 3) == head_attention(t.blocks[1].attn(), 0, 0)(0, 2 + 15));
    }
}

TEST_CASE("vit on the command line: each family's checkpoint prints its family; --dump writes norm.npy, logits only with a head") {
    for (const auto& [file, family] : {std::pair<std::string, std::string>{"torchvision/model.pth", "torchvision"},
                                       {"hf_model/pytorch_model.bin", "Hugging Face"},
                                       {"deit_distilled/checkpoint.pth", "timm DeiT (distilled)"}}) {
        CAPTURE(file);
        const fs::path dump = fs::temp_directory_path() / ("attnscope_vitfam_" + std::to_string(::getpid()));
        fs::remove_all(dump);
        const auto r = run_attnscope("vit --model '" + (kData / file).string() + "' --pixels '" +
                                     (kData / "pixels.npy").string() + "' --heads 4 --dump '" + dump.string() + "'");
        REQUIRE_MESSAGE(r.status == 0, r.err);
        CHECK(r.out.find(": " + family + " ViT 32x32") != std::string::npos);
        CHECK(fs::exists(dump / "norm.npy"));
        CHECK(fs::exists(dump / "logits.npy") == (family != "Hugging Face"));
        check_close(read_npy((dump / "norm.npy").string()), (kData / file).parent_path() / "norm.npy");
        fs::remove_all(dump);
    }
    const auto json = run_attnscope("vit --model '" + (kData / "torchvision/model.pth").string() + "' --pixels '" +
                                    (kData / "pixels.npy").string() + "' --heads 4 --json");
    REQUIRE(json.status == 0);
    CHECK(nlohmann::json::parse(json.out)["family"] == "torchvision");
}

TEST_CASE("one attention layer of a torchvision ViT: run --block 1 reads encoder_layer_1's self_attention") {
    const fs::path dir = fs::temp_directory_path() / ("attnscope_vitfam_run_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    const auto r = run_attnscope("run --weights '" + (kData / "torchvision/model.pth").string() + "' --block 1 --input '" +
                                 (kData / "torchvision/block1_x.npy").string() + "' --heads 4 --dump '" + dir.string() + "'");
    REQUIRE_MESSAGE(r.status == 0, r.err);
    check_close(read_npy((dir / "out.npy").string()), kData / "torchvision/block1_out.npy");
    check_close(read_npy((dir / "attn.npy").string()), kData / "torchvision/block1_attn.npy");
    fs::remove_all(dir);
}

TEST_CASE("a checkpoint missing one tensor names it in its family's spelling; a file with no patch embedding lists all three") {
    const TensorSource source = TensorSource::open((kData / "torchvision/model.safetensors").string());
    std::vector<std::pair<std::string, Array>> kept;
    for (const TensorInfo& t : source.tensors())
        if (t.name != "encoder.layers.encoder_layer_1.mlp.3.weight") kept.emplace_back(t.name, source.load(t.name));
    const fs::path partial = fs::temp_directory_path() / ("attnscope_vitfam_" + std::to_string(::getpid()) + ".safetensors");
    write_safetensors(partial.string(), kept);
    CHECK_THROWS_WITH_AS(load_vit_model(partial.string(), 4, kNoLimit),
                         doctest::Contains("no tensor named 'encoder.layers.encoder_layer_1.mlp.3.weight'; a torchvision "
                                           "VisionTransformer holds conv_proj"),
                         FileError);
    write_safetensors(partial.string(), {kept[5]});
    CHECK_THROWS_WITH_AS(load_vit_model(partial.string(), 4, kNoLimit),
                         doctest::Contains("no patch embedding (patch_embed.proj.weight, conv_proj.weight or "
                                           "embeddings.patch_embeddings.projection.weight)"),
                         FileError);
    fs::remove(partial);
}
