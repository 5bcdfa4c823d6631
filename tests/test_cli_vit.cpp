// `attnscope vit` as a separate process: PyTorch's numbers through --pixels, --json, dumps,
// overlays, and one line on stderr with exit status 2 for every bad option or file.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "image.hpp"
#include "io.hpp"
#include "run_attnscope.hpp"
#include "vit_fixtures.hpp"

using namespace attnscope;
using namespace attnscope::testing;
namespace fs = std::filesystem;

namespace {

const fs::path kVit = fs::path(ATTNSCOPE_TEST_DATA) / "vit";
const fs::path kAssets = (fs::path(ATTNSCOPE_TEST_DATA) / ".." / ".." / "assets").lexically_normal();
const fs::path kDemo = kAssets / "models" / "demo_vit.safetensors";
const fs::path kSample = kAssets / "samples" / "06_triangle.png";

fs::path temp_path(const std::string& name) {
    return fs::temp_directory_path() / ("attnscope_cli_vit_" + std::to_string(::getpid()) + "_" + name);
}

// `attnscope vit ARGS`.
ProcessResult vit(const std::string& args) { return run_attnscope("vit " + args); }

// `attnscope vit ARGS` exits 2 with one line on stderr that contains `phrase`.
void refused(const std::string& args, const std::string& phrase) { check_usage_error("vit " + args, phrase); }

std::string quoted(const fs::path& p) { return "'" + p.string() + "'"; }

}  // namespace

TEST_CASE("vit --pixels: logits and every block's attention equal PyTorch's within 1e-4 relative at two sizes") {
    for (const std::string name : {"meta_i32_p8_d64_h4_l2", "nometa_i48_p8_d128_h2_l3"}) {
        CAPTURE(name);
        const fs::path dir = kVit / name, dump = temp_path("dump_" + name);
        const std::string heads = name.rfind("nometa", 0) == 0 ? " --heads 2" : "";  // its file does not say
        const ProcessResult r = vit("--model " + quoted(dir / "model.safetensors") + " --pixels " + quoted(dir / "pixels.npy") +
                          " --dump " + quoted(dump) + heads);
        REQUIRE(r.status == 0);
        const std::size_t depth = nlohmann::json::parse(std::ifstream(dir / "meta.json"))["depth"];
        std::vector<std::string> files{"logits.npy"};
        for (std::size_t i = 0; i < depth; ++i) files.push_back("block" + std::to_string(i) + "_attn.npy");
        for (const std::string& file : files) {
            CAPTURE(file);
            const Array ours = read_npy((dump / file).string()), torch = read_npy((dir / file).string());
            REQUIRE(shape_of(ours) == shape_of(torch));
            std::size_t bad = 0;
            for (std::size_t i = 0; i < ours.size(); ++i)
                bad += !(std::fabs(ours.data()[i] - torch.data()[i]) <= 1e-4 * std::max(std::fabs(torch.data()[i]), 0.01f));
            CHECK(bad == 0);
        }
        fs::remove_all(dump);
    }
}

TEST_CASE("vit --json prints logits and the top classes with labels and probabilities") {
    const ProcessResult r = vit("--model " + quoted(kDemo) + " --image " + quoted(kSample) + " --json");
    REQUIRE(r.status == 0);
    const auto j = nlohmann::json::parse(r.out);
    REQUIRE(j["logits"].size() == 4);
    REQUIRE(j["top"].size() == 4);
    CHECK(j["top"][0]["label"] == "triangle");
    CHECK(j["top"][0]["index"] == 2);
    CHECK(j["top"][0]["prob"].get<double>() > 0.9);
    CHECK(j["top"][0]["prob"].get<double>() >= j["top"][1]["prob"].get<double>());
    double sum = 0;
    for (const auto& t : j["top"]) sum += t["prob"].get<double>();
    CHECK(sum == doctest::Approx(1.0).epsilon(1e-5));
    const ProcessResult two = vit("--model " + quoted(kDemo) + " --image " + quoted(kSample) + " --json --top 2");
    CHECK(nlohmann::json::parse(two.out)["top"].size() == 2);
}

TEST_CASE("vit prints the model, the prediction, and writes overlay and rollout PNGs") {
    const fs::path overlay = temp_path("overlay.png"), rollout = temp_path("rollout.png");
    const ProcessResult r = vit("--model " + quoted(kDemo) + " --image " + quoted(kSample) + " --overlay " + quoted(overlay) +
                      " --block 2 --head 1 --query 3,4 --rollout " + quoted(rollout) + " --fusion max");
    REQUIRE(r.status == 0);
    CHECK(r.out.find("ViT 64x64, patch 8 (8x8 grid + class token = 65 tokens)") != std::string::npos);
    CHECK(r.out.find("prediction: triangle") != std::string::npos);
    CHECK(r.out.find("block 2, head 1, query 3,4") != std::string::npos);
    CHECK(r.out.find("heads fused by max") != std::string::npos);
    for (const fs::path& png : {overlay, rollout}) {
        const RgbImage image = load_image(png.string(), UINT64_MAX);
        CHECK(image.width == 256);  // 64 x 64, enlarged 4x
        CHECK(image.height == 256);
        fs::remove(png);
    }
}

TEST_CASE("vit refuses bad options and files with one line naming them") {
    const std::string demo = "--model " + quoted(kDemo), sample = " --image " + quoted(kSample);
    const fs::path overlay = temp_path("never.png");
    refused(demo, "give exactly one of --image PNG/JPG or --pixels X.npy");
    refused(demo + sample + " --pixels " + quoted(kVit / "meta_i32_p8_d64_h4_l2" / "pixels.npy"), "exactly one of");
    refused("--model /nonexistent/m.safetensors" + sample, "/nonexistent/m.safetensors");
    refused("--model " + quoted(kVit / "resize" / "down.png") + sample, "down.png");
    refused(demo + " --image " + quoted(kVit / "resize" / "not_an_image.png"), "not_an_image.png: cannot decode it as an image");
    refused(demo + " --pixels " + quoted(kVit / "meta_i32_p8_d64_h4_l2" / "pixels.npy"),
            "pixels.npy: has shape [1, 3, 32, 32], expected [1, 3, H, W] = [1, 3, 64, 64]");
    refused(demo + sample + " --overlay " + quoted(overlay) + " --block 4", "--block 4 is out of range: the model has 4 blocks (0..3)");
    refused(demo + sample + " --overlay " + quoted(overlay) + " --head 3", "--head 3: expected mean or a head from 0 to 2");
    refused(demo + sample + " --overlay " + quoted(overlay) + " --head two", "--head two");
    refused(demo + sample + " --overlay " + quoted(overlay) + " --query 8,0", "--query 8,0 is outside the 8 x 8 patch grid");
    refused(demo + sample + " --overlay " + quoted(overlay) + " --query middle", "--query middle: expected cls or ROW,COL");
    refused(demo + sample + " --block 1", "--block applies to --overlay OUT.png");
    refused(demo + sample + " --fusion max", "--fusion applies to --rollout OUT.png");
    refused(demo + sample + " --rollout " + quoted(overlay) + " --fusion sum", "--fusion");
    refused(demo + sample + " --heads 5", "is not divisible by 5 heads (from --heads)");
    refused(demo + sample + " --overlay /nonexistent/dir/o.png", "/nonexistent/dir/o.png");
    CHECK_FALSE(fs::exists(overlay));
}

// ---- the position experiment: --no-pos-embed, --shuffle-patches (tools/make_position_fixtures.py) ----
namespace {

const fs::path kPositions = kVit / "positions";

double worst_relative(const std::vector<float>& ours, const Array& torch) {
    REQUIRE(ours.size() == torch.size());
    double worst = 0;
    for (std::size_t i = 0; i < ours.size(); ++i) {
        const double t = torch.data()[i];
        worst = std::max(worst, std::fabs(ours[i] - t) / (1e-4 * std::max(std::fabs(t), 0.01)));
    }
    return worst;
}

nlohmann::json positions_expected() {
    std::ifstream in(kPositions / "expected.json");
    REQUIRE(in.good());
    return nlohmann::json::parse(in);
}

}  // namespace

TEST_CASE("vit --shuffle-patches --no-pos-embed: PyTorch's logits on the shuffled picture, the same prediction") {
    const nlohmann::json expected = positions_expected();
    const fs::path dump = temp_path("shuffled_dump");
    const ProcessResult r = vit("--model " + quoted(kDemo) + " --pixels " + quoted(kPositions / "pixels.npy") +
                                " --no-pos-embed --shuffle-patches 7 --json --dump " + quoted(dump));
    CAPTURE(r.err);
    REQUIRE(r.status == 0);
    const nlohmann::json j = nlohmann::json::parse(r.out);
    CHECK(j["pos_embed"] == false);
    CHECK(j["shuffle"]["order"] == expected["order"]);
    CHECK(worst_relative(j["logits"].get<std::vector<float>>(),
                         read_npy((kPositions / "nopos_shuffled_logits.npy").string())) <= 1.0);
    CHECK(worst_relative(j["shuffle"]["unshuffled_logits"].get<std::vector<float>>(),
                         read_npy((kPositions / "nopos_logits.npy").string())) <= 1.0);
    CHECK(j["shuffle"]["max_attn_difference"].get<double>() < 1e-5);
    CHECK(j["shuffle"]["max_probs_difference"].get<double>() < 1e-5);
    // --dump writes the shuffled run.
    const Array attn = read_npy((dump / "block3_attn.npy").string());
    const Array torch = read_npy((kPositions / "nopos_shuffled_attn3.npy").string());
    CHECK(worst_relative(std::vector<float>(attn.begin(), attn.end()), torch) <= 1.0);
    fs::remove_all(dump);
}

TEST_CASE("vit --shuffle-patches with position embeddings: PyTorch's logits, the attention moves") {
    const nlohmann::json expected = positions_expected();
    const std::string args =
        "--model " + quoted(kDemo) + " --pixels " + quoted(kPositions / "pixels.npy") + " --shuffle-patches 7";
    const ProcessResult j_run = vit(args + " --json");
    REQUIRE(j_run.status == 0);
    const nlohmann::json j = nlohmann::json::parse(j_run.out);
    CHECK_FALSE(j.contains("pos_embed"));
    CHECK(worst_relative(j["logits"].get<std::vector<float>>(),
                         read_npy((kPositions / "pos_shuffled_logits.npy").string())) <= 1.0);
    CHECK(j["shuffle"]["max_attn_difference"].get<double>() ==
          doctest::Approx(expected["pos"]["max_attn_difference"].get<double>()).epsilon(1e-3));
    const ProcessResult text = vit(args);
    REQUIRE(text.status == 0);
    CHECK(text.out.find("patches shuffled with seed 7: shuffled patch i shows original patch order[i] = 13 43 22 59") !=
          std::string::npos);
    CHECK(text.out.find("on the picture as is: triangle") != std::string::npos);
    CHECK(text.out.find("the model sees another picture") != std::string::npos);
}

TEST_CASE("--shuffle-patches and --no-pos-embed refuse bad values and a missing model with one line") {
    const std::string demo = "--model " + quoted(kDemo) + " --image " + quoted(kSample);
    refused(demo + " --shuffle-patches abc", "--shuffle-patches");
    refused(demo + " --shuffle-patches -3", "'-3' is not a whole number");
    refused(demo + " --shuffle-patches 18446744073709551616", "--shuffle-patches");
    refused("--image " + quoted(kSample) + " --shuffle-patches 3", "--model is required");
    for (const std::string option : {"--shuffle-patches 3", "--no-pos-embed"}) {
        const ProcessResult r = run_attnscope(option);  // the app without a ViT
        CAPTURE(r.err);
        CHECK(r.status == 2);
        CHECK(r.err.find(option.substr(0, option.find(' ')) + " applies to a ViT: add --model FILE --image PICTURE") !=
              std::string::npos);
        CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    }
}

// ---- a hybrid ViT: the CNN stem found from the tensor names (tools/make_hybrid_fixtures.py) ----
TEST_CASE("vit --model with a CNN stem: PyTorch's logits, the stem and N = 257 in the summary") {
    const fs::path dir = fs::path(ATTNSCOPE_TEST_DATA) / "hybrid" / "i64_s8_16_k3_d32_h2_l2";
    const std::string args = "--model " + quoted(dir / "model.safetensors") + " --pixels " + quoted(dir / "pixels.npy");
    const ProcessResult json = vit(args + " --json");
    REQUIRE(json.status == 0);
    const std::vector<float> logits = nlohmann::json::parse(json.out)["logits"].get<std::vector<float>>();
    CHECK(worst_relative(logits, read_npy((dir / "logits.npy").string())) <= 1.0);
    const ProcessResult text = vit(args);
    REQUIRE(text.status == 0);
    CHECK(text.out.find("CNN stem 3->8->16 (3x3 stride 2 each, stride 4) (16x16 grid + class token = 257 tokens)") !=
          std::string::npos);
}

TEST_CASE("vit refuses a stem whose channels do not chain or that holds NaN: one line naming file and tensor") {
    const fs::path dir = fs::path(ATTNSCOPE_TEST_DATA) / "hybrid" / "i64_s8_16_k3_d32_h2_l2";
    const std::string pixels = " --pixels " + quoted(dir / "pixels.npy");
    const fs::path chain = edited_copy(dir / "model.safetensors", "cli_chain.safetensors", [](Tensors& t, Metadata&) {
        for (auto& [name, a] : t)
            if (name == "patch_embed.backbone.3.weight") a = xt::zeros<float>({std::size_t{16}, std::size_t{5}, std::size_t{3}, std::size_t{3}});
    });
    refused("--model " + quoted(chain) + pixels,
            chain.string() + ": patch_embed.backbone.3.weight has shape [16, 5, 3, 3]: its 5 input channels do not "
                             "chain with the 8 output channels of patch_embed.backbone.0.weight");
    const fs::path nan = edited_copy(dir / "model.safetensors", "cli_nan.safetensors", [](Tensors& t, Metadata&) {
        for (auto& [name, a] : t)
            if (name == "patch_embed.backbone.0.weight") a(0, 0, 1, 1) = std::nanf("");
    });
    refused("--model " + quoted(nan) + pixels, nan.string() + ": patch_embed.backbone.0.weight holds NaN at element 4");
    fs::remove(chain);
    fs::remove(nan);
}

TEST_CASE("vit --drop-path --training on a batch: the fixture's masks, torch's steps and logits, the dropped samples") {
    const fs::path dir = fs::path(ATTNSCOPE_TEST_DATA) / "drop_path" / "b4_i32_p8_d32_h2_l3_dp0.6";
    const auto meta = nlohmann::json::parse(std::ifstream(dir / "meta.json"));
    const fs::path dump = temp_path("dump_drop_path");
    const std::string args = "--model " + quoted(dir / "model.safetensors") + " --pixels " + quoted(dir / "pixels.npy") +
                             " --drop-path 0.6 --training --seed " + std::to_string(meta["seed"].get<int>());
    const ProcessResult r = vit(args + " --dump " + quoted(dump));
    REQUIRE(r.status == 0);
    CHECK(r.out.find("LayerScale: ls1.gamma and ls2.gamma in every block") != std::string::npos);
    CHECK(r.out.find("drop path (stochastic depth): rate 0.6 over 3 blocks, training mode") != std::string::npos);
    CHECK(r.out.find("block 0 drop_path1 (p = 0): identity") != std::string::npos);
    CHECK(r.out.find("the residual carries x alone (max |residual - x| = 0.000000)") != std::string::npos);
    for (std::size_t i = 0; i < meta["depth"].get<std::size_t>(); ++i)
        for (const std::string step : {"ls1", "drop_path1", "ls2", "drop_path2"}) {
            const std::string file = "block" + std::to_string(i) + "_" + step + ".npy";
            CAPTURE(file);
            CHECK(worst_vs_torch_scale(read_npy((dump / file).string()), read_npy((dir / file).string())) <= 1.0);
            if (step.rfind("drop_path", 0) == 0)
                CHECK(read_npy((dump / ("block" + std::to_string(i) + "_" + step + "_mask.npy")).string()) ==
                      read_npy((dir / ("block" + std::to_string(i) + "_" + step + "_mask.npy")).string()));
        }
    CHECK(worst_vs_torch(read_npy((dump / "logits.npy").string()), read_npy((dir / "logits.npy").string())) <= 1.0);
    fs::remove_all(dump);

    const auto j = nlohmann::json::parse(vit(args + " --json").out);
    CHECK(j["drop_path"]["training"] == true);
    CHECK(j["drop_path"]["steps"].size() == 6);
    std::size_t dropped = 0;
    for (const auto& s : j["drop_path"]["steps"]) dropped += s["dropped"].size();
    CHECK(dropped == meta["dropped_branches_after_block0"].get<std::size_t>());

    const ProcessResult eval = vit("--model " + quoted(dir / "model.safetensors") + " --pixels " +
                                   quoted(dir / "pixels.npy") + " --drop-path 0.6");
    CHECK(eval.out.find("eval mode: every drop_path step is the identity (add --training to draw the masks)") !=
          std::string::npos);
}

TEST_CASE("vit --drop-path and --training refuse bad values with one line") {
    const std::string demo = "--model " + quoted(kDemo) + " --image " + quoted(kSample);
    refused(demo + " --training", "--training needs --drop-path P");
    refused(demo + " --drop-path 1", "--drop-path: the drop-path rate 1 must be at least 0 and below 1");
    refused(demo + " --drop-path 1.5", "--drop-path");
    refused(demo + " --drop-path 0.1 --training --seed x", "--seed");
}
