// Reading a ViT checkpoint of any family (core/files/vit_checkpoint.hpp): names, shapes, the
// head count, the CNN stem, labels and normalisation, then the weights.
#include "vit_checkpoint.hpp"

#include <algorithm>
#include <cmath>
#include <exception>
#include <string>

#include <nlohmann/json.hpp>

#include "heads.hpp"
#include "io.hpp"
#include "weights.hpp"

namespace attnscope {

namespace {

// ---- reading a checkpoint -------------------------------------------------------------------
// The names of one family's tensors. '#' stands for a block's index; names are relative to the
// model's prefix (what precedes the patch embedding's name in the file), the head's to
// head_prefix (Hugging Face's classifier sits beside "vit.", not in it).
struct VitNames {
    VitFamily family;
    const char* patch;  // the conv: <patch>.weight [D, 3, p, p], <patch>.bias
    const char* cls;
    const char* dist;   // nullptr: the family has no distillation token
    const char* pos;
    const char* block;  // the prefix of block #
    // {weight, bias} within a block; qkv fused [3D, D], or q, k, v separate [D, D]
    const char* norm1[2];
    const char* qkv[2];
    const char* q[2];
    const char* k[2];
    const char* v[2];
    const char* proj[2];
    const char* norm2[2];
    const char* fc1[2];
    const char* fc2[2];
    const char* norm[2];
    const char* head[2];  // relative to head_prefix
    const char* head_dist[2];
    Msg listing;  // what a checkpoint of the family holds, for "no tensor named" messages
    const char* ls[2] = {};  // LayerScale's gamma of the two branches; nullptr: the family has none
};

constexpr VitNames kTimmNames = {
    VitFamily::Timm, "patch_embed.proj", "cls_token", "dist_token", "pos_embed", "blocks.#.",
    {"norm1.weight", "norm1.bias"}, {"attn.qkv.weight", "attn.qkv.bias"}, {}, {}, {},
    {"attn.proj.weight", "attn.proj.bias"}, {"norm2.weight", "norm2.bias"}, {"mlp.fc1.weight", "mlp.fc1.bias"},
    {"mlp.fc2.weight", "mlp.fc2.bias"}, {"norm.weight", "norm.bias"}, {"head.weight", "head.bias"},
    {"head_dist.weight", "head_dist.bias"},
    Msg::vit_listing_timm,
    {"ls1.gamma", "ls2.gamma"}};

constexpr VitNames kTorchvisionNames = {
    VitFamily::Torchvision, "conv_proj", "class_token", nullptr, "encoder.pos_embedding", "encoder.layers.encoder_layer_#.",
    {"ln_1.weight", "ln_1.bias"}, {"self_attention.in_proj_weight", "self_attention.in_proj_bias"}, {}, {}, {},
    {"self_attention.out_proj.weight", "self_attention.out_proj.bias"}, {"ln_2.weight", "ln_2.bias"},
    {"mlp.0.weight", "mlp.0.bias"}, {"mlp.3.weight", "mlp.3.bias"}, {"encoder.ln.weight", "encoder.ln.bias"},
    {"heads.head.weight", "heads.head.bias"}, {},
    Msg::vit_listing_torchvision};

constexpr VitNames kHuggingFaceNames = {
    VitFamily::HuggingFace, "embeddings.patch_embeddings.projection", "embeddings.cls_token", nullptr,
    "embeddings.position_embeddings", "encoder.layer.#.", {"layernorm_before.weight", "layernorm_before.bias"}, {},
    {"attention.attention.query.weight", "attention.attention.query.bias"},
    {"attention.attention.key.weight", "attention.attention.key.bias"},
    {"attention.attention.value.weight", "attention.attention.value.bias"},
    {"attention.output.dense.weight", "attention.output.dense.bias"}, {"layernorm_after.weight", "layernorm_after.bias"},
    {"intermediate.dense.weight", "intermediate.dense.bias"}, {"output.dense.weight", "output.dense.bias"},
    {"layernorm.weight", "layernorm.bias"}, {"classifier.weight", "classifier.bias"}, {},
    Msg::vit_listing_hf};

constexpr const VitNames* kVitFamilies[] = {&kTimmNames, &kTorchvisionNames, &kHuggingFaceNames};

bool ends_with(const std::string& text, const std::string& suffix) {
    return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string with_block(const char* pattern, std::size_t block) {
    std::string out = pattern;
    const std::size_t hash = out.find('#');
    return hash == std::string::npos ? out : out.replace(hash, 1, std::to_string(block));
}

// The family whose patch embedding `source` names, and the prefix before it ("", "model.", "vit.").
struct FoundFamily {
    const VitNames* names = nullptr;  // null: no patch embedding of any family
    std::string prefix;
};

FoundFamily find_family(const TensorSource& source) {
    for (const TensorInfo& t : source.tensors())
        for (const VitNames* family : kVitFamilies)
            if (const std::string patch = std::string(family->patch) + ".weight"; ends_with(t.name, patch))
                return {family, t.name.substr(0, t.name.size() - patch.size())};
    return {};
}

// Tensors of one checkpoint, looked up by the names of its family; every error starts with the path.
class Checkpoint {
public:
    explicit Checkpoint(TensorSource source) : source_(std::move(source)) {
        FoundFamily found = find_family(source_);
        names_ = found.names;
        prefix_ = std::move(found.prefix);
        if (!names_)
            fail(Message(Msg::vit_no_patch)
                     .with("timm", Message(kTimmNames.listing))
                     .with("torchvision", Message(kTorchvisionNames.listing))
                     .with("hf", Message(kHuggingFaceNames.listing)));
        head_prefix_ = names_->family == VitFamily::HuggingFace && ends_with(prefix_, "vit.")
                           ? prefix_.substr(0, prefix_.size() - 4)
                           : prefix_;
    }

    const VitNames& names() const { return *names_; }
    VitFamily family() const {
        return names_->dist && has(names_->dist) ? VitFamily::TimmDistilled : names_->family;
    }
    // The file's name for a model tensor ("blocks.#." patterns take `block`), or a head tensor.
    std::string name(const char* relative, std::size_t block = 0) const { return prefix_ + with_block(relative, block); }
    std::string block_name(const char* relative, std::size_t block) const {
        return prefix_ + with_block(names_->block, block) + relative;
    }
    std::string head_name(const char* relative) const { return head_prefix_ + relative; }

    bool has(const std::string& relative) const { return source_.find(prefix_ + relative) != nullptr; }
    bool has_file_name(const std::string& name) const { return source_.find(name) != nullptr; }

    [[noreturn]] void fail(Message problem) const {
        throw FileError(Message(Msg::file_problem, {{"file", source_.path()}}).with("problem", std::move(problem)));
    }

    // The shape in the listing (nothing is read yet).
    Shape shape(const std::string& name) const {
        const TensorInfo* t = source_.find(name);
        if (!t) fail(Message(Msg::vit_no_tensor, {{"name", name}}).with("listing", Message(names_->listing)));
        return t->shape;
    }

    // Loads `name`, which must have shape `expected`; `why` names the tensor that fixed that shape.
    Array load(const std::string& name, const Shape& expected, const Message& why) const {
        const Shape actual = shape(name);
        if (actual != expected)
            fail(Message(Msg::vit_wrong_shape, {{"name", name}, {"shape", format_shape(actual)}, {"expected", format_shape(expected)}})
                     .with("why", why));
        return source_.load(name);
    }

    const std::string* metadata(const std::string& key) const {
        const auto it = source_.metadata().find(key);
        return it == source_.metadata().end() ? nullptr : &it->second;
    }

    // A whole number from the metadata (num_heads, image_size ...), or nothing when absent.
    std::optional<std::size_t> metadata_count(const std::string& key) const {
        const std::string* text = metadata(key);
        if (!text) return std::nullopt;
        const nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
        if (!j.is_number_unsigned() || j.get<std::uint64_t>() == 0)
            fail(Message(Msg::vit_metadata_not_whole, {{"key", key}, {"value", *text}}));
        return j.get<std::size_t>();
    }

    // metadata[key] as a JSON list of `count` items that pass `valid`, or nothing when absent.
    template <typename Valid>
    std::optional<nlohmann::json> metadata_list(const std::string& key, std::size_t count, Msg what,
                                                Valid valid) const {
        const std::string* text = metadata(key);
        if (!text) return std::nullopt;
        const nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
        bool ok = j.is_array() && j.size() == count;
        for (std::size_t i = 0; ok && i < j.size(); ++i) ok = valid(j[i]);
        if (!ok) fail(Message(Msg::vit_metadata_list, {{"key", key}, {"count", std::to_string(count)}}).with("what", Message(what)));
        return j;
    }

    const TensorSource& source() const { return source_; }

private:
    TensorSource source_;
    const VitNames* names_ = nullptr;
    std::string prefix_, head_prefix_;
};

std::size_t integer_sqrt(std::size_t n) {
    auto r = static_cast<std::size_t>(std::sqrt(static_cast<double>(n)));
    while (r * r > n) --r;
    while ((r + 1) * (r + 1) <= n) ++r;
    return r;
}

// ---- a hybrid ViT's CNN stem (timm's HybridEmbed) ----
// Stage i: patch_embed.backbone.<3i> conv, .<3i+1> BatchNorm2d, .<3i+2> ReLU (no tensors).
constexpr const char* kStem = "patch_embed.backbone.";

std::string stem_relative(std::size_t index, const char* field) { return kStem + std::to_string(index) + "." + field; }

// The stem's stages from the listing into `cfg` (channels chained from RGB, one odd kernel size);
// false when the file has linear patches.
bool read_stem_config(const Checkpoint& ck, VitConfig& cfg) {
    if (ck.names().family != VitFamily::Timm || !ck.has(stem_relative(0, "weight"))) return false;
    std::size_t in = 3;
    std::string previous;
    for (std::size_t i = 0; ck.has(stem_relative(3 * i, "weight")); ++i) {
        const std::string conv = ck.name("") + stem_relative(3 * i, "weight");
        if (i == kMaxStemStages)
            ck.fail(Message(Msg::vit_stem_too_many, {{"name", conv}, {"max", std::to_string(kMaxStemStages)}}));
        const Shape s = ck.shape(conv);  // [C_out, C_in, k, k]
        if (s.size() != 4 || s[0] == 0 || s[2] != s[3] || s[2] % 2 == 0)
            ck.fail(Message(Msg::vit_stem_shape, {{"name", conv}, {"shape", format_shape(s)}}));
        if (s[1] != in)
            ck.fail(previous.empty() ? Message(Msg::vit_stem_chain_rgb, {{"name", conv}, {"shape", format_shape(s)},
                                                                         {"channels", std::to_string(s[1])},
                                                                         {"count", std::to_string(in)}})
                                     : Message(Msg::vit_stem_chain, {{"name", conv}, {"shape", format_shape(s)},
                                                                     {"channels", std::to_string(s[1])},
                                                                     {"count", std::to_string(in)}, {"previous", previous}}));
        if (i > 0 && s[2] != cfg.stem_kernel)
            ck.fail(Message(Msg::vit_stem_kernel, {{"name", conv}, {"shape", format_shape(s)}, {"kernel", std::to_string(s[2])},
                                                   {"first_kernel", std::to_string(cfg.stem_kernel)},
                                                   {"first", ck.name("") + stem_relative(0, "weight")}}));
        cfg.stem_kernel = s[2];
        cfg.stem_channels.push_back(s[0]);
        in = s[0];
        previous = conv;
    }
    cfg.stem_conv_bias = ck.has(stem_relative(0, "bias"));
    return true;
}

// The config, from the tensors' shapes in the listing.
VitConfig read_config(const Checkpoint& ck, std::optional<std::size_t> heads, Message* heads_from) {
    const VitNames& n = ck.names();
    VitConfig cfg;
    cfg.family = ck.family();
    const std::string patch = ck.name(n.patch) + ".weight", pos_name = ck.name(n.pos);
    const Shape pw = ck.shape(patch);  // [D, 3, p, p]; after a CNN stem [D, C, 1, 1]
    if (read_stem_config(ck, cfg)) {
        const std::size_t C = cfg.stem_channels.back();
        if (pw.size() != 4 || pw[0] == 0 || pw[1] != C || pw[2] != 1 || pw[3] != 1)
            ck.fail(Message(Msg::vit_patch_after_stem,
                            {{"name", patch}, {"shape", format_shape(pw)}, {"channels", std::to_string(C)},
                             {"last", ck.name("") + stem_relative(3 * (cfg.stem_channels.size() - 1), "weight")}}));
        cfg.patch_size = std::size_t{1} << cfg.stem_channels.size();  // the stem's stride
    } else {
        if (pw.size() != 4 || pw[1] != 3 || pw[2] != pw[3] || pw[0] == 0 || pw[2] == 0)
            ck.fail(Message(Msg::vit_patch_shape, {{"name", patch}, {"shape", format_shape(pw)}}));
        cfg.patch_size = pw[2];
    }
    cfg.dim = pw[0];
    const std::size_t prefix = cfg.prefix_tokens();
    const Shape pos = ck.shape(pos_name);  // [1, N, D]
    if (pos.size() != 3 || pos[0] != 1 || pos[2] != cfg.dim || pos[1] < prefix + 1)
        ck.fail(Message(Msg::vit_pos_shape, {{"name", pos_name}, {"shape", format_shape(pos)}, {"prefix", std::to_string(prefix)},
                                             {"dim", std::to_string(cfg.dim)}, {"patch", patch}, {"patch_shape", format_shape(pw)}}));
    const std::size_t grid = integer_sqrt(pos[1] - prefix);
    if (grid * grid != pos[1] - prefix)
        ck.fail(Message(prefix == 1 ? Msg::vit_pos_grid_cls : Msg::vit_pos_grid_dist,
                        {{"name", pos_name}, {"shape", format_shape(pos)}, {"count", std::to_string(pos[1] - prefix)}}));
    cfg.image_size = grid * cfg.patch_size;
    cfg.depth = 0;
    while (ck.has_file_name(ck.block_name(n.norm1[0], cfg.depth))) ++cfg.depth;
    if (cfg.depth == 0) ck.shape(ck.block_name(n.norm1[0], 0));  // throws: names the missing tensor
    const std::string fc1_name = ck.block_name(n.fc1[0], 0);
    const Shape fc1 = ck.shape(fc1_name);  // [M, D]
    if (fc1.size() != 2 || fc1[0] == 0) ck.fail(Message(Msg::vit_fc1_shape, {{"name", fc1_name}, {"shape", format_shape(fc1)}}));
    cfg.mlp_hidden = fc1[0];
    const std::string head_name = ck.head_name(n.head[0]);
    if (ck.has_file_name(head_name)) {
        const Shape head = ck.shape(head_name);  // [K, D]
        if (head.size() != 2 || head[0] == 0) ck.fail(Message(Msg::vit_head_shape, {{"name", head_name}, {"shape", format_shape(head)}}));
        cfg.classes = head[0];
    } else if (cfg.family == VitFamily::HuggingFace) {
        cfg.classes = 0;  // a ViTModel: the encoder without a classifier
    } else if (cfg.family == VitFamily::Torchvision && ck.has_file_name(ck.head_name("heads.pre_logits.weight"))) {
        ck.fail(Message(Msg::vit_pre_logits));
    } else {
        ck.shape(head_name);  // throws: names the missing tensor
    }
    cfg.qkv_bias = ck.has_file_name(ck.block_name(n.qkv[0] ? n.qkv[1] : n.q[1], 0));
    cfg.layer_scale = n.ls[0] && ck.has_file_name(ck.block_name(n.ls[0], 0));

    const HeadCount count = resolve_heads(ck.source(), {cfg.dim, cfg.depth, cfg.mlp_hidden}, heads);
    cfg.heads = count.heads;
    *heads_from = count.from;
    if (cfg.heads == 0 || cfg.dim % cfg.heads != 0)
        ck.fail(Message(Msg::vit_heads_divide, {{"dim", std::to_string(cfg.dim)}, {"patch", patch}, {"heads", std::to_string(cfg.heads)}})
                    .with("from", *heads_from));
    for (const auto& [key, value] : {std::pair<const char*, std::size_t>{"image_size", cfg.image_size},
                                     std::pair<const char*, std::size_t>{"patch_size", cfg.patch_size}})
        if (const auto meta = ck.metadata_count(key); meta && *meta != value)
            ck.fail(Message(Msg::vit_metadata_disagrees, {{"key", key}, {"value", std::to_string(*meta)},
                                                          {"actual", std::to_string(value)}, {"patch", patch},
                                                          {"patch_shape", format_shape(pw)}, {"pos", pos_name},
                                                          {"pos_shape", format_shape(pos)}}));
    return cfg;
}

// A stem tensor of shape `expected`; its values must be finite (and, for running_var, not negative).
Array load_stem_tensor(const Checkpoint& ck, const std::string& name, const Shape& expected, const Message& why,
                       bool variance = false) {
    if (!ck.has_file_name(name)) ck.fail(Message(Msg::vit_no_tensor, {{"name", name}}).with("listing", Message(Msg::vit_listing_stem)));
    Array a = ck.load(name, expected, why);
    for (std::size_t i = 0; i < a.size(); ++i) {
        const float v = a.data()[i];
        if (!std::isfinite(v))
            ck.fail(Message(Msg::vit_stem_not_finite, {{"name", name}, {"value", std::isnan(v) ? "NaN" : "Inf"}, {"index", std::to_string(i)}}));
        if (variance && v < 0)
            ck.fail(Message(Msg::vit_stem_negative_variance, {{"name", name}, {"value", std::to_string(v)}, {"index", std::to_string(i)}}));
    }
    return a;
}

// The stem's convs and BatchNorms; the shapes follow the config read from the listing.
std::vector<StemStageWeights> read_stem_weights(const Checkpoint& ck, const VitConfig& cfg) {
    std::vector<StemStageWeights> stem;
    const std::size_t k = cfg.stem_kernel;
    std::size_t in = 3;
    for (std::size_t i = 0; i < cfg.stem_channels.size(); ++i) {
        const std::size_t C = cfg.stem_channels[i];
        const std::string conv = ck.name("") + stem_relative(3 * i, ""), bn = ck.name("") + stem_relative(3 * i + 1, "");
        const Message why(Msg::vit_why_stem_channels, {{"count", std::to_string(C)}, {"name", conv + "weight"}});
        StemStageWeights st;
        st.conv_weight = load_stem_tensor(ck, conv + "weight", {C, in, k, k}, why);
        st.conv_weight.reshape({C, in * k * k});  // the conv as a linear over im2col's rows
        if (cfg.stem_conv_bias) st.conv_bias = load_stem_tensor(ck, conv + "bias", {C}, why);
        st.bn_weight = load_stem_tensor(ck, bn + "weight", {C}, why);
        st.bn_bias = load_stem_tensor(ck, bn + "bias", {C}, why);
        st.bn_mean = load_stem_tensor(ck, bn + "running_mean", {C}, why);
        st.bn_var = load_stem_tensor(ck, bn + "running_var", {C}, why, true);
        stem.push_back(std::move(st));
        in = C;
    }
    return stem;
}

VitWeights read_weights(const Checkpoint& ck, const VitConfig& cfg) {
    const VitNames& n = ck.names();
    const std::size_t D = cfg.dim, p = cfg.patch_size, M = cfg.mlp_hidden, K = cfg.classes;
    const std::string patch = ck.name(n.patch);
    const Message by_dim(Msg::vit_why_dim, {{"dim", std::to_string(D)}, {"name", patch + ".weight"}});
    const Message by_mlp = Message(Msg::vit_why_mlp, {{"mlp", std::to_string(M)}, {"name", ck.block_name(n.fc1[0], 0)}}).with("dim", by_dim);
    const std::string qkv_bias0 = ck.block_name(n.qkv[0] ? n.qkv[1] : n.q[1], 0);
    VitWeights w;
    if (cfg.has_stem()) {
        w.stem = read_stem_weights(ck, cfg);
        const std::size_t C = cfg.stem_channels.back();
        w.patch_weight = load_stem_tensor(ck, patch + ".weight", {D, C, 1, 1}, by_dim);
        w.patch_weight.reshape({D, C});  // the 1x1 conv as a linear over each position's channels
    } else {
        w.patch_weight = ck.load(patch + ".weight", {D, 3, p, p}, by_dim);
        w.patch_weight.reshape({D, 3 * p * p});  // the conv as a linear over patchify's rows
    }
    w.patch_bias = ck.load(patch + ".bias", {D}, by_dim);
    w.cls_token = ck.load(ck.name(n.cls), {1, 1, D}, by_dim);
    if (cfg.family == VitFamily::TimmDistilled) w.dist_token = ck.load(ck.name(n.dist), {1, 1, D}, by_dim);
    w.pos_embed = ck.load(ck.name(n.pos), {1, cfg.tokens(), D}, by_dim);
    // The blocks on every core: copying the bytes into new memory is mostly page faults, which the
    // kernel serves on each core at once. The first error in block order is the one reported.
    w.blocks.resize(cfg.depth);
    std::vector<std::exception_ptr> errors(cfg.depth);
#pragma omp parallel for schedule(dynamic)
    for (std::size_t i = 0; i < cfg.depth; ++i) try {
        auto name = [&](const char* relative) { return ck.block_name(relative, i); };
        VitBlockWeights& blk = w.blocks[i];
        blk.norm1_weight = ck.load(name(n.norm1[0]), {D}, by_dim);
        blk.norm1_bias = ck.load(name(n.norm1[1]), {D}, by_dim);
        // q, k, v: one [3D, D] linear (timm, torchvision), or three [D, D] ones stacked in that order.
        const Message why_qkv = Message(Msg::vit_why_qkv).with("dim", by_dim);
        if (n.qkv[0])
            blk.attn.qkv_weight = ck.load(name(n.qkv[0]), {3 * D, D}, why_qkv);
        else
            blk.attn.qkv_weight = stack_qkv(ck.load(name(n.q[0]), {D, D}, by_dim), ck.load(name(n.k[0]), {D, D}, by_dim),
                                            ck.load(name(n.v[0]), {D, D}, by_dim));
        const std::string bias_name = name(n.qkv[0] ? n.qkv[1] : n.q[1]);
        if (ck.has_file_name(bias_name) != cfg.qkv_bias)
            ck.fail(Message(cfg.qkv_bias ? Msg::vit_qkv_bias_missing : Msg::vit_qkv_bias_present,
                            {{"name", bias_name}, {"first", qkv_bias0}}));
        if (cfg.qkv_bias)
            blk.attn.qkv_bias = n.qkv[0] ? ck.load(name(n.qkv[1]), {3 * D}, Message(Msg::vit_why_qkv_bias).with("dim", by_dim))
                                         : stack_qkv(ck.load(name(n.q[1]), {D}, by_dim), ck.load(name(n.k[1]), {D}, by_dim),
                                                     ck.load(name(n.v[1]), {D}, by_dim));
        blk.attn.proj_weight = ck.load(name(n.proj[0]), {D, D}, by_dim);
        blk.attn.proj_bias = ck.load(name(n.proj[1]), {D}, by_dim);
        blk.norm2_weight = ck.load(name(n.norm2[0]), {D}, by_dim);
        blk.norm2_bias = ck.load(name(n.norm2[1]), {D}, by_dim);
        blk.fc1_weight = ck.load(name(n.fc1[0]), {M, D}, by_mlp);
        blk.fc1_bias = ck.load(name(n.fc1[1]), {M}, by_mlp);
        blk.fc2_weight = ck.load(name(n.fc2[0]), {D, M}, by_mlp);
        blk.fc2_bias = ck.load(name(n.fc2[1]), {D}, by_dim);
        // LayerScale: in every block or in none (timm's init_values is one number for the model).
        for (const char* ls : n.ls) {
            if (!ls) continue;
            const std::string gamma = name(ls), gamma0 = ck.block_name(n.ls[0], 0);
            if (ck.has_file_name(gamma) != cfg.layer_scale)
                ck.fail(Message(cfg.layer_scale ? Msg::vit_layer_scale_missing : Msg::vit_layer_scale_present,
                                {{"name", gamma}, {"first", gamma0}}));
            if (cfg.layer_scale) (ls == n.ls[0] ? blk.ls1_gamma : blk.ls2_gamma) = ck.load(gamma, {D}, by_dim);
        }
    } catch (...) {
        errors[i] = std::current_exception();
    }
    for (const std::exception_ptr& e : errors)
        if (e) std::rethrow_exception(e);
    w.norm_weight = ck.load(ck.name(n.norm[0]), {D}, by_dim);
    w.norm_bias = ck.load(ck.name(n.norm[1]), {D}, by_dim);
    if (K > 0) {
        const Message by_classes(Msg::vit_why_classes, {{"classes", std::to_string(K)}, {"name", ck.head_name(n.head[0])}});
        w.head_weight = ck.load(ck.head_name(n.head[0]), {K, D}, by_dim);
        w.head_bias = ck.load(ck.head_name(n.head[1]), {K}, by_classes);
        if (cfg.family == VitFamily::TimmDistilled) {
            w.head_dist_weight = ck.load(ck.head_name(n.head_dist[0]), {K, D}, Message(Msg::vit_why_both).with("first", by_classes).with("second", by_dim));
            w.head_dist_bias = ck.load(ck.head_name(n.head_dist[1]), {K}, by_classes);
        }
    }
    return w;
}

}  // namespace

float VitConfig::drop_path(std::size_t block) const {
    // torch.linspace(0, rate, depth) on the CPU in float32: the first half counts up from 0, the
    // second half down from the rate, with step = rate / (depth - 1).
    if (depth <= 1 || block >= depth) return 0.0f;
    const float step = drop_path_rate / static_cast<float>(depth - 1);
    const std::size_t halfway = depth / 2;
    return block < halfway ? step * static_cast<float>(block)
                           : drop_path_rate - step * static_cast<float>(depth - block - 1);
}

AttentionConfig VitConfig::attention(std::size_t batch) const {
    AttentionConfig a;
    a.batch = batch;
    a.tokens = tokens();
    a.dim = dim;
    a.heads = heads;
    a.qkv_bias = qkv_bias;
    if (family == VitFamily::HuggingFace) a.reference = Reference::hf;  // its blocks' own lines of code
    return a;
}

VitModel read_vit_checkpoint(const TensorSource& source, std::optional<std::size_t> heads,
                             const std::function<Message(const VitConfig&)>& refuse) {
    const Checkpoint ck(source);
    VitModel model;
    model.config = read_config(ck, heads, &model.heads_from);
    if (const Message problem = refuse(model.config); !problem.empty()) ck.fail(problem);

    const std::size_t K = model.config.classes;
    const auto labels = ck.metadata_list("labels", K, Msg::vit_metadata_labels,
                                         [](const nlohmann::json& v) { return v.is_string(); });
    for (std::size_t k = 0; k < K; ++k) model.labels.push_back(labels ? (*labels)[k].get<std::string>() : "class " + std::to_string(k));
    const auto mean = ck.metadata_list("mean", 3, Msg::vit_metadata_mean, [](const nlohmann::json& v) { return v.is_number(); });
    const auto std = ck.metadata_list("std", 3, Msg::vit_metadata_std,
                                      [](const nlohmann::json& v) { return v.is_number() && v.get<double>() > 0; });
    for (std::size_t ch = 0; ch < 3; ++ch) {
        if (mean) model.mean[ch] = (*mean)[ch].get<float>();
        if (std) model.std[ch] = (*std)[ch].get<float>();
    }
    model.weights = read_weights(ck, model.config);
    return model;
}

std::optional<VitFamily> whole_vit_family(const TensorSource& source) {
    const FoundFamily found = find_family(source);
    if (!found.names || !source.find(found.prefix + found.names->pos)) return std::nullopt;
    if (found.names->dist && source.find(found.prefix + found.names->dist)) return VitFamily::TimmDistilled;
    return found.names->family;
}

const char* vit_family_name(VitFamily family) {
    switch (family) {
        case VitFamily::TimmDistilled: return "timm DeiT (distilled)";
        case VitFamily::Torchvision: return "torchvision";
        case VitFamily::HuggingFace: return "Hugging Face";
        case VitFamily::Timm: break;
    }
    return "timm";
}

}  // namespace attnscope
