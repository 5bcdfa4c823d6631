#include "heads.hpp"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

namespace attnscope {

namespace {

namespace fs = std::filesystem;

// A checkpoint's entries that hold its model's configuration, and the names of a head count in them.
constexpr const char* kConfigEntries[] = {"config", "args", "hparams", "hyper_parameters"};
constexpr const char* kCountNames[] = {"num_heads", "nhead", "n_heads", "heads", "num_attention_heads"};

// Published ViTs, identified by width, depth and an MLP of 4 D.
struct Published {
    std::size_t dim, depth, heads;
    Msg name;
};
constexpr Published kPublished[] = {
    {192, 12, 3, Msg::published_vit_tiny},
    {384, 12, 6, Msg::published_vit_small},
    {768, 12, 12, Msg::published_vit_base},
    {1024, 24, 16, Msg::published_vit_large},
    {1280, 32, 16, Msg::published_vit_huge},
};

// config.json beside a file is a few kilobytes; a larger one is not Hugging Face's.
constexpr std::uintmax_t kMaxConfigJsonBytes = 1 << 20;

template <std::size_t N>
bool one_of(const std::string& word, const char* const (&names)[N]) {
    for (const char* n : names)
        if (word == n) return true;
    return false;
}

// A positive whole number written as JSON (4) or as text ("4"); nullopt for anything else.
std::optional<std::size_t> whole_number(const nlohmann::json& j) {
    if (j.is_number_unsigned() && j.get<std::uint64_t>() > 0 && j.get<std::uint64_t>() < (1u << 20))
        return j.get<std::size_t>();
    if (j.is_string()) return whole_number(nlohmann::json::parse(j.get<std::string>(), nullptr, false));
    return std::nullopt;
}

// What the file itself says: metadata num_heads, the checkpoint's configuration entries, and the
// num_heads attributes of a model pickled whole (blocks.0.attn.num_heads = 4).
void from_metadata(const TensorSource& source, std::vector<HeadCount>& said) {
    for (const auto& [key, text] : source.metadata()) {
        const std::size_t first = key.find('.'), last = key.rfind('.');
        const bool top = key == "num_heads";
        const bool in_config = first != std::string::npos && one_of(key.substr(0, first), kConfigEntries) &&
                               one_of(key.substr(last + 1), kCountNames);
        const bool attribute = !in_config && last != std::string::npos && key.substr(last + 1) == "num_heads";
        if (!top && !in_config && !attribute) continue;
        const std::optional<std::size_t> n = whole_number(nlohmann::json(text));
        if (!n)
            throw FileError(Message(top ? Msg::heads_metadata_not_whole : Msg::heads_entry_not_whole,
                                    {{"file", source.path()}, {"key", key}, {"value", text.substr(0, 40)}}));
        said.push_back({*n, top         ? Message(Msg::heads_from_metadata)
                            : in_config ? Message(Msg::heads_from_checkpoint_entry, {{"key", key}})
                                        : Message(Msg::heads_from_attribute, {{"key", key}})});
    }
}

// Hugging Face's config.json in the file's folder (or in the folder itself, for a folder of .npy).
void from_config_json(const TensorSource& source, std::vector<HeadCount>& said) {
    std::error_code error;
    const fs::path path = fs::is_directory(source.path(), error) ? fs::path(source.path()) / "config.json"
                                                                 : fs::path(source.path()).parent_path() / "config.json";
    if (!fs::is_regular_file(path, error)) return;
    const std::string shown = path.string();
    if (fs::file_size(path, error) > kMaxConfigJsonBytes)
        throw FileError(Message(Msg::heads_config_too_large, {{"file", shown}}));
    std::ifstream in(path, std::ios::binary);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    if (!j.is_object())
        throw FileError(Message(Msg::heads_config_not_object, {{"file", shown}}));
    for (const char* name : kCountNames) {
        if (!j.contains(name)) continue;
        const std::optional<std::size_t> n = whole_number(j[name]);
        if (!n)
            throw FileError(Message(Msg::heads_config_not_whole,
                                    {{"file", shown}, {"key", name}, {"value", j[name].dump().substr(0, 40)}}));
        said.push_back({*n, Message(Msg::heads_from_config_json, {{"key", name}, {"file", shown}})});
    }
}

std::string divisors_text(std::size_t dim) {
    std::string text;
    for (const std::size_t h : head_count_choices(dim)) text += (text.empty() ? "" : ", ") + std::to_string(h);
    return text;
}

}  // namespace

std::vector<std::size_t> head_count_choices(std::size_t dim) {
    std::vector<std::size_t> out;
    for (std::size_t h = 1; h <= dim; ++h)
        if (dim % h == 0) out.push_back(h);
    return out;
}

std::size_t head_count_suggestion(std::size_t dim) {
    std::size_t best = 1;
    auto distance = [dim](std::size_t h) { const double c = double(dim) / double(h); return c > 64 ? c / 64 : 64 / c; };
    for (const std::size_t h : head_count_choices(dim))
        if (distance(h) < distance(best)) best = h;
    return best;
}

HeadsUnknown::HeadsUnknown(const std::string& path, std::size_t dim_)
    : FileError(Message(Msg::heads_unknown, {{"file", path}, {"dim", std::to_string(dim_)}, {"choices", divisors_text(dim_)}})),
      dim(dim_) {}

std::optional<HeadCount> heads_from_file(const TensorSource& source, const ModelSizes& sizes) {
    std::vector<HeadCount> said;
    from_metadata(source, said);
    from_config_json(source, said);
    for (const HeadCount& s : said) {
        if (s.heads != said.front().heads)
            throw FileError(Message(Msg::heads_disagree, {{"file", source.path()}, {"heads", std::to_string(said.front().heads)},
                                                          {"heads2", std::to_string(s.heads)}})
                                .with("from", said.front().from)
                                .with("from2", s.from));
        if (sizes.dim % s.heads != 0)
            throw FileError(Message(Msg::heads_do_not_divide, {{"file", source.path()}, {"heads", std::to_string(s.heads)},
                                                               {"dim", std::to_string(sizes.dim)},
                                                               {"choices", divisors_text(sizes.dim)}})
                                .with("from", s.from));
    }
    if (!said.empty()) return said.front();
    for (const Published& p : kPublished)
        if (p.dim == sizes.dim && p.depth == sizes.depth && sizes.mlp == 4 * p.dim)
            return HeadCount{p.heads, Message(Msg::heads_from_published, {{"dim", std::to_string(p.dim)},
                                                                          {"depth", std::to_string(p.depth)}})
                                          .with("model", Message(p.name))};
    return std::nullopt;
}

HeadCount resolve_heads(const TensorSource& source, const ModelSizes& sizes, std::optional<std::size_t> heads) {
    if (heads) return {*heads, Message(Msg::heads_from_option)};
    if (std::optional<HeadCount> found = heads_from_file(source, sizes)) return *found;
    throw HeadsUnknown(source.path(), sizes.dim);
}

}  // namespace attnscope
