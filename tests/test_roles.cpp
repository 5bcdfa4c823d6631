// Tests of core/files/roles (what a tensor is, from name and shape) and of the timm / Hugging Face
// weight loading in core/files/weights.
#include <doctest/doctest.h>

#include "io.hpp"
#include "roles.hpp"
#include "tensor_source.hpp"
#include "weights.hpp"

using namespace attnscope;

namespace {

const std::string kData = std::string(ATTNSCOPE_TEST_DATA) + "/activations/";

// A tensor name and shape, and what describe_role must say of it.
struct NamedCase {
    const char* name;
    Shape shape;
    const char* described;
};

}  // namespace

TEST_CASE("steps by their pinned names and common aliases, with the block from the name") {
    const NamedCase cases[] = {
        {"attn", {2, 4, 5, 5}, "attn"},
        {"blocks.3.attn.attn_weights", {2, 4, 5, 5}, "attn (as attn_weights, block 3)"},
        {"attention_probs", {2, 4, 5, 5}, "attn (as attention_probs)"},
        {"x", {2, 5, 24}, "input (as x)"},
        {"hidden_states", {2, 5, 24}, "input (as hidden_states)"},
        {"vit.encoder.layer.0.attention.attention.q", {2, 4, 5, 6}, "q (block 0)"},
        {"query", {2, 4, 5, 6}, "q (as query)"},
        {"key_layer", {2, 4, 5, 6}, "k (as key_layer)"},
        {"value", {2, 4, 5, 6}, "v (as value)"},
        {"attention_scores", {2, 4, 5, 5}, "scaled (as attention_scores)"},
        {"context_layer", {2, 4, 5, 6}, "context (as context_layer)"},
        {"context_layer", {2, 5, 24}, "merged (as context_layer)"},
        {"attn_output", {2, 5, 24}, "out (as attn_output)"},
        {"layers/7/qkv_heads", {3, 2, 4, 5, 6}, "qkv_heads (block 7)"},
        {"qkv", {2, 5, 72}, "qkv"},
        {"blocks.1.attn.qkv", {3, 2, 4, 5, 6}, "qkv_heads (as qkv, block 1)"},  // after reshape + permute
    };
    for (const auto& c : cases) {
        CAPTURE(c.name);
        const Role role = recognize_role(c.name, c.shape);
        CHECK(role.kind == RoleKind::Step);
        CHECK(describe_role(role) == c.described);
    }
}

TEST_CASE("weights under timm and Hugging Face names - anything else has no role") {
    const NamedCase cases[] = {
        {"qkv.weight", {72, 24}, "qkv.weight (timm)"},
        {"blocks.11.attn.qkv.bias", {72}, "qkv.bias (timm, block 11)"},
        {"module.blocks.0.attn.proj.weight", {24, 24}, "proj.weight (timm, block 0)"},
        {"vit.encoder.layer.2.attention.attention.query.weight", {24, 24}, "q.weight (Hugging Face, block 2)"},
        {"encoder.layer.0.attention.attention.value.bias", {24}, "v.bias (Hugging Face, block 0)"},
        {"vit.encoder.layer.2.attention.output.dense.bias", {24}, "proj.bias (Hugging Face, block 2)"},
    };
    for (const auto& c : cases) {
        CAPTURE(c.name);
        const Role role = recognize_role(c.name, c.shape);
        CHECK(role.kind == RoleKind::Weight);
        CHECK(describe_role(role) == c.described);
    }
    for (const auto& [name, shape] : std::vector<std::pair<const char*, Shape>>{
             {"blocks.0.mlp.fc1.weight", {48, 24}},
             {"vit.encoder.layer.0.output.dense.weight", {24, 48}},  // the MLP's dense, not attention's
             {"qkv.weight", {72, 24, 1}},                            // a weight is 2-D
             {"cls_token", {1, 1, 24}}}) {
        CAPTURE(name);
        CHECK(recognize_role(name, shape).kind == RoleKind::None);
    }
}

TEST_CASE("blocks_of and in_block") {
    const std::vector<Role> roles = {recognize_role("blocks.2.attn.q", {1}), recognize_role("attn", {1}),
                                     recognize_role("blocks.0.attn.q", {1}), recognize_role("blocks.2.attn.k", {1})};
    CHECK(blocks_of(roles) == std::vector<std::size_t>{0, 2});
    CHECK(in_block(roles[0], 2));
    CHECK(in_block(roles[1], 2));
    CHECK_FALSE(in_block(roles[2], 2));
    CHECK_FALSE(in_block(roles[0], std::nullopt));
}

TEST_CASE("Hugging Face query, key, value rows stacked equal timm's qkv") {
    // bug_softmax.safetensors carries block 0's timm weights under Hugging Face names.
    const SourceWeights hf = load_attention_weights(TensorSource::open(kData + "bug_softmax.safetensors"), {}, {});
    const SourceWeights timm = load_attention_weights(TensorSource::open(kData + "timm_model.safetensors"), 0, {});
    CHECK(hf.convention == "Hugging Face");
    CHECK(timm.convention == "timm");
    CHECK(hf.block == std::optional<std::size_t>(0));
    CHECK(hf.weights.qkv_weight == timm.weights.qkv_weight);
    REQUIRE(hf.weights.qkv_bias);
    CHECK(*hf.weights.qkv_bias == *timm.weights.qkv_bias);
    CHECK(hf.weights.proj_weight == timm.weights.proj_weight);
    CHECK(hf.weights.proj_bias == timm.weights.proj_bias);
    CHECK(shape_of(
              load_attention_weights(TensorSource::open(kData + "hf_model.safetensors"), 1, 24).weights.qkv_weight) ==
          Shape{72, 24});
    CHECK_THROWS_AS(stack_qkv(xt::zeros<float>({2, 3}), xt::zeros<float>({2, 3}), xt::zeros<float>({3, 3})),
                    ShapeError);
}

TEST_CASE("weights: several blocks need a choice - missing and mis-shaped weights say what is wrong") {
    const TensorSource model = TensorSource::open(kData + "timm_model.safetensors");
    CHECK_THROWS_WITH_AS(load_attention_weights(model, {}, {}),
                         doctest::Contains("holds the attention weights of blocks 0, 1; choose one with --block I"),
                         FileError);
    CHECK_THROWS_WITH_AS(load_attention_weights(model, 5, {}), doctest::Contains("no attention weights for block 5"),
                         FileError);
    CHECK_THROWS_WITH_AS(load_attention_weights(model, 0, 48), doctest::Contains("expected [3*C, C] = [144, 48]"),
                         FileError);
    CHECK_THROWS_WITH_AS(load_attention_weights(TensorSource::open(kData + "attn_maps.npz"), {}, {}),
                         doctest::Contains("no attention weights"), FileError);
}
