#include "roles.hpp"

#include <algorithm>
#include <cctype>

#include "trace.hpp"

namespace attnscope {

namespace {

// The step a file's name means by one of the names the step table says it is also called, or kNoStep.
StepId step_also_called(const std::string& name) {
    for (const StepInfo& step : attention_steps()) {
        const std::string_view names = step.also_called;
        for (std::size_t begin = 0; begin < names.size();) {
            const std::size_t end = std::min(names.find(' ', begin), names.size());
            if (names.substr(begin, end - begin) == name) return step.id;
            begin = end + 1;
        }
    }
    return kNoStep;
}

// Both names hold attn @ v: before the merge [B, h, N, c] they are `context`, after it `merged`.
bool names_context(const std::string& name) { return name == step_name(StepId::context) || name == "context_layer"; }

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

// "3" -> 3 for one to eight decimal digits; nullopt otherwise.
std::optional<std::size_t> block_number(const std::string& part) {
    if (part.empty() || part.size() > 8) return std::nullopt;
    if (!std::all_of(part.begin(), part.end(), [](char ch) { return ch >= '0' && ch <= '9'; })) return std::nullopt;
    return std::stoul(part);
}

// The parts split at '.' only (a name's '/' stays inside its part here).
std::vector<std::string> dotted(const std::string& name) {
    std::vector<std::string> parts(1);
    for (char ch : name) {
        if (ch == '.') parts.emplace_back();
        else parts.back() += ch;
    }
    return parts;
}

// parts[0, end) ends with <anything>.<container>.<i>.<tail...>: the block i, else nullopt.
// `matched` says whether the prefix had that form at all.
std::optional<std::size_t> block_prefix(const std::vector<std::string>& parts, std::size_t end, const char* container,
                                        std::initializer_list<const char*> tail, bool* matched) {
    *matched = false;
    const std::size_t need = 2 + tail.size();
    if (end < need) return std::nullopt;
    std::size_t i = end - tail.size();
    for (const char* t : tail)
        if (parts[i++] != t) return std::nullopt;
    const std::size_t at = end - need;
    if (parts[at] != container) return std::nullopt;
    const std::optional<std::size_t> block = block_number(parts[at + 1]);
    if (!block) return std::nullopt;
    // Anything may come before "<container>." but a line break (what the old pattern's ".*" refused).
    for (std::size_t k = 0; k < at; ++k)
        if (parts[k].find_first_of("\n\r") != std::string::npos) return std::nullopt;
    *matched = true;
    return block;
}

bool one_of(const std::string& word, std::initializer_list<const char*> words) {
    return std::any_of(words.begin(), words.end(), [&](const char* w) { return word == w; });
}

std::string joined(const std::vector<std::string>& parts, std::size_t end) {
    std::string out;
    for (std::size_t i = 0; i < end; ++i) out += (i ? "." : "") + parts[i];
    return out;
}

// The block in parts[0, end): the last "<blocks|block|layers|layer>.<i>" or torchvision's
// "encoder_layer_<i>"; nothing when the path has neither.
std::optional<std::size_t> any_block(const std::vector<std::string>& parts, std::size_t end) {
    std::optional<std::size_t> block;
    for (std::size_t i = 0; i < end; ++i) {
        if (i + 1 < end && one_of(parts[i], {"blocks", "block", "layers", "layer"}))
            if (const auto b = block_number(parts[i + 1])) block = b;
        if (parts[i].compare(0, 14, "encoder_layer_") == 0)
            if (const auto b = block_number(parts[i].substr(14))) block = b;
    }
    return block;
}

Role weight(const std::string& name, const char* convention, std::optional<std::size_t> block, std::string module) {
    return {RoleKind::Weight, name, "", convention, block, std::move(module)};
}

// timm: blocks.<i>.attn.{qkv,proj}.{weight,bias}, or bare {qkv,proj}.{weight,bias}.
// Hugging Face: <...>layer.<i>.attention.attention.{query,key,value}.{weight,bias} and
// <...>layer.<i>.attention.output.dense.{weight,bias}, or the same without the prefix.
// The reference article's MultiHeadAttention: <path>.{qkv_proj,out_proj}.{weight,bias}.
// nn.MultiheadAttention: <path>.in_proj_{weight,bias} (q, k, v stacked), <path>.{q,k,v}_proj_weight
// when kdim or vdim differ, <path>.out_proj.{weight,bias}. These two take the block from any
// "layers.<i>" / "encoder_layer_<i>" in the path.
// Matched part by part (linear time: a std::regex here overflowed the stack on long names).
Role weight_role(const std::string& name) {
    const std::vector<std::string> parts = dotted(name);
    const std::size_t n = parts.size();
    const std::string& last = parts[n - 1];
    if (one_of(last, {"in_proj_weight", "in_proj_bias", "q_proj_weight", "k_proj_weight", "v_proj_weight"})) {
        const std::string role = last.compare(0, 7, "in_proj") == 0 ? "qkv" + last.substr(7).replace(0, 1, ".")
                                                                     : last.substr(0, 1) + ".weight";
        return weight(role, kTorchMhaConvention, any_block(parts, n - 1), joined(parts, n - 1));
    }
    if (n < 2 || !one_of(last, {"weight", "bias"})) return {};
    const std::string& kind = last;
    const std::string& what = parts[n - 2];
    const std::size_t prefix = n - 2;  // parts[0, prefix) come before what.kind
    if (what == "qkv_proj" || what == "out_proj")
        return weight((what == "qkv_proj" ? "qkv." : "proj.") + kind,
                      what == "qkv_proj" ? kReferenceConvention : kOutProjConvention, any_block(parts, prefix),
                      joined(parts, prefix));
    bool matched = false;
    if (one_of(what, {"qkv", "proj"})) {
        if (prefix == 0 || (prefix == 1 && parts[0] == "attn"))
            return weight(what + "." + kind, kTimmConvention, std::nullopt, joined(parts, prefix));
        const auto block = block_prefix(parts, prefix, "blocks", {"attn"}, &matched);
        if (matched) return weight(what + "." + kind, kTimmConvention, block, joined(parts, prefix));
        return {};
    }
    if (one_of(what, {"query", "key", "value"})) {
        const std::string role_name = what.substr(0, 1) + "." + kind;
        if (prefix == 0 || (prefix == 1 && parts[0] == "attention") ||
            (prefix == 2 && parts[0] == "attention" && parts[1] == "attention"))
            return weight(role_name, kHuggingFaceConvention, std::nullopt, "");
        const auto block = block_prefix(parts, prefix, "layer", {"attention", "attention"}, &matched);
        if (matched) return weight(role_name, kHuggingFaceConvention, block, joined(parts, prefix - 2));
        return {};
    }
    if (what == "dense" && prefix >= 2 && parts[prefix - 1] == "output" && parts[prefix - 2] == "attention") {
        const std::size_t before = prefix - 2;  // parts[0, before) precede "attention.output.dense"
        if (before == 0) return weight("proj." + kind, kHuggingFaceConvention, std::nullopt, "");
        const auto block = block_prefix(parts, before, "layer", {}, &matched);
        if (matched) return weight("proj." + kind, kHuggingFaceConvention, block, joined(parts, before));
    }
    return {};
}

bool is_bias(const Role& weight) { return weight.name.size() > 5 && weight.name.substr(weight.name.size() - 5) == ".bias"; }

Role step_role(const std::string& name, const Shape& shape) {
    const std::vector<std::string> parts = components(name);
    const std::string last = lowercase(parts.back());
    Role role{RoleKind::Step, "", "", "", block_of(parts), ""};
    const auto& steps = attention_step_names();
    const StepId also = step_also_called(last);
    StepId step = kNoStep;
    if (names_context(last))
        step = shape.size() == 3 ? StepId::merged : StepId::context;
    else if ((last == step_name(StepId::qkv) || also == StepId::qkv) && shape.size() == 5 && shape[0] == 3)
        step = StepId::qkv_heads;  // [3, B, h, N, c]: after the reshape and permute, not self.qkv(x)
    else if (std::find(steps.begin(), steps.end(), last) != steps.end())
        step = step_id(last);
    else
        step = also;
    if (step == kNoStep) return {};
    role.name = step_name(step);
    if (last != role.name) role.alias = parts.back();
    return role;
}

}  // namespace

std::optional<std::size_t> block_in_name(const std::string& tensor_name) {
    const std::vector<std::string> parts = dotted(tensor_name);
    return any_block(parts, parts.size());
}

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

void resolve_conventions(std::vector<Role>& roles) {
    for (Role& r : roles) {
        if (r.kind != RoleKind::Weight || r.convention != kOutProjConvention) continue;
        for (const Role& sibling : roles)
            if (sibling.kind == RoleKind::Weight && sibling.module == r.module && sibling.convention != kOutProjConvention) {
                r.convention = sibling.convention;
                break;
            }
    }
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
