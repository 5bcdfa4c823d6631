#include "weights.hpp"

#include <map>

#include <xtensor/xbuilder.hpp>

#include "io.hpp"
#include "roles.hpp"

namespace attnscope {


AttentionWeights load_attention_weights(const std::string& path, std::optional<std::size_t> block,
                                        std::optional<std::size_t> dim) {
    return load_attention_weights(TensorSource::open(path), block, dim).weights;
}

Array stack_qkv(const Array& query, const Array& key, const Array& value) {
    if (shape_of(key) != shape_of(query) || shape_of(value) != shape_of(query))
        throw ShapeError(Message(Msg::weights_qkv_differ, {{"q_shape", format_shape(shape_of(query))},
                                                           {"k_shape", format_shape(shape_of(key))},
                                                           {"v_shape", format_shape(shape_of(value))}}));
    return xt::concatenate(xt::xtuple(query, key, value), 0);  // [3C, ...]: rows of q, then k, then v
}

namespace {

// The block whose weights to read: the one asked for, or the only one the file holds; nothing
// when the names carry no block.
std::optional<std::size_t> choose_block(const TensorSource& source, const std::vector<Role>& roles,
                                        std::optional<std::size_t> block) {
    const std::vector<std::size_t> blocks = blocks_of(roles);
    std::string list;
    for (std::size_t b : blocks) list += (list.empty() ? "" : ", ") + std::to_string(b);
    if (blocks.empty()) return std::nullopt;  // bare names: one layer's weights, whatever the block
    if (block && std::find(blocks.begin(), blocks.end(), *block) == blocks.end())
        throw FileError(Message(Msg::weights_no_such_block,
                                {{"file", source.path()}, {"block", std::to_string(*block)}, {"blocks", list}}));
    if (!block && blocks.size() > 1)
        throw FileError(Message(Msg::weights_choose_block, {{"file", source.path()}, {"blocks", list}}));
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
    resolve_conventions(roles);
    const std::string& path = source.path();
    const Message conventions(Msg::weights_conventions);
    if (roles.empty()) throw FileError(Message(Msg::weights_none, {{"file", path}}).with("conventions", conventions));
    SourceWeights found;
    found.block = choose_block(source, roles, block);
    const Message where = found.block ? Message(Msg::weights_for_block, {{"block", std::to_string(*found.block)}}) : Message();
    std::map<std::string, std::string> by_role;  // "qkv.weight" -> the name in the file
    std::string module;
    for (std::size_t i = 0; i < roles.size(); ++i) {
        if (roles[i].block != found.block) continue;
        if (!by_role.empty() && roles[i].module != module)  // e.g. an encoder's and a decoder's attention
            throw FileError(Message(Msg::weights_two_layers, {{"file", path}, {"first", module}, {"second", roles[i].module}})
                                .with("where", where));
        module = roles[i].module;
        if (!by_role.emplace(roles[i].name, names[i]).second)
            throw FileError(Message(Msg::weights_role_twice, {{"file", path}, {"first", by_role[roles[i].name]},
                                                              {"second", names[i]}, {"role", roles[i].name}})
                                .with("where", where));
        if (found.convention.empty() || found.convention == kOutProjConvention) found.convention = roles[i].convention;
    }
    auto optional_tensor = [&](const std::string& role) -> std::optional<Array> {
        const auto it = by_role.find(role);
        if (it == by_role.end()) return std::nullopt;
        return source.load(it->second);
    };
    auto tensor = [&](const std::string& role) -> Array {
        if (auto a = optional_tensor(role)) return *a;
        throw FileError(Message(Msg::weights_missing_role, {{"file", path}, {"role", role}, {"convention", found.convention}})
                            .with("where", where)
                            .with("conventions", conventions));
    };
    // q, k, v of one shape stacked in that order; keys and values of another width are cross-attention.
    auto stacked = [&](const std::string& part) -> Array {
        const Array q = tensor("q." + part), k = tensor("k." + part), v = tensor("v." + part);
        if (shape_of(k) != shape_of(q) || shape_of(v) != shape_of(q))
            throw FileError(Message(Msg::weights_cross_attention,
                                    {{"file", path}, {"q", by_role["q." + part]}, {"q_shape", format_shape(shape_of(q))},
                                     {"k", by_role["k." + part]}, {"k_shape", format_shape(shape_of(k))},
                                     {"v", by_role["v." + part]}, {"v_shape", format_shape(shape_of(v))}})
                                .with("where", where));
        return stack_qkv(q, k, v);
    };
    AttentionWeights& w = found.weights;
    // q, k, v as one [3C, C] weight, or three [C, C] ones.
    w.qkv_weight = by_role.count("qkv.weight") ? tensor("qkv.weight") : stacked("weight");
    if (by_role.count("qkv.bias"))
        w.qkv_bias = tensor("qkv.bias");
    else if (by_role.count("q.bias") || by_role.count("k.bias") || by_role.count("v.bias"))
        w.qkv_bias = stacked("bias");
    w.proj_weight = tensor("proj.weight");
    w.proj_bias = tensor("proj.bias");
    const std::size_t C = dim ? *dim : w.qkv_weight.shape()[1];
    const Message problem = check_attention_weights(w, C);
    if (!problem.empty())
        throw FileError(Message(Msg::weights_problem, {{"file", path}}).with("problem", problem).with("where", where));
    pack_weights(w);
    return found;
}

}  // namespace attnscope
