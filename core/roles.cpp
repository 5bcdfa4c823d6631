#include "roles.hpp"

#include <algorithm>
#include <cctype>
#include <regex>

#include "trace.hpp"

namespace attnscope {

namespace {

// Names users and libraries give the steps, with the pinned name each one means.
// Hugging Face divides its attention_scores by sqrt(c) before naming them: they are `scaled`.
struct Alias {
    const char* name;
    const char* step;
};
constexpr Alias kAliases[] = {
    {"x", "input"},           {"hidden_states", "input"},   {"inputs", "input"},        {"attn_input", "input"},
    {"mixed_qkv", "qkv"},     {"query", "q"},               {"query_layer", "q"},       {"key", "k"},
    {"key_layer", "k"},       {"value", "v"},               {"value_layer", "v"},       {"k_transposed", "k_t"},
    {"attn_scores", "scores"}, {"attention_scores", "scaled"}, {"attn_weights", "attn"}, {"attention_probs", "attn"},
    {"attn_probs", "attn"},   {"attention_weights", "attn"}, {"attn_map", "attn"},      {"attention_map", "attn"},
    {"attn_output", "out"},   {"attn_out", "out"},          {"proj", "out"},
};

// Both names hold attn @ v: before the merge [B, h, N, c] they are `context`, after it `merged`.
bool names_context(const std::string& name) { return name == "context" || name == "context_layer"; }

std::string lowercase(std::string text) {
    for (char& ch : text) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return text;
}

std::vector<std::string> components(const std::string& name) {
    std::vector<std::string> parts(1);
    for (char ch : name) {
        if (ch == '.' || ch == '/')
            parts.emplace_back();
        else
            parts.back() += ch;
    }
    return parts;
}

// The block of "blocks.3.attn.q" or "encoder.layer.3.attention": the last number after such a word.
std::optional<std::size_t> block_of(const std::vector<std::string>& parts) {
    std::optional<std::size_t> block;
    for (std::size_t i = 1; i < parts.size(); ++i) {
        const std::string word = lowercase(parts[i - 1]);
        const bool container = word == "blocks" || word == "block" || word == "layer" || word == "layers";
        const bool digits = !parts[i].empty() && parts[i].size() < 9 &&
                            std::all_of(parts[i].begin(), parts[i].end(), [](char ch) { return ch >= '0' && ch <= '9'; });
        if (container && digits) block = std::stoul(parts[i]);
    }
    return block;
}

std::optional<std::size_t> block_match(const std::ssub_match& digits) {
    if (!digits.matched) return std::nullopt;
    return std::stoul(digits.str());
}

// timm: blocks.<i>.attn.{qkv,proj}.{weight,bias}, or bare {qkv,proj}.{weight,bias}.
// Hugging Face: <...>layer.<i>.attention.attention.{query,key,value}.{weight,bias} and
// <...>layer.<i>.attention.output.dense.{weight,bias}, or the same without the prefix.
Role weight_role(const std::string& name) {
    static const std::regex timm(R"(^(?:(?:.*\.)?blocks\.(\d{1,8})\.attn\.|attn\.)?(qkv|proj)\.(weight|bias)$)");
    static const std::regex hf_qkv(
        R"(^(?:(?:.*\.)?layer\.(\d{1,8})\.attention\.attention\.|(?:attention\.)?(?:attention\.)?)(query|key|value)\.(weight|bias)$)");
    static const std::regex hf_proj(R"(^(?:(?:.*\.)?layer\.(\d{1,8})\.)?attention\.output\.dense\.(weight|bias)$)");
    std::smatch m;
    Role role;
    if (std::regex_match(name, m, timm)) {
        role = {RoleKind::Weight, m[2].str() + "." + m[3].str(), "", "timm", block_match(m[1])};
    } else if (std::regex_match(name, m, hf_qkv)) {
        role = {RoleKind::Weight, m[2].str().substr(0, 1) + "." + m[3].str(), "", "Hugging Face", block_match(m[1])};
    } else if (std::regex_match(name, m, hf_proj)) {
        role = {RoleKind::Weight, "proj." + m[2].str(), "", "Hugging Face", block_match(m[1])};
    }
    return role;
}

bool is_bias(const Role& weight) { return weight.name.size() > 5 && weight.name.substr(weight.name.size() - 5) == ".bias"; }

Role step_role(const std::string& name, const Shape& shape) {
    const std::vector<std::string> parts = components(name);
    const std::string last = lowercase(parts.back());
    Role role{RoleKind::Step, "", "", "", block_of(parts)};
    const auto& steps = attention_step_names();
    if (names_context(last))
        role.name = shape.size() == 3 ? "merged" : "context";
    else if (std::find(steps.begin(), steps.end(), last) != steps.end())
        role.name = last;
    for (const Alias& a : kAliases)
        if (role.name.empty() && last == a.name) role.name = a.step;
    if (role.name.empty()) return {};
    if (last != role.name) role.alias = parts.back();
    return role;
}

}  // namespace

Role recognize_role(const std::string& tensor_name, const Shape& shape) {
    Role role = weight_role(tensor_name);
    if (role.kind == RoleKind::Weight) return shape.size() == (is_bias(role) ? 1u : 2u) ? role : Role{};
    return step_role(tensor_name, shape);
}

std::string describe_role(const Role& role) {
    std::vector<std::string> notes;
    if (!role.alias.empty()) notes.push_back("as " + role.alias);
    if (!role.convention.empty()) notes.push_back(role.convention);
    if (role.block) notes.push_back("block " + std::to_string(*role.block));
    std::string text = role.name;
    for (std::size_t i = 0; i < notes.size(); ++i) text += (i ? ", " : " (") + notes[i];
    return notes.empty() ? text : text + ")";
}

std::vector<std::size_t> blocks_of(const std::vector<Role>& roles) {
    std::vector<std::size_t> blocks;
    for (const Role& r : roles)
        if (r.block && std::find(blocks.begin(), blocks.end(), *r.block) == blocks.end()) blocks.push_back(*r.block);
    std::sort(blocks.begin(), blocks.end());
    return blocks;
}

bool in_block(const Role& role, std::optional<std::size_t> block) { return !role.block || role.block == block; }

}  // namespace attnscope
