#include "weights.hpp"

#include <map>

#include <xtensor/xbuilder.hpp>

#include "io.hpp"
#include "roles.hpp"

namespace attnscope {

namespace {

std::string expect(const std::string& name, const Shape& actual, const std::string& formula, const Shape& expected,
                   std::size_t dim) {
    if (actual == expected) return "";
    return name + " has shape " + format_shape(actual) + ", expected " + formula + " = " + format_shape(expected) +
           " for dim " + std::to_string(dim);
}

}  // namespace

std::string check_attention_weights(const AttentionWeights& w, std::size_t C) {
    std::string problem = expect("qkv.weight", shape_of(w.qkv_weight), "[3*C, C]", {3 * C, C}, C);
    if (problem.empty() && w.qkv_bias) problem = expect("qkv.bias", shape_of(*w.qkv_bias), "[3*C]", {3 * C}, C);
    if (problem.empty()) problem = expect("proj.weight", shape_of(w.proj_weight), "[C, C]", {C, C}, C);
    if (problem.empty()) problem = expect("proj.bias", shape_of(w.proj_bias), "[C]", {C}, C);
    return problem;
}

AttentionWeights load_attention_weights(const std::string& path, std::optional<std::size_t> block,
                                        std::optional<std::size_t> dim) {
    const SafetensorsFile file = SafetensorsFile::open(path);
    const std::string prefix = block ? "blocks." + std::to_string(*block) + ".attn." : "";
    auto require = [&](const std::string& name) -> Array {
        if (!file.find(prefix + name)) {
            std::string hint = block ? "" : " (for a whole checkpoint, pass --block I to read blocks.I.attn." + name + ")";
            throw FileError(path + ": no tensor named '" + prefix + name + "'" + hint);
        }
        return file.load(prefix + name);
    };
    AttentionWeights w;
    w.qkv_weight = require("qkv.weight");
    if (file.find(prefix + "qkv.bias")) w.qkv_bias = file.load(prefix + "qkv.bias");
    w.proj_weight = require("proj.weight");
    w.proj_bias = require("proj.bias");
    if (w.qkv_weight.dimension() != 2)
        throw FileError(path + ": " + prefix + "qkv.weight has shape " + format_shape(shape_of(w.qkv_weight)) +
                        ", expected 2-D [3*C, C]");
    const std::size_t C = dim ? *dim : w.qkv_weight.shape()[1];
    const std::string problem = check_attention_weights(w, C);
    if (!problem.empty()) throw FileError(path + ": " + prefix + problem);
    pack_weights(w);
    return w;
}

Array stack_qkv(const Array& query, const Array& key, const Array& value) {
    if (shape_of(key) != shape_of(query) || shape_of(value) != shape_of(query))
        throw ShapeError("stack_qkv: query " + format_shape(shape_of(query)) + ", key " + format_shape(shape_of(key)) +
                         " and value " + format_shape(shape_of(value)) + " must have the same shape");
    return xt::concatenate(xt::xtuple(query, key, value), 0);  // [3C, ...]: rows of q, then k, then v
}

namespace {

constexpr const char* kWeightNames =
    "attnscope reads timm's qkv.weight, qkv.bias, proj.weight, proj.bias (bare or under blocks.<i>.attn.) or Hugging "
    "Face's layer.<i>.attention.attention.{query,key,value}.{weight,bias} and layer.<i>.attention.output.dense";

// The block whose weights to read: the one asked for, or the only one the file holds; nothing
// when the names carry no block.
std::optional<std::size_t> choose_block(const TensorSource& source, const std::vector<Role>& roles,
                                        std::optional<std::size_t> block) {
    const std::vector<std::size_t> blocks = blocks_of(roles);
    std::string list;
    for (std::size_t b : blocks) list += (list.empty() ? "" : ", ") + std::to_string(b);
    if (blocks.empty()) return std::nullopt;  // bare names: one layer's weights, whatever the block
    if (block && std::find(blocks.begin(), blocks.end(), *block) == blocks.end())
        throw FileError(source.path() + ": no attention weights for block " + std::to_string(*block) +
                        "; it holds blocks " + list);
    if (!block && blocks.size() > 1)
        throw FileError(source.path() + ": holds the attention weights of blocks " + list +
                        "; choose one with --block I");
    return block ? block : blocks[0];
}

}  // namespace

SourceWeights load_attention_weights(const TensorSource& source, std::optional<std::size_t> block,
                                     std::optional<std::size_t> dim) {
    std::vector<Role> roles;
    std::vector<std::string> names;
    for (const TensorInfo& t : source.tensors()) {
        Role role = recognize_role(t.name, t.shape);
        if (role.kind != RoleKind::Weight) continue;
        roles.push_back(std::move(role));
        names.push_back(t.name);
    }
    const std::string& path = source.path();
    if (roles.empty())
        throw FileError(path + ": no attention weights; " + kWeightNames);
    SourceWeights found;
    found.block = choose_block(source, roles, block);
    std::map<std::string, std::string> by_role;  // "qkv.weight" -> the name in the file
    for (std::size_t i = 0; i < roles.size(); ++i)
        if (roles[i].block == found.block) {
            by_role[roles[i].name] = names[i];
            found.convention = roles[i].convention;
        }
    const std::string where = found.block ? " for block " + std::to_string(*found.block) : "";
    auto optional_tensor = [&](const std::string& role) -> std::optional<Array> {
        const auto it = by_role.find(role);
        if (it == by_role.end()) return std::nullopt;
        return source.load(it->second);
    };
    auto tensor = [&](const std::string& role) -> Array {
        if (auto a = optional_tensor(role)) return *a;
        throw FileError(path + ": no " + role + where + "; " + kWeightNames);
    };
    AttentionWeights& w = found.weights;
    if (by_role.count("qkv.weight")) {
        w.qkv_weight = tensor("qkv.weight");
        w.qkv_bias = optional_tensor("qkv.bias");
    } else {
        w.qkv_weight = stack_qkv(tensor("q.weight"), tensor("k.weight"), tensor("v.weight"));
        if (by_role.count("q.bias") || by_role.count("k.bias") || by_role.count("v.bias"))
            w.qkv_bias = stack_qkv(tensor("q.bias"), tensor("k.bias"), tensor("v.bias"));
    }
    w.proj_weight = tensor("proj.weight");
    w.proj_bias = tensor("proj.bias");
    const std::size_t C = dim ? *dim : w.qkv_weight.shape()[1];
    const std::string problem = check_attention_weights(w, C);
    if (!problem.empty()) throw FileError(path + ": " + problem + where);
    pack_weights(w);
    return found;
}

}  // namespace attnscope
