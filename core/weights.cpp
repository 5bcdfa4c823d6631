#include "weights.hpp"

#include "io.hpp"

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
    return w;
}

}  // namespace attnscope
