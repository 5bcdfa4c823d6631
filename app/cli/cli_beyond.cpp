// The options of the paths beyond the textbook (core/paths/beyond.hpp), shared by trace, run, bench and
// the app: --causal, --valid-tokens 12,16, --flash [--tile 16x16], --kv-cache, --window M [--shift] [--patch-merge].
#include <cstdio>
#include <string>
#include <vector>

#include "beyond.hpp"
#include "cli.hpp"

namespace attnscope {

namespace {

// "12,16" -> {12, 16}; false when it is not a comma-separated list of whole numbers.
bool parse_counts(const std::string& text, std::vector<std::size_t>* out) {
    out->clear();
    std::size_t start = 0;
    while (start <= text.size()) {
        const std::size_t end = std::min(text.find(',', start), text.size());
        const std::string part = text.substr(start, end - start);
        if (part.empty() || part.size() > 12 || part.find_first_not_of("0123456789") != std::string::npos) return false;
        out->push_back(std::stoull(part));
        start = end + 1;
    }
    return !out->empty();
}

// "16x16" -> (16, 16)
bool parse_tile(const std::string& text, std::size_t* rows, std::size_t* cols) {
    unsigned long r = 0, c = 0;
    char x = 0, rest = 0;
    if (std::sscanf(text.c_str(), "%lu%c%lu%c", &r, &x, &c, &rest) != 3 || (x != 'x' && x != 'X')) return false;
    if (text.find_first_of("-+ ") != std::string::npos || r < 1 || c < 1 || r > 4096 || c > 4096) return false;
    *rows = r, *cols = c;
    return true;
}

}  // namespace

BeyondOptions add_beyond_options(CLI::App& app, AttentionConfig& c) {
    BeyondOptions o;
    std::vector<CLI::Option*>& options = o.all;
    options.push_back(app.add_flag("--causal", c.causal, "causal mask: query i sees keys 0..i"));
    options.push_back(
        app.add_option_function<std::string>(
               "--valid-tokens",
               [&c](const std::string& text) { parse_counts(text, &c.valid_tokens); },
               "key padding: valid tokens per batch item, e.g. 12,16 (keys after them get -inf)")
            ->check(CLI::Validator(
                [](std::string& text) -> std::string {
                    std::vector<std::size_t> counts;
                    return parse_counts(text, &counts) ? ""
                                                       : "'" + text + "' is not a comma-separated list of counts, e.g. 12,16";
                },
                "N1,N2,...", "counts")));
    options.push_back(app.add_flag_callback(
        "--flash", [&c] { c.path = AttentionPath::flash; },
        "FlashAttention: tiled online softmax, the N x N scores are never stored"));
    options.push_back(
        app.add_option_function<std::string>(
               "--tile", [&c](const std::string& text) { parse_tile(text, &c.tile_rows, &c.tile_cols); },
               "flash tile size BRxBC (default 16x16)")
            ->check(CLI::Validator(
                [](std::string& text) -> std::string {
                    std::size_t r = 0, cols = 0;
                    return parse_tile(text, &r, &cols)
                               ? ""
                               : "'" + text + "' is not a tile size BRxBC with each side in 1..4096, e.g. 16x16";
                },
                "BRxBC", "tile")));
    options.push_back(app.add_flag_callback(
        "--kv-cache", [&c] { c.path = AttentionPath::kv_cache; c.causal = true; },
        "autoregressive decoding with a KV cache, one token at a time (implies --causal)"));
    options.push_back(app.add_option_function<std::size_t>(
        "--window", [&c](std::size_t m) { c.window = m; c.path = AttentionPath::windowed; },
        "Swin window attention with M x M windows on the H x H token grid (N = H*H)"));
    options.push_back(app.add_flag("--shift", c.shift, "with --window: shifted windows (roll by -M/2, Swin's mask)"));
    options.push_back(
        app.add_flag("--patch-merge", c.patch_merge,
                     "with --window: Swin's patch merging after the block (2 x 2 neighbours -> one token, "
                     "grid H/2, channels 2C), then a second windowed stage with 2h heads"));
    o.flash = options[2], o.tile = options[3], o.kv_cache = options[4], o.window = options[5], o.shift = options[6];
    o.patch_merge = options[7];
    return o;
}

void check_beyond_options(const BeyondOptions& o) {
    if (o.flash->count() + o.kv_cache->count() + o.window->count() > 1)
        throw UsageError("--flash, --kv-cache and --window are different paths of attention: give one of them");
    if (o.tile->count() && !o.flash->count()) throw UsageError("--tile BRxBC needs --flash");
    if (o.shift->count() && !o.window->count()) throw UsageError("--shift needs --window M");
    if (o.patch_merge->count() && !o.window->count())
        throw UsageError("--patch-merge needs --window M: patch merging joins the windowed path's token grid");
}

}  // namespace attnscope
