// The whole ViT's backward pass against PyTorch's autograd, for every family: every recorded step's
// gradient of the chosen class's logit.
//
// Truth from outside: tests/data/vit_grad/<case>/grads.npz is written by tools/make_vit_grad_golden.py,
// which runs each checkpoint step by step in float64 with retain_grad on every step and calls
// .backward() on sum_b logits[b, class_b]. The tolerance: max |ours - torch| <= 1e-4 * max |torch| over
// each step's tensor (relative to the tensor's largest magnitude).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "io.hpp"
#include "ops.hpp"
#include "run_attnscope.hpp"
#include "stem.hpp"
#include "tensor_source.hpp"
#include "vit.hpp"
#include "vit_backward.hpp"
#include "vit_fixtures.hpp"

using namespace attnscope;
using attnscope::testing::random_tensor;
using attnscope::testing::read_json;
using attnscope::testing::run_attnscope;
namespace fs = std::filesystem;

namespace {

const fs::path kData = fs::path(ATTNSCOPE_TEST_DATA);
const fs::path kGrad = kData / "vit_grad";
constexpr double kTolerance = 1e-4;

// max |ours - torch| / max |torch|.
double relative_to_max_abs(const Array& ours, const Array& torch) {
    double diff = 0.0, scale = 0.0;
    for (std::size_t i = 0; i < torch.size(); ++i) {
        diff = std::max(diff, std::fabs(double(ours.data()[i]) - torch.data()[i]));
        scale = std::max(scale, std::fabs(double(torch.data()[i])));
    }
    return diff / scale;
}

double norm_of(const Array& a) { return l2_norm(a); }

// <a, b> in double.
double dot(const Array& a, const Array& b) {
    REQUIRE(shape_of(a) == shape_of(b));
    double sum = 0.0;
    for (std::size_t i = 0; i < a.size(); ++i) sum += double(a.data()[i]) * b.data()[i];
    return sum;
}

Array difference(const Array& a, const Array& b) {
    Array d = a;
    d -= b;
    return d;
}

struct Case {
    nlohmann::json meta;
    VitModel model;
    VitTrace forward;
    VitGradients grads;
    TensorSource torch;
};

Case run_case(const std::string& name) {
    const nlohmann::json meta = read_json(kGrad / name / "meta.json");
    VitModel model = load_vit_model((kData / meta["model"].get<std::string>()).string(), meta["heads"].get<std::size_t>(),
                                    UINT64_MAX);
    model.config.drop_path_rate = meta["drop_path_rate"].get<float>();
    model.config.training = meta["training"].get<bool>();
    model.config.seed = meta["seed"].get<std::uint64_t>();
    VitTrace forward = run_vit(model, Tensor{read_npy((kData / meta["pixels"].get<std::string>()).string()), {"B", "3", "H", "W"}});
    const std::optional<std::size_t> target =
        meta["class"].is_null() ? std::nullopt : std::optional<std::size_t>(meta["class"].get<std::size_t>());
    VitGradients grads = run_vit_backward(model, forward, target);
    return {meta, std::move(model), std::move(forward), std::move(grads), TensorSource::open((kGrad / name / "grads.npz").string())};
}

// Our gradient of a fixture's step name: "pixels", "block1.fc2", "block0.attention.scores".
const GradStep* ours(const VitGradients& g, const std::string& name) {
    if (name.rfind("block", 0) != 0) return g.find(name);
    const std::size_t dot = name.find('.');
    const std::size_t block = std::stoul(name.substr(5, dot - 5));
    if (block >= g.blocks.size()) return nullptr;
    const std::string rest = name.substr(dot + 1);
    if (rest.rfind("attention.", 0) == 0) return g.blocks[block].attention.find(rest.substr(10));
    return g.blocks[block].find(rest);
}

std::size_t count_ours(const VitGradients& g) {
    std::size_t n = g.embed.size() + g.head.size();
    for (const VitBlockGradients& b : g.blocks) n += b.steps.size() + b.attention.steps.size();
    return n;
}

// Every step's gradient against torch's; returns the worst relative error.
double check_case(const std::string& name) {
    CAPTURE(name);
    const Case c = run_case(name);
    CHECK(c.grads.classes == c.meta["classes"].get<std::vector<std::size_t>>());
    // The fixture has one gradient for each step we record (probs aside), and the same names.
    CHECK(c.torch.tensors().size() == count_ours(c.grads));
    double worst = 0.0;
    std::string worst_step;
    for (const TensorInfo& info : c.torch.tensors()) {
        CAPTURE(info.name);
        const GradStep* g = ours(c.grads, info.name);
        REQUIRE(g != nullptr);
        const Array torch = c.torch.load(info.name);
        REQUIRE(shape_of(g->tensor.values) == shape_of(torch));
        CHECK(*std::max_element(torch.begin(), torch.end(), [](float a, float b) { return std::fabs(a) < std::fabs(b); }) != 0.0f);
        const double rel = relative_to_max_abs(g->tensor.values, torch);
        CHECK(rel <= kTolerance);
        if (rel > worst) worst = rel, worst_step = info.name;
    }
    MESSAGE(name << ": worst gradient error " << worst << " of the max |grad| (step " << worst_step << ", "
                 << c.torch.tensors().size() << " steps)");
    return worst;
}

}  // namespace

TEST_CASE("ViT backward, timm: every step's gradient of the predicted class's logit equals autograd's") {
    check_case("timm");
}

TEST_CASE("ViT backward, torchvision VisionTransformer: every step's gradient equals autograd's, for the prediction and for class 3") {
    check_case("torchvision");
    check_case("torchvision_class3");
}

TEST_CASE("ViT backward, Hugging Face ViTForImageClassification (eps 1e-12, / sqrt(c)): every step's gradient equals autograd's") {
    check_case("hf");
}

TEST_CASE("ViT backward, timm DeiT distilled: the mean of both heads sends gradient into the class and distillation tokens") {
    check_case("deit_distilled");
    // Both prefix tokens' rows of grad_norm are nonzero: x[:, 0] feeds head, x[:, 1] head_dist.
    const Case c = run_case("deit_distilled");
    const Array& g = c.grads.find("norm")->tensor.values;  // [B, N, D]
    const std::size_t D = g.shape()[2];
    for (std::size_t token : {0, 1}) {
        double sq = 0.0;
        for (std::size_t d = 0; d < D; ++d) sq += double(g(0, token, d)) * g(0, token, d);
        CHECK(sq > 0.0);
    }
}

TEST_CASE("ViT backward, hybrid ViT: the gradient flows back through the CNN stem (conv, BatchNorm in eval, ReLU) to the pixels") {
    check_case("hybrid");
}

TEST_CASE("ViT backward, LayerScale and DropPath: in eval (identity) and in training (the forward's masks) every step equals autograd's") {
    check_case("layer_scale_drop_path_eval");
    check_case("layer_scale_drop_path_training");
    // A dropped sample's branch gets exactly no gradient at the branch's output.
    const Case c = run_case("layer_scale_drop_path_training");
    std::size_t dropped = 0;
    for (std::size_t i = 0; i < c.forward.blocks.size(); ++i)
        for (const DropPathRecord& r : c.forward.blocks[i].drop_paths)
            for (std::size_t b = 0; b < r.mask.size(); ++b)
                if (r.dropped(b)) {
                    ++dropped;
                    const Array& g = c.grads.blocks[i].find(r.step == "drop_path1" ? "ls1" : "ls2")->tensor.values;
                    const std::size_t per = g.size() / g.shape()[0];
                    CHECK(std::all_of(g.data() + b * per, g.data() + (b + 1) * per, [](float v) { return v == 0.0f; }));
                }
    CHECK(dropped >= 2);
}

TEST_CASE("ViT backward: per block, the gradient norms entering and leaving each branch and the residual stream equal autograd's") {
    for (const char* name : {"timm", "layer_scale_drop_path_eval", "hybrid"}) {
        CAPTURE(name);
        const Case c = run_case(name);
        for (std::size_t i = 0; i < c.grads.blocks.size(); ++i) {
            CAPTURE(i);
            const std::string p = "block" + std::to_string(i) + ".";
            const Array residual2 = c.torch.load(p + "residual2"), residual1 = c.torch.load(p + "residual1");
            const Array input = i == 0 ? c.torch.load("embed") : c.torch.load("block" + std::to_string(i - 1) + ".residual2");
            const VitBlockFlow& f = c.grads.blocks[i].flow;
            // torch: grad_residual1 = grad_residual2 + the MLP's share; grad_x = grad_residual1 + the attention's.
            const std::map<std::string, std::pair<double, double>> pairs{
                {"residual_out", {f.residual_out, norm_of(residual2)}},
                {"residual_mid", {f.residual_mid, norm_of(residual1)}},
                {"residual_in", {f.residual_in, norm_of(input)}},
                {"mlp_out", {f.mlp_out, norm_of(c.torch.load(p + "fc2"))}},
                {"mlp_in", {f.mlp_in, norm_of(difference(residual1, residual2))}},
                {"attn_out", {f.attn_out, norm_of(c.torch.load(p + "attn_out"))}},
                {"attn_in", {f.attn_in, norm_of(difference(input, residual1))}}};
            for (const auto& [what, values] : pairs) {
                CAPTURE(what);
                CHECK(values.first == doctest::Approx(values.second).epsilon(1e-4));
                CHECK(values.second > 0.0);
            }
        }
    }
}

TEST_CASE("the embedding's and the stem's backward ops are the adjoints of their linear forwards: <f(x), g> = <x, f'(g)>") {
    const Tensor x = random_tensor({2, 3, 8, 8}, {"B", "C", "H", "W"}, 1);
    // patchify: a permutation of the pixels.
    const Tensor gp = random_tensor({2, 4, 3 * 4 * 4}, {}, 2);
    CHECK(dot(patchify(x, 4).values, gp.values) == doctest::Approx(dot(x.values, patchify_backward(gp, shape_of(x.values), 4).values)));
    // im2col with overlapping, padded windows: the backward adds every window's share back.
    const Tensor gw = random_tensor({2, 16, 3 * 5 * 5}, {}, 3);
    CHECK(dot(im2col(x, 5, 2, 2).values, gw.values) ==
          doctest::Approx(dot(x.values, im2col_backward(gw, shape_of(x.values), 5, 2, 2).values)));
    // conv2d without a bias is linear in x and in the weight.
    const Array w = random_tensor({6, 3 * 3 * 3}, {}, 4).values;
    const Tensor gc = random_tensor({2, 6, 4, 4}, {}, 5);
    const LinearGrads cg = conv2d_backward(x, w, false, 3, 2, 1, gc);
    const double y_g = dot(conv2d(x, w, nullptr, 3, 2, 1).values, gc.values);
    CHECK(y_g == doctest::Approx(dot(x.values, cg.x.values)));
    CHECK(y_g == doctest::Approx(dot(w, cg.weight)));
    // channels_to_tokens: a transpose; concat: two slabs.
    const Tensor gt = random_tensor({2, 64, 3}, {}, 6);
    CHECK(dot(channels_to_tokens(x).values, gt.values) ==
          doctest::Approx(dot(x.values, channels_to_tokens_backward(gt, shape_of(x.values)).values)));
    const Tensor a = random_tensor({2, 1, 5}, {}, 7), b = random_tensor({2, 3, 5}, {}, 8), gy = random_tensor({2, 4, 5}, {}, 9);
    const ConcatGrads kg = concat_backward(gy, 1, 1);
    CHECK(dot(concat(a, b, 1).values, gy.values) == doctest::Approx(dot(a.values, kg.a.values) + dot(b.values, kg.b.values)));
    // BatchNorm in eval is affine per channel: its backward scales by weight / sqrt(var + eps).
    const Array zeros = xt::zeros<float>({3});
    const Array weight = random_tensor({3}, {}, 10).values, var = xt::abs(random_tensor({3}, {}, 11).values) + 0.5f;
    const Tensor gb = random_tensor({2, 3, 8, 8}, {}, 12);
    CHECK(dot(batch_norm_eval(x, weight, zeros, zeros, var, 1e-5f).values, gb.values) ==
          doctest::Approx(dot(x.values, batch_norm_eval_backward(weight, var, 1e-5f, gb).values)));
    // ReLU passes the gradient where its output is positive, and nothing elsewhere.
    const Tensor y = relu(x), gr = relu_backward(y, gb);
    for (std::size_t i = 0; i < y.values.size(); ++i)
        CHECK(gr.values.data()[i] == (y.values.data()[i] > 0.0f ? gb.values.data()[i] : 0.0f));
}

TEST_CASE("ViT backward: a class out of range and a model without a classifier are refused with coded messages") {
    const Case c = run_case("torchvision");
    CHECK_THROWS_WITH_AS(run_vit_backward(c.model, c.forward, std::size_t{5}),
                         "--class 5 is out of range: the model has 5 classes (0 to 4)", ConfigError);
    const VitModel base = load_vit_model((kData / "vit_families/hf_model/pytorch_model.bin").string(), 4, UINT64_MAX);
    const VitTrace t = run_vit(base, Tensor{read_npy((kData / "vit_families/pixels.npy").string()), {"B", "3", "H", "W"}});
    CHECK_THROWS_AS(run_vit_backward(base, t), ConfigError);
}

TEST_CASE("vit --json: the chosen class and every block's gradient flow; --class K picks the class, out of range exits 2") {
    const std::string common = "vit --model '" + (kData / "vit_families/torchvision/model.pth").string() + "' --pixels '" +
                               (kData / "vit_families/pixels.npy").string() + "' --heads 4";
    for (const char* name : {"torchvision", "torchvision_class3"}) {
        CAPTURE(name);
        const nlohmann::json meta = read_json(kGrad / name / "meta.json");
        const bool asked = !meta["class"].is_null();
        const auto r = run_attnscope(common + " --json" + (asked ? " --class 3" : ""));
        REQUIRE_MESSAGE(r.status == 0, r.err);
        const nlohmann::json j = nlohmann::json::parse(r.out)["gradients"];
        CHECK(j["classes"] == meta["classes"]);
        CHECK(j["predicted"] == !asked);
        REQUIRE(j["blocks"].size() == 2);
        const TensorSource torch = TensorSource::open((kGrad / name / "grads.npz").string());
        for (std::size_t i = 0; i < 2; ++i) {
            const std::string p = "block" + std::to_string(i) + ".";
            const nlohmann::json& b = j["blocks"][i];
            CHECK(b["block"] == i);
            CHECK(b["residual"]["out"].get<double>() == doctest::Approx(norm_of(torch.load(p + "residual2"))).epsilon(1e-4));
            CHECK(b["mlp"]["out"].get<double>() == doctest::Approx(norm_of(torch.load(p + "fc2"))).epsilon(1e-4));
            CHECK(b["attention"]["out"].get<double>() == doctest::Approx(norm_of(torch.load(p + "attn_out"))).epsilon(1e-4));
        }
    }
    const auto text = run_attnscope(common + " --class 3");
    REQUIRE_MESSAGE(text.status == 0, text.err);
    CHECK(text.out.find("gradient of the logit of class 3") != std::string::npos);

    const auto bad = run_attnscope(common + " --class 5");
    CHECK(bad.status == 2);
    CHECK(bad.err.find("--class 5") != std::string::npos);
    CHECK(std::count(bad.err.begin(), bad.err.end(), '\n') == 1);
    CHECK(bad.out.empty());
}

TEST_CASE("vit --json: the backward pass runs only when the trace takes at most half the memory budget; else gradients is null") {
    const fs::path model = kData / ".." / ".." / "assets" / "models" / "demo_vit.safetensors";
    const fs::path image = kData / ".." / ".." / "assets" / "samples" / "06_triangle.png";
    const std::uint64_t bytes = vit_trace_bytes(load_vit_model(model.string(), std::nullopt, UINT64_MAX).config, 1);
    const std::string common = "vit --model '" + model.string() + "' --image '" + image.string() + "' --json";
    // 1.5 times the trace: the forward fits, forward and backward do not.
    const std::string tight = std::to_string((bytes * 3 / 2 + 1023) / 1024) + "K";
    const auto fits = run_attnscope(common), over = run_attnscope(common + " --memory-budget " + tight);
    REQUIRE_MESSAGE(fits.status == 0, fits.err);
    REQUIRE_MESSAGE(over.status == 0, over.err);
    CHECK(nlohmann::json::parse(fits.out)["gradients"]["blocks"].size() == 4);
    CHECK(nlohmann::json::parse(over.out)["gradients"].is_null());
}
