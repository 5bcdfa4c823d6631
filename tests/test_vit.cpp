// The Vision Transformer: its ops against naive loops, the whole model against PyTorch
// (tools/make_vit_golden.py), checkpoint errors, a fresh model, and the bundled demo model's
// accuracy measured by attnscope on held-out images (tools/train_demo_vit.py).
#include <doctest/doctest.h>

#include <unistd.h>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "image.hpp"
#include "io.hpp"
#include "ops.hpp"
#include "random.hpp"
#include "vit.hpp"
#include "vit_fixtures.hpp"

using namespace attnscope;
namespace fs = std::filesystem;
using attnscope::testing::edited_copy;
using attnscope::testing::Metadata;
using attnscope::testing::mosaic_tile;
using attnscope::testing::random_tensor;
using attnscope::testing::read_json;
using attnscope::testing::refused;
using attnscope::testing::Tensors;
using attnscope::testing::worst_vs_torch;

namespace {

const fs::path kVit = fs::path(ATTNSCOPE_TEST_DATA) / "vit";
const fs::path kDemoModel =
    (fs::path(ATTNSCOPE_TEST_DATA) / ".." / ".." / "assets" / "models" / "demo_vit.safetensors").lexically_normal();
constexpr std::uint64_t kNoLimit = UINT64_MAX;

}  // namespace

// ---- ops ------------------------------------------------------------------------------------
TEST_CASE("layer_norm equals a naive loop with the biased variance and eps") {
    const Tensor x = random_tensor({2, 3, 6}, {"B", "N", "C"}, 1);
    const Array w = random_tensor({6}, {"C"}, 2).values, b = random_tensor({6}, {"C"}, 3).values;
    const Tensor y = layer_norm(x, w, b, 1e-6f);
    CHECK(y.axes == x.axes);
    for (std::size_t r = 0; r < 6; ++r) {
        double mean = 0, var = 0;
        for (std::size_t j = 0; j < 6; ++j) mean += x.values.data()[r * 6 + j] / 6.0;
        for (std::size_t j = 0; j < 6; ++j) var += std::pow(x.values.data()[r * 6 + j] - mean, 2) / 6.0;
        for (std::size_t j = 0; j < 6; ++j) {
            const double expected = (x.values.data()[r * 6 + j] - mean) / std::sqrt(var + 1e-6) * w(j) + b(j);
            CHECK(y.values.data()[r * 6 + j] == doctest::Approx(expected).epsilon(1e-5));
        }
    }
    CHECK_THROWS_WITH_AS(layer_norm(x, xt::ones<float>({5}), b, 1e-6f, "norm1.weight"),
                         "layer_norm: norm1.weight has shape [5], expected [6] to match x [2, 3, 6]'s last axis (C=6)",
                         ShapeError);
}

TEST_CASE("gelu is the exact erf form") {
    const Tensor x = random_tensor({4, 5}, {"N", "M"}, 4);
    const Tensor y = gelu(x);
    for (std::size_t i = 0; i < x.values.size(); ++i) {
        const double v = x.values.data()[i];
        CHECK(y.values.data()[i] == doctest::Approx(0.5 * v * (1 + std::erf(v / std::sqrt(2.0)))).epsilon(1e-6));
    }
    CHECK(gelu(Tensor{Array{-10.0f, 0.0f, 10.0f}, {"x"}}).values == Array{-0.0f, 0.0f, 10.0f});
}

TEST_CASE("add takes equal shapes and broadcasts leading 1s like x + pos_embed") {
    const Tensor a = random_tensor({2, 3, 4}, {"B", "N", "C"}, 5);
    const Tensor same = random_tensor({2, 3, 4}, {"B", "N", "C"}, 6);
    const Tensor pos = random_tensor({1, 3, 4}, {"1", "N", "C"}, 7);
    const Tensor sum = add(a, same), shifted = add(a, pos);
    for (std::size_t b = 0; b < 2; ++b)
        for (std::size_t n = 0; n < 3; ++n)
            for (std::size_t c = 0; c < 4; ++c) {
                CHECK(sum.values(b, n, c) == a.values(b, n, c) + same.values(b, n, c));
                CHECK(shifted.values(b, n, c) == a.values(b, n, c) + pos.values(0, n, c));
            }
    CHECK(shifted.axes == a.axes);
    CHECK_THROWS_WITH_AS(add(a, random_tensor({1, 5, 4}, {}, 8), "x", "pos_embed"),
                         doctest::Contains("cannot add pos_embed [1, 5, 4] to x [2, 3, 4]"), ShapeError);
}

TEST_CASE("expand and concat build the class token's row before the patches") {
    const Tensor cls = random_tensor({1, 1, 4}, {"1", "1", "C"}, 9);
    const Tensor x = random_tensor({2, 3, 4}, {"B", "P", "C"}, 10);
    const Tensor tokens = concat(expand(cls, {2, 1, 4}), x, 1);
    REQUIRE(shape_of(tokens.values) == Shape{2, 4, 4});
    for (std::size_t b = 0; b < 2; ++b)
        for (std::size_t c = 0; c < 4; ++c) {
            CHECK(tokens.values(b, 0, c) == cls.values(0, 0, c));
            for (std::size_t n = 0; n < 3; ++n) CHECK(tokens.values(b, n + 1, c) == x.values(b, n, c));
        }
    CHECK_THROWS_WITH_AS(expand(cls, {2, 2, 5}), doctest::Contains("only axes of size 1 can grow"), ShapeError);
    CHECK_THROWS_WITH_AS(concat(cls, x, 1, "cls_token", "x"),
                         "cat: cannot join cls_token [1, 1, 4] and x [2, 3, 4] along axis 1: every other axis must "
                         "have the same size",
                         ShapeError);
}

TEST_CASE("patchify then linear equals a naive stride-p convolution") {
    const std::size_t B = 2, H = 8, W = 12, p = 4, D = 5;
    const Tensor x = random_tensor({B, 3, H, W}, {"B", "3", "H", "W"}, 11);
    const Array conv = random_tensor({D, 3, p, p}, {}, 12).values;  // [D, 3, p, p]
    Array flat = conv;
    flat.reshape({D, 3 * p * p});
    const Tensor y = linear(patchify(x, p), flat, nullptr, "C");  // [B, P, D]
    REQUIRE(shape_of(y.values) == Shape{B, (H / p) * (W / p), D});
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t r = 0; r < H / p; ++r)
            for (std::size_t c = 0; c < W / p; ++c)
                for (std::size_t d = 0; d < D; ++d) {
                    double sum = 0;
                    for (std::size_t ch = 0; ch < 3; ++ch)
                        for (std::size_t kh = 0; kh < p; ++kh)
                            for (std::size_t kw = 0; kw < p; ++kw)
                                sum += double(conv(d, ch, kh, kw)) * x.values(b, ch, r * p + kh, c * p + kw);
                    CHECK(y.values(b, r * (W / p) + c, d) == doctest::Approx(sum).epsilon(1e-5));
                }
    CHECK_THROWS_WITH_AS(patchify(x, 5), doctest::Contains("multiples of the patch size 5"), ShapeError);
}

// ---- the whole model against PyTorch --------------------------------------------------------
TEST_CASE("golden: logits and every block's attention equal PyTorch's within 1e-4 relative") {
    for (const std::string name : {"meta_i32_p8_d64_h4_l2", "nometa_i48_p8_d128_h2_l3"}) {
        CAPTURE(name);
        const fs::path dir = kVit / name;
        const nlohmann::json meta = read_json(dir / "meta.json");
        // Without metadata the file does not say h: meta.json (PyTorch's side) gives it.
        const std::optional<std::size_t> heads =
            meta["metadata"] ? std::nullopt : std::optional<std::size_t>(meta["heads"].get<std::size_t>());
        const VitModel model = load_vit_model((dir / "model.safetensors").string(), heads, kNoLimit);
        CHECK(model.config.image_size == meta["image_size"]);
        CHECK(model.config.patch_size == meta["patch_size"]);
        CHECK(model.config.dim == meta["dim"]);
        CHECK(model.config.depth == meta["depth"]);
        CHECK(model.config.heads == meta["heads"]);
        CHECK(model.config.mlp_hidden == meta["mlp_hidden"]);
        CHECK(model.config.classes == meta["classes"]);
        CHECK(english(model.heads_from) == (meta["metadata"] ? "metadata num_heads" : "--heads"));
        const VitTrace trace = run_vit(model, Tensor{read_npy((dir / "pixels.npy").string()), {}});
        const double logits = worst_vs_torch(trace.logits(), read_npy((dir / "logits.npy").string()));
        MESSAGE(name << ": logits at " << logits << " of the 1e-4 bound");
        CHECK(logits <= 1.0);
        REQUIRE(trace.blocks.size() == model.config.depth);
        for (std::size_t i = 0; i < trace.blocks.size(); ++i) {
            const Array torch = read_npy((dir / ("block" + std::to_string(i) + "_attn.npy")).string());
            const double attn = worst_vs_torch(trace.blocks[i].attn(), torch);
            MESSAGE(name << ": block " << i << " attention at " << attn << " of the 1e-4 bound");
            CHECK(attn <= 1.0);
            CHECK(trace.blocks[i].attention.checks.all_ok());
        }
        CHECK(trace.nonfinite.ok());
    }
}

TEST_CASE("the trace records the embedding, every block's steps and attention, and the head") {
    const fs::path dir = kVit / "meta_i32_p8_d64_h4_l2";
    const VitModel model = load_vit_model((dir / "model.safetensors").string(), 4, kNoLimit);
    const VitTrace t = run_vit(model, Tensor{read_npy((dir / "pixels.npy").string()), {}});
    std::vector<std::string> names;
    for (const Step& s : t.embed) names.push_back(s.name);
    CHECK(names == vit_embed_step_names());
    CHECK(t.at("patches").shape() == Shape{1, 16, 3 * 8 * 8});
    CHECK(t.at("tokens").shape() == Shape{1, 17, 64});
    CHECK(t.at("tokens").axes() == Axes{"B", "N", "C"});
    CHECK(t.at("cls_out").shape() == Shape{1, 64});
    CHECK(t.at("cls_out").is_view);
    CHECK(t.at("probs").shape() == Shape{1, 10});
    CHECK(double(xt::sum(t.probs())()) == doctest::Approx(1.0).epsilon(1e-6));
    CHECK(t.grid.rows == 4);
    CHECK(t.grid.token(1, 2) == 7);
    for (const VitBlockTrace& b : t.blocks) {
        names.clear();
        for (const Step& s : b.steps) names.push_back(s.name);
        CHECK(names == vit_block_step_names());
        CHECK(b.attention.steps.size() == attention_step_names().size());
        CHECK(b.attention.at("input").tensor().values == b.at("norm1").tensor().values);
        CHECK(b.at("attn_out").tensor().values == b.attention.at("out_drop").tensor().values);
        CHECK(b.at("fc1").shape() == Shape{1, 17, 256});
        CHECK(b.attn().shape()[1] == 4);
    }
    // The next block reads the previous block's output.
    CHECK(t.blocks[1].attention.at("input").tensor().values ==
          layer_norm(t.blocks[0].at("residual2").tensor(), model.weights.blocks[1].norm1_weight,
                     model.weights.blocks[1].norm1_bias, 1e-6f)
              .values);
}

TEST_CASE("each block's attention records norm1's values as its input without a copy") {
    const VitModel model = fresh_vit_model(VitConfig{}, 1);
    const VitTrace t = run_vit(model, random_tensor({1, 3, 64, 64}, {"B", "3", "H", "W"}, 5));
    for (const auto& blk : t.blocks) {
        const Step* norm1 = nullptr;
        for (const Step& s : blk.steps)
            if (s.name == "norm1") norm1 = &s;
        REQUIRE(norm1);
        CHECK(&blk.attention.at("input").tensor() == &norm1->tensor());
    }
}

TEST_CASE("run_vit reports progress over every step and can be cancelled") {
    const VitModel model = fresh_vit_model(VitConfig{}, 1);
    const Tensor x = random_tensor({1, 3, 64, 64}, {"B", "3", "H", "W"}, 13);
    std::size_t last = 0, total = 0, calls = 0;
    RunHooks hooks;
    hooks.progress = [&](std::size_t done, std::size_t all) {
        CHECK(done >= last);
        last = done;
        total = all;
        ++calls;
    };
    run_vit(model, x, hooks);
    const std::size_t expected = 5 + 4 * (8 + 17) + 4;
    CHECK(total == expected);
    CHECK(last == expected);
    CHECK(calls >= expected);
    std::atomic<bool> cancel{true};
    RunHooks cancelling;
    cancelling.cancel = &cancel;
    CHECK_THROWS_AS(run_vit(model, x, cancelling), Cancelled);
    CHECK_THROWS_WITH_AS(run_vit(model, random_tensor({1, 3, 32, 32}, {}, 14)),
                         "run_vit: pixels have shape [1, 3, 32, 32], expected [B, 3, H, W] = [B, 3, 64, 64] for this "
                         "model",
                         ShapeError);
}

// ---- reading checkpoints --------------------------------------------------------------------
TEST_CASE("heads come from --heads, else the metadata; a file that says nothing is refused, never guessed") {
    const fs::path meta = kVit / "meta_i32_p8_d64_h4_l2" / "model.safetensors";
    const fs::path nometa = kVit / "nometa_i48_p8_d128_h2_l3" / "model.safetensors";
    CHECK(load_vit_model(meta.string(), std::nullopt, kNoLimit).config.heads == 4);
    CHECK(english(load_vit_model(meta.string(), 2, kNoLimit).heads_from) == "--heads");
    CHECK(english(load_vit_model(meta.string(), std::nullopt, kNoLimit).heads_from) == "metadata num_heads");
    // D = 128 with 3 blocks is no published ViT's: dim / 64 would say 2 heads, and is not taken.
    CHECK_THROWS_WITH_AS(load_vit_model(nometa.string(), std::nullopt, kNoLimit),
                         (nometa.string() + ": the file does not say how many heads its attention has (dim 128; no "
                                            "num_heads in its metadata, in a checkpoint config or in a config.json "
                                            "beside it, and its sizes are no published ViT's); pass --heads H with H "
                                            "one of 1, 2, 4, 8, 16, 32, 64, 128").c_str(),
                         HeadsUnknown);
    CHECK(load_vit_model(nometa.string(), 8, kNoLimit).config.heads == 8);
    refused(nometa,
            nometa.string() + ": dim 128 of patch_embed.proj.weight is not divisible by 3 heads (from --heads); pass a "
                              "--heads that divides it",
            3);
    const VitModel m = load_vit_model(meta.string(), std::nullopt, kNoLimit);
    CHECK(m.labels[3] == "class 3");
    CHECK(m.mean[1] == doctest::Approx(0.4));
    CHECK(m.std[2] == doctest::Approx(0.3));
    const VitModel plain = load_vit_model(nometa.string(), 2, kNoLimit);
    CHECK(plain.mean[0] == doctest::Approx(0.485));  // ImageNet's
    CHECK(plain.labels[6] == "class 6");
}

TEST_CASE("bad checkpoints: the missing tensor, both tensors of a shape clash, bad metadata, memory") {
    const fs::path good = kVit / "meta_i32_p8_d64_h4_l2" / "model.safetensors";
    auto replaced = [&](const std::string& tensor, const Array& value) {
        return edited_copy(good, "replaced", [&](Tensors& t, Metadata&) {
            for (auto& [name, a] : t)
                if (name == tensor) a = value;
        });
    };
    for (const char* tensor : {"blocks.1.mlp.fc2.bias", "cls_token", "blocks.0.norm1.weight", "head.bias"}) {
        const fs::path without = edited_copy(good, "without", [&](Tensors& t, Metadata&) {
            t.erase(std::find_if(t.begin(), t.end(), [&](const auto& p) { return p.first == tensor; }));
        });
        refused(without, std::string("no tensor named '") + tensor + "'");
    }
    const fs::path narrow = replaced("blocks.1.norm2.weight", xt::ones<float>({60}));
    refused(narrow, narrow.string() + ": blocks.1.norm2.weight has shape [60], expected [64] to match dim D = 64 of "
                                      "patch_embed.proj.weight");
    refused(replaced("blocks.1.mlp.fc2.weight", xt::ones<float>({64, 200})),
            "blocks.1.mlp.fc2.weight has shape [64, 200], expected [64, 256] to match M = 256 of "
            "blocks.0.mlp.fc1.weight");
    refused(replaced("pos_embed", xt::zeros<float>({1, 17, 32})),
            "pos_embed has shape [1, 17, 32], expected [1, 1 + P, D] with D = 64 from "
            "patch_embed.proj.weight [64, 3, 8, 8]");
    refused(replaced("pos_embed", xt::zeros<float>({1, 16, 64})), "15 patch positions do not form a square grid");

    auto with_metadata = [&](const std::string& key, const std::string& value) {
        return edited_copy(good, "metadata", [&](Tensors&, Metadata& m) { m[key] = value; });
    };
    refused(with_metadata("num_heads", "four"), "metadata num_heads = 'four' is not a positive whole number");
    refused(with_metadata("labels", "[\"a\", \"b\"]"), "metadata labels must be a JSON list of 10 names");
    refused(with_metadata("std", "[0.2, 0, 0.3]"), "metadata std must be a JSON list of 3 positive");
    refused(with_metadata("image_size", "224"), "metadata image_size = 224 disagrees with the tensors");

    refused(good, "to record every step, over the memory budget of", std::nullopt, 1000);
    const fs::path not_safetensors = kVit / "resize" / "not_an_image.png";
    refused(not_safetensors, not_safetensors.string() + ": ");
}

// ---- a fresh model --------------------------------------------------------------------------
TEST_CASE("sin-cos position embeddings follow MAE's 2-D formula with a zero class token") {
    const Array pos = sincos_pos_embed(8, 3);  // quarter = 2: omega = 1, 1/100
    REQUIRE(shape_of(pos) == Shape{1, 10, 8});
    for (std::size_t i = 0; i < 8; ++i) CHECK(pos(0, 0, i) == 0.0f);
    const std::size_t r = 2, c = 1, token = 1 + r * 3 + c;
    const double omega[2] = {1.0, 0.01};
    for (std::size_t i = 0; i < 2; ++i) {
        CHECK(pos(0, token, i) == doctest::Approx(std::sin(c * omega[i])));
        CHECK(pos(0, token, 2 + i) == doctest::Approx(std::cos(c * omega[i])));
        CHECK(pos(0, token, 4 + i) == doctest::Approx(std::sin(r * omega[i])));
        CHECK(pos(0, token, 6 + i) == doctest::Approx(std::cos(r * omega[i])));
    }
    CHECK_THROWS_AS(sincos_pos_embed(6, 3), ShapeError);
}

TEST_CASE("a fresh model runs at any patch size and is the same for the same seed") {
    for (std::size_t patch : {4, 8, 16}) {
        VitConfig c;
        c.patch_size = patch;
        const VitModel m = fresh_vit_model(c, 7);
        CHECK(shape_of(m.weights.pos_embed) == Shape{1, 1 + (64 / patch) * (64 / patch), 96});
        const VitTrace t = run_vit(m, random_tensor({1, 3, 64, 64}, {}, 15));
        CHECK(t.grid.patches() == (64 / patch) * (64 / patch));
        CHECK(t.nonfinite.ok());
        CHECK(t.blocks.back().attention.checks.all_ok());
    }
    CHECK(fresh_vit_model(VitConfig{}, 3).weights.blocks[2].fc1_weight ==
          fresh_vit_model(VitConfig{}, 3).weights.blocks[2].fc1_weight);
    VitConfig bad;
    bad.patch_size = 7;
    CHECK_THROWS_WITH_AS(fresh_vit_model(bad, 1), "image size 64 is not a positive multiple of the patch size 7",
                         ConfigError);
}

TEST_CASE("the memory budget refuses a trace that would not fit, before anything is allocated") {
    VitConfig big;  // ViT-B/16 on 224 x 224
    big.image_size = 224;
    big.patch_size = 16;
    big.dim = 768;
    big.depth = 12;
    big.heads = 12;
    big.mlp_hidden = 3072;
    big.classes = 1000;
    const std::uint64_t one = vit_trace_bytes(big, 1);
    CHECK(one > 100ull << 20);  // every step of 12 blocks: hundreds of MiB
    CHECK(one < 2ull << 30);
    CHECK(validate(big, 1, 2ull << 30).empty());
    CHECK(english(validate(big, 64, 2ull << 30).front()).find("over the memory budget") != std::string::npos);
    CHECK(vit_trace_bytes(big, SIZE_MAX) == UINT64_MAX);
}

// ---- the bundled demo model -----------------------------------------------------------------
TEST_CASE("demo model: attnscope's accuracy on the held-out images is at least 95%") {
    const VitModel model = load_vit_model(kDemoModel.string(), std::nullopt, default_memory_budget());
    CHECK(model.config.image_size == 64);
    CHECK(model.config.patch_size == 8);
    CHECK(model.labels == std::vector<std::string>{"circle", "square", "triangle", "cross"});
    const nlohmann::json heldout = read_json(kVit / "heldout" / "labels.json");
    const RgbImage mosaic = load_image((kVit / "heldout" / "images.png").string(), default_memory_budget());
    const std::size_t tile = heldout["tile"], columns = heldout["columns"], count = heldout["label"].size();
    REQUIRE(count >= 150);
    std::size_t correct = 0;
    double mass = 0, chance = 0;
    for (std::size_t i = 0; i < count; ++i) {
        const RgbImage image = mosaic_tile(mosaic, tile, columns, i);
        const VitTrace t = run_vit(model, image_to_pixels(image, 64, model.mean, model.std));
        const Array& probs = t.probs();
        const auto predicted = static_cast<std::size_t>(std::max_element(probs.begin(), probs.end()) - probs.begin());
        correct += predicted == heldout["label"][i].get<std::size_t>();
        // The last block's class-token attention (mean over heads) on the red shape's patches.
        const Array& attn = t.blocks.back().attn();  // [1, h, N, N]
        const std::size_t h = attn.shape()[1];
        for (std::size_t patch : heldout["target_patches"][i].get<std::vector<std::size_t>>()) {
            for (std::size_t head = 0; head < h; ++head) mass += attn(0, head, 0, 1 + patch) / h / count;
            chance += 1.0 / t.grid.patches() / count;
        }
    }
    const double accuracy = double(correct) / count;
    MESSAGE("demo model: attnscope accuracy " << correct << "/" << count << " = " << accuracy
                                              << "; last-block class-token attention on the red shape " << mass
                                              << " (chance " << chance << ")");
    CHECK(accuracy >= 0.95);
    CHECK(mass > 2 * chance);
}
