// The article's first class, MultiHeadAttention, as a reference of its own (--reference mha): its
// steps under the shared names, its lines of code, no output dropout, and the numbers PyTorch's
// run of the class itself computed (tests/data/conventions/reference_mha, written by
// tools/make_convention_fixtures.py from the class as the article writes it).
#include <doctest/doctest.h>

#include <cmath>
#include <algorithm>
#include <filesystem>
#include <map>
#include <string>

#include <nlohmann/json.hpp>
#include <xtensor/xmath.hpp>

#include "backward.hpp"
#include "cost.hpp"
#include "io.hpp"
#include "memory_budget.hpp"
#include "pipeline.hpp"
#include "provenance.hpp"
#include "run.hpp"
#include "run_attnscope.hpp"
#include "step_table.hpp"

using namespace attnscope;
using attnscope::testing::read_text;
using attnscope::testing::run_attnscope;
using attnscope::testing::scratch_dir;
namespace fs = std::filesystem;

namespace {

const fs::path kGolden = fs::path(ATTNSCOPE_TEST_DATA) / "conventions" / "reference_mha";

fs::path scratch(const std::string& name) { return scratch_dir("mha", name, false); }

AttentionConfig mha_config() {
    AttentionConfig cfg;
    cfg.reference = Reference::mha;
    cfg.batch = 2, cfg.tokens = 5, cfg.dim = 24, cfg.heads = 4;
    cfg.qkv_bias = true;
    cfg.attn_drop = 0.1f;
    return cfg;
}

}  // namespace

TEST_CASE("--reference mha: every step equals PyTorch's run of the article's MultiHeadAttention, and no out_drop") {
    const fs::path dir = scratch("golden");
    const auto r = run_attnscope("run --reference mha --weights '" + (kGolden / "weights.pt").string() + "' --input '" +
                                 (kGolden / "input.npy").string() + "' --heads 4 --dump '" + dir.string() + "'");
    REQUIRE_MESSAGE(r.status == 0, r.err);
    for (const char* step : {"input", "qkv", "qkv_split", "qkv_heads", "q", "k", "v", "k_t", "scores", "scaled", "attn",
                             "attn_drop", "context", "context_t", "merged", "out"}) {
        CAPTURE(step);
        const Array ours = read_npy((dir / (std::string(step) + ".npy")).string());
        const Array torch = read_npy((kGolden / (std::string(step) + ".npy")).string());
        REQUIRE(shape_of(ours) == shape_of(torch));
        CHECK(xt::amax(xt::abs(ours - torch))() <= 1e-5f * std::max(1.0f, xt::amax(xt::abs(torch))()));
    }
    CHECK_FALSE(fs::exists(dir / "out_drop.npy"));
    // The dump's trace names the class's own lines.
    const nlohmann::json trace = nlohmann::json::parse(read_text(dir / "trace.json"));
    std::map<std::string, std::string> code;
    for (const auto& s : trace.at("steps")) code[s.at("name").get<std::string>()] = s.at("code").get<std::string>();
    CHECK(code.at("qkv") == "self.qkv_proj(x)");
    CHECK(code.at("q") == "qkv[0]");
    CHECK(code.at("v") == "qkv[2]");
    CHECK(code.at("scaled") == "* (self.head_dim ** -0.5)");
    CHECK(code.at("attn_drop") == "self.dropout(attn)");
    CHECK(code.at("context_t") == "out.transpose(1, 2)");
    CHECK(code.at("merged") == "out.reshape(B, N, C)");
    CHECK(code.at("out") == "self.out_proj(out)");
    fs::remove_all(dir);
}

TEST_CASE("--reference mha: trace ends with the two lines debug_attention() prints") {
    const auto r = run_attnscope("trace --reference mha");
    REQUIRE_MESSAGE(r.status == 0, r.err);
    const std::string tail = "Input shape: torch.Size([2, 16, 768])\nOutput shape: torch.Size([2, 16, 768])\n";
    REQUIRE(r.out.size() > tail.size());
    CHECK(r.out.substr(r.out.size() - tail.size()) == tail);
    CHECK(r.out.find("qkv_bias=on") != std::string::npos);  // the class's qkv_proj always has a bias
    CHECK(r.out.find("out_drop") == std::string::npos);
    CHECK(run_attnscope("trace").out.find("torch.Size") == std::string::npos);  // ViTAttention prints no such lines
}

TEST_CASE("--reference mha: combinations the class does not have are refused in one line") {
    for (const char* args : {"trace --reference mha --flash", "trace --reference mha --proj-drop 0.1",
                             "trace --reference transformer"}) {
        CAPTURE(args);
        const auto r = run_attnscope(args);
        CHECK(r.status == 2);
        CHECK(r.out.empty());
        CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
        CHECK(r.err.find("reference") != std::string::npos);
    }
}

TEST_CASE("the two classes compute the same thing: qkv[0] and unbind(0) give the same view, the scales are one number") {
    AttentionConfig vit = mha_config();
    vit.reference = Reference::vit;
    vit.proj_drop = 0.0f;
    const AttentionWeights w = default_weights(mha_config());
    const Tensor x = default_input(vit);
    const Trace a = run_attention(vit, w, x), b = run_attention(mha_config(), w, x);
    REQUIRE(b.steps.size() + 1 == a.steps.size());  // all but out_drop
    for (const Step& s : b.steps) {
        CAPTURE(s.name);
        const Step& t = a.at(s.name);
        CHECK(s.tensor().values == t.tensor().values);
        CHECK(s.torch_strides == t.torch_strides);
        CHECK(s.is_view == t.is_view);
    }
    CHECK(b.at("q").op == Op::select);
    CHECK(a.at("q").op == Op::unbind);
    CHECK(b.checks.all_ok());
    // self.scale = (dim // num_heads) ** -0.5 and self.head_dim ** -0.5 for C = 24, h = 4.
    CHECK(attention_scale(mha_config()) == static_cast<float>(std::pow(6.0, -0.5)));
}

TEST_CASE("--reference mha: its defaults are nn.Linear's initialisation, and every table follows the class") {
    const AttentionConfig cfg = mha_config();
    const AttentionWeights w = default_weights(cfg);
    const float bound = 1.0f / std::sqrt(24.0f);  // nn.Linear: uniform(+-1/sqrt(in_features)) for weight and bias
    REQUIRE(w.qkv_bias);
    CHECK(xt::amax(xt::abs(w.qkv_weight))() <= bound);
    CHECK(xt::amax(xt::abs(*w.qkv_bias))() <= bound);
    CHECK(xt::amax(xt::abs(*w.qkv_bias))() > 0.5f * bound);  // drawn, not zeros as ViTAttention's init
    // The shape checks, memory, cost and provenance have no out_drop either.
    const Trace trace = run_attention(cfg);
    CHECK(trace.checks.shapes.size() == trace.steps.size());
    CHECK(step_bytes(cfg).size() == trace.steps.size() + 1);  // + the weights
    CHECK(attention_cost(cfg).steps.size() == trace.steps.size());
    CHECK(attention_graph(cfg).back().step == "out");
    CHECK(forward_lines(Reference::mha).at(static_cast<std::size_t>(step_info("q", Reference::mha)->line)) ==
          "q, k, v = qkv[0], qkv[1], qkv[2]");
    // The backward pass starts at out.
    const Gradients g = run_attention_backward(trace, w, default_grad_output(cfg));
    CHECK(g.steps.front().step == "input");
    CHECK(g.steps.back().step == "out");
}
