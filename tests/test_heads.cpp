// Head counts are never guessed. Truth from outside: tests/data/heads/ is written by
// tools/make_heads_fixtures.py with torchvision's VisionTransformer and nn.TransformerEncoder, 4 heads
// at D = 64 (where the usual head size 64 would say 1); their logits and attention are the modules'.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "activations.hpp"
#include "heads.hpp"
#include "io.hpp"
#include "run_attnscope.hpp"
#include "tensor_source.hpp"
#include "vit.hpp"
#include "vit_fixtures.hpp"

using namespace attnscope;
using namespace attnscope::testing;
namespace fs = std::filesystem;

namespace {

const fs::path kData = fs::path(ATTNSCOPE_TEST_DATA) / "heads";
constexpr std::uint64_t kNoLimit = UINT64_MAX;
const std::string kDivisors64 = "pass --heads H with H one of 1, 2, 4, 8, 16, 32, 64";

std::string quoted(const fs::path& p) { return "'" + p.string() + "'"; }

// The model's logits and every block's attention against torchvision's, within 1e-4 relative.
void check_vit(const VitModel& model, const fs::path& torch_dir) {
    const VitTrace t = run_vit(model, Tensor{read_npy((kData / "vit" / "pixels.npy").string()), {}});
    CHECK(worst_vs_torch(t.logits(), read_npy((torch_dir / "logits.npy").string())) <= 1.0);
    REQUIRE(t.blocks.size() == 3);
    for (std::size_t i = 0; i < t.blocks.size(); ++i)
        CHECK(worst_vs_torch(t.blocks[i].attn(), read_npy((torch_dir / ("block" + std::to_string(i) + "_attn.npy")).string())) <= 1.0);
}

fs::path temp_folder(const std::string& name) {
    const fs::path dir = fs::temp_directory_path() / ("attnscope_heads_" + std::to_string(::getpid()) + "_" + name);
    fs::remove_all(dir);
    fs::create_directories(dir);
    return dir;
}

}  // namespace

TEST_CASE("a torchvision state dict does not say h: refused naming --heads and the divisors; with --heads 4 it equals torchvision") {
    const fs::path model = kData / "vit" / "model.pth";
    CHECK_THROWS_WITH_AS(load_vit_model(model.string(), std::nullopt, kNoLimit),
                         doctest::Contains(("dim 64; " + std::string("no num_heads in its metadata")).c_str()), HeadsUnknown);
    CHECK_THROWS_WITH_AS(load_vit_model(model.string(), std::nullopt, kNoLimit), doctest::Contains(kDivisors64.c_str()),
                         HeadsUnknown);
    const VitModel m = load_vit_model(model.string(), 4, kNoLimit);
    CHECK(english(m.heads_from) == "--heads");
    check_vit(m, kData / "vit");
}

TEST_CASE("a training checkpoint's config and a Hugging Face config.json give h, and say so") {
    const VitModel ckpt = load_vit_model((kData / "checkpoint" / "checkpoint.pth").string(), std::nullopt, kNoLimit);
    CHECK(ckpt.config.heads == 4);
    CHECK(english(ckpt.heads_from) == "config.num_heads in the checkpoint");
    check_vit(ckpt, kData / "vit");

    const fs::path hf = kData / "hf_folder" / "pytorch_model.bin";
    const VitModel h = load_vit_model(hf.string(), std::nullopt, kNoLimit);
    CHECK(h.config.family == VitFamily::HuggingFace);
    CHECK(h.config.heads == 4);
    CHECK(english(h.heads_from) == "num_attention_heads in " + (kData / "hf_folder" / "config.json").string());
    check_vit(h, kData / "hf_folder");
    CHECK(load_vit_model(hf.string(), 2, kNoLimit).config.heads == 2);  // --heads first
}

TEST_CASE("the published ViTs are recognised by width, depth and MLP; anything else is not") {
    const TensorSource source = TensorSource::open((kData / "vit" / "model.pth").string());
    struct Case {
        ModelSizes sizes;
        std::size_t heads;  // 0: not recognised
    };
    for (const Case& c : {Case{{768, 12, 3072}, 12}, Case{{1024, 24, 4096}, 16}, Case{{1280, 32, 5120}, 16},
                          Case{{192, 12, 768}, 3}, Case{{384, 12, 1536}, 6}, Case{{768, 12, 2048}, 0},
                          Case{{768, 6, 3072}, 0}, Case{{64, 3, 128}, 0}}) {
        CAPTURE(c.sizes.dim);
        CAPTURE(c.sizes.depth);
        const std::optional<HeadCount> found = heads_from_file(source, c.sizes);
        CHECK(found.has_value() == (c.heads != 0));
        if (found) CHECK(found->heads == c.heads);
    }
    CHECK(english(heads_from_file(source, {1280, 32, 5120})->from) == "torchvision's vit_h_14, timm's huge ViT (D 1280, 32 blocks)");
    CHECK(head_count_choices(12) == std::vector<std::size_t>{1, 2, 3, 4, 6, 12});
    CHECK(head_count_suggestion(64) == 1);
    CHECK(head_count_suggestion(768) == 12);
    CHECK(head_count_suggestion(48) == 1);
}

TEST_CASE("two sources that disagree, a count that does not divide the dim, a broken config.json: refused") {
    // The safetensors fixture says num_heads 4 in its metadata; a config.json beside it says otherwise.
    const fs::path dir = temp_folder("disagree");
    fs::copy_file(fs::path(ATTNSCOPE_TEST_DATA) / "vit" / "meta_i32_p8_d64_h4_l2" / "model.safetensors", dir / "model.safetensors");
    auto config = [&](const std::string& text) { std::ofstream(dir / "config.json") << text; };
    const std::string model = (dir / "model.safetensors").string();
    config(R"({"num_attention_heads": 2})");
    CHECK_THROWS_WITH_AS(load_vit_model(model, std::nullopt, kNoLimit),
                         doctest::Contains("metadata num_heads says 4 heads but num_attention_heads in"), FileError);
    config(R"({"num_attention_heads": 4})");
    CHECK(load_vit_model(model, std::nullopt, kNoLimit).config.heads == 4);
    config(R"({"num_attention_heads": "many"})");
    CHECK_THROWS_WITH_AS(load_vit_model(model, std::nullopt, kNoLimit),
                         doctest::Contains("config.json: num_attention_heads = \"many\" is not a positive whole number"),
                         FileError);
    config("{not json");
    CHECK_THROWS_WITH_AS(load_vit_model(model, std::nullopt, kNoLimit), doctest::Contains("config.json: not a JSON object"),
                         FileError);
    fs::remove(dir / "config.json");
    const fs::path odd = edited_copy(dir / "model.safetensors", "heads3", [](Tensors&, Metadata& m) { m["num_heads"] = "3"; });
    CHECK_THROWS_WITH_AS(load_vit_model(odd.string(), std::nullopt, kNoLimit),
                         doctest::Contains("metadata num_heads says 3 heads, which do not divide dim 64"), FileError);
    fs::remove(odd);
    fs::remove_all(dir);
}

TEST_CASE("nn.TransformerEncoder: its state dict does not say h; its hparams do; the notes say where h came from") {
    const TensorSource enc = TensorSource::open((kData / "encoder" / "enc.pt").string());
    CHECK_THROWS_WITH_AS(trace_from_file(enc, 1), doctest::Contains(kDivisors64.c_str()), HeadsUnknown);
    const FileTrace chosen = trace_from_file(enc, 1, 4);
    CHECK(chosen.trace.config.heads == 4);
    const FileTrace said = trace_from_file(TensorSource::open((kData / "encoder" / "enc_hparams.pt").string()), 1);
    CHECK(said.trace.config.heads == 4);
    const std::vector<std::string> notes = english(said.notes);
    CHECK(std::find(notes.begin(), notes.end(), "heads h = 4 (from hparams.nhead in the checkpoint)") != notes.end());
}

TEST_CASE("command line: no number from a guessed head count; exit 2 naming --heads") {
    const fs::path enc = kData / "encoder";
    const fs::path dump = fs::temp_directory_path() / ("attnscope_heads_" + std::to_string(::getpid()) + "_dump");
    check_usage_error("run --weights " + quoted(enc / "enc.pt") + " --block 1 --input " + quoted(enc / "x.npy") +
                          " --dump " + quoted(dump),
                      kDivisors64);
    CHECK_FALSE(fs::exists(dump / "out.npy"));  // nothing written before the refusal
    for (const std::string& given : {std::string(" --heads 4"), std::string()}) {
        const fs::path weights = enc / (given.empty() ? "enc_hparams.pt" : "enc.pt");
        const ProcessResult r = run_attnscope("run --weights " + quoted(weights) + " --block 1 --input " +
                                              quoted(enc / "x.npy") + " --dump " + quoted(dump) + " --force" + given);
        CAPTURE(r.err);
        REQUIRE(r.status == 0);
        if (given.empty()) CHECK(r.out.find("heads h = 4 from hparams.nhead in the checkpoint") != std::string::npos);
        CHECK(worst_vs_torch(read_npy((dump / "out.npy").string()), read_npy((enc / "block1_out.npy").string())) <= 1.0);
        CHECK(worst_vs_torch(read_npy((dump / "attn.npy").string()), read_npy((enc / "block1_attn.npy").string())) <= 1.0);
    }
    fs::remove_all(dump);
    check_usage_error("vit --model " + quoted(kData / "vit" / "model.pth") + " --pixels " + quoted(kData / "vit" / "pixels.npy"),
                      kDivisors64);
    const ProcessResult ok = run_attnscope("vit --model " + quoted(kData / "checkpoint" / "checkpoint.pth") + " --pixels " +
                                           quoted(kData / "vit" / "pixels.npy"));
    CAPTURE(ok.err);
    CHECK(ok.status == 0);
    CHECK(ok.out.find("4 heads (config.num_heads in the checkpoint)") != std::string::npos);
}
