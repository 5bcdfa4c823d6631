// The weight-name matcher of core/files/roles.cpp without std::regex: it must agree with the patterns it
// replaced on every name built from checkpoint words, and answer names of any length (the regex
// version overflowed the stack on a 200 KB name, found by tests/fuzz/fuzz_roles.cpp).
#include <doctest/doctest.h>

#include <random>
#include <regex>
#include <string>
#include <vector>

#include "roles.hpp"

using namespace attnscope;

namespace {

// The patterns roles.cpp used before (the oracle): kind name convention block, or "" for none.
std::string oracle(const std::string& name) {
    static const std::regex timm(R"(^(?:(?:.*\.)?blocks\.(\d{1,8})\.attn\.|attn\.)?(qkv|proj)\.(weight|bias)$)");
    static const std::regex hf_qkv(
        R"(^(?:(?:.*\.)?layer\.(\d{1,8})\.attention\.attention\.|(?:attention\.)?(?:attention\.)?)(query|key|value)\.(weight|bias)$)");
    static const std::regex hf_proj(R"(^(?:(?:.*\.)?layer\.(\d{1,8})\.)?attention\.output\.dense\.(weight|bias)$)");
    auto block = [](const std::ssub_match& m) { return m.matched ? " block " + std::to_string(std::stoul(m.str())) : std::string(); };
    std::smatch m;
    if (std::regex_match(name, m, timm)) return m[2].str() + "." + m[3].str() + " timm" + block(m[1]);
    if (std::regex_match(name, m, hf_qkv)) return m[2].str().substr(0, 1) + "." + m[3].str() + " Hugging Face" + block(m[1]);
    if (std::regex_match(name, m, hf_proj)) return "proj." + m[2].str() + " Hugging Face" + block(m[1]);
    return "";
}

std::string ours(const std::string& name) {
    // recognize_role wants the weight's rank: 1 for a bias, 2 for a weight.
    const bool bias = name.size() >= 5 && name.compare(name.size() - 5, 5, ".bias") == 0;
    const Role r = recognize_role(name, bias ? Shape{4} : Shape{4, 4});
    if (r.kind != RoleKind::Weight) return "";
    return r.name + " " + r.convention + (r.block ? " block " + std::to_string(*r.block) : std::string());
}

}  // namespace

TEST_CASE("weight names: the linear matcher agrees with the old patterns on 200000 generated names") {
    const std::vector<std::string> words = {"blocks", "block", "layer", "attn", "attention", "output", "dense",
                                            "qkv",    "proj",  "query", "key",  "value",     "weight", "bias",
                                            "0",      "7",     "12",    "123456789", "",     "vit",    "encoder",
                                            "a\nb",   "x/y",   "Blocks", "blocks3", "00000001"};
    const std::vector<std::string> tails = {"qkv.weight", "attn.proj.bias", "attention.attention.key.weight",
                                            "attention.output.dense.bias", "blocks.3.attn.qkv.weight",
                                            "layer.2.attention.output.dense.weight", "layer.7.attention.attention.value.bias"};
    std::mt19937 rng(9);
    std::size_t weights = 0;
    for (int i = 0; i < 200000; ++i) {
        std::string name;
        const int parts = 1 + static_cast<int>(rng() % 8);
        for (int p = 0; p < parts; ++p) name += (p ? "." : "") + words[rng() % words.size()];
        if (rng() % 2) name += "." + tails[rng() % tails.size()];  // near-misses and hits
        const std::string expected = oracle(name);
        weights += !expected.empty();
        if (ours(name) != expected) {
            CAPTURE(name);
            CHECK(ours(name) == expected);
            break;
        }
    }
    CHECK(weights > 10000);  // the generator reaches the weight names
}

TEST_CASE("weight names: known checkpoint names") {
    CHECK(ours("blocks.3.attn.qkv.weight") == "qkv.weight timm block 3");
    CHECK(ours("model.blocks.11.attn.proj.bias") == "proj.bias timm block 11");
    CHECK(ours("qkv.bias") == "qkv.bias timm");
    CHECK(ours("vit.encoder.layer.0.attention.attention.query.weight") == "q.weight Hugging Face block 0");
    CHECK(ours("vit.encoder.layer.5.attention.output.dense.bias") == "proj.bias Hugging Face block 5");
    CHECK(ours("attention.output.dense.weight") == "proj.weight Hugging Face");
    CHECK(ours("blocks.3.mlp.fc1.weight") == "");
}

TEST_CASE("weight names: names of 300000 characters are answered without recursion") {
    CHECK(ours(std::string(300000, 'x')) == "");
    std::string dots;
    for (int i = 0; i < 50000; ++i) dots += "a.";
    CHECK(ours(dots + "qkv.weight") == "");
    std::string layers;
    for (int i = 0; i < 30000; ++i) layers += "layer.1.";
    CHECK(ours(layers + "attention.output.dense.weight") == "proj.weight Hugging Face block 1");
    CHECK(recognize_role(layers + "attn", {1, 2, 3, 3}).name == "attn");
}
