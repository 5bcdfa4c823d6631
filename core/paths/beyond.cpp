// The dispatch to the paths beyond the textbook, their validation, sizes and JSON.
#include "beyond.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace attnscope {

namespace {

constexpr std::uint64_t kSaturated = std::numeric_limits<std::uint64_t>::max();
std::uint64_t mul(std::uint64_t a, std::uint64_t b) { return a != 0 && b > kSaturated / a ? kSaturated : a * b; }
std::uint64_t add(std::uint64_t a, std::uint64_t b) { return a > kSaturated - b ? kSaturated : a + b; }

std::string join(const std::vector<std::size_t>& values) {
    std::string text;
    for (std::size_t v : values) text += (text.empty() ? "" : ",") + std::to_string(v);
    return text;
}

std::size_t exact_sqrt(std::size_t n) {
    std::size_t r = static_cast<std::size_t>(std::llround(std::sqrt(static_cast<double>(n))));
    return r * r == n ? r : 0;
}

}  // namespace

// ---- memory -----------------------------------------------------------------------------------

MemoryPoint attention_memory(const AttentionConfig& cfg, std::size_t N) {
    const std::uint64_t bh = mul(cfg.batch, cfg.heads), c = cfg.head_dim();
    const std::uint64_t bhnc = mul(mul(bh, N), c);
    MemoryPoint p;
    p.tokens = N;
    // q, k, v, context + the two [B, h, N, N] tensors alive at softmax (scaled and attn)
    p.standard_bytes = mul(add(mul(4, bhnc), mul(2, mul(mul(bh, N), N))), sizeof(float));
    // q, k, v, O + m and l [B, h, N] + one S and one P tile [Br, Bc]
    p.flash_bytes = mul(add(add(mul(4, bhnc), mul(2, mul(bh, N))), mul(2, mul(cfg.tile_rows, cfg.tile_cols))),
                        sizeof(float));
    return p;
}

// ---- validation and sizes -------------------------------------------------------------------

void validate_beyond(const AttentionConfig& c, std::vector<Message>& problems) {
    if (!c.valid_tokens.empty()) {
        if (c.valid_tokens.size() != c.batch) {
            problems.push_back(Message(Msg::config_valid_tokens_count, {{"values", join(c.valid_tokens)},
                                                                        {"count", std::to_string(c.valid_tokens.size())},
                                                                        {"batch", std::to_string(c.batch)}}));
        } else {
            for (std::size_t b = 0; b < c.batch; ++b)
                if (c.valid_tokens[b] < 1 || c.valid_tokens[b] > c.tokens) {
                    problems.push_back(Message(Msg::config_valid_tokens_range, {{"value", std::to_string(c.valid_tokens[b])},
                                                                                {"item", std::to_string(b)},
                                                                                {"tokens", std::to_string(c.tokens)}}));
                    break;
                }
        }
    }
    const bool dropping = c.training && c.attn_drop > 0.0f;
    if (c.path == AttentionPath::flash) {
        if (c.tile_rows < 1 || c.tile_cols < 1 || c.tile_rows > 4096 || c.tile_cols > 4096)
            problems.push_back(Message(Msg::config_tile, {{"rows", std::to_string(c.tile_rows)}, {"cols", std::to_string(c.tile_cols)}}));
        if (dropping)
            problems.push_back(Message(Msg::config_flash_dropout));
    }
    if (c.path == AttentionPath::kv_cache && dropping)
        problems.push_back(Message(Msg::config_kv_cache_dropout));
    if (c.path == AttentionPath::windowed) {
        const std::size_t grid = exact_sqrt(c.tokens);
        if (c.causal || !c.valid_tokens.empty())
            problems.push_back(Message(Msg::config_window_masks));
        if (grid == 0) {
            const std::size_t g1 = c.tokens > 1 ? exact_sqrt(c.tokens - 1) : 0;
            problems.push_back(g1 ? Message(Msg::config_window_class_token, {{"tokens", std::to_string(c.tokens)},
                                                                             {"side", std::to_string(g1)},
                                                                             {"grid", std::to_string(g1 * g1)}})
                                  : Message(Msg::config_window_not_square, {{"tokens", std::to_string(c.tokens)}}));
        } else if (c.window < 1 || grid % c.window != 0) {
            problems.push_back(Message(Msg::config_window_divide, {{"window", std::to_string(c.window)},
                                                                   {"side", std::to_string(grid)},
                                                                   {"tokens", std::to_string(c.tokens)}}));
        } else if (c.shift && (c.window < 2 || c.window == grid)) {
            problems.push_back(Message(Msg::config_shift, {{"window", std::to_string(c.window)}, {"side", std::to_string(grid)}}));
        } else if (c.patch_merge && grid % 2 != 0) {
            problems.push_back(Message(Msg::config_merge_odd, {{"tokens", std::to_string(c.tokens)}, {"side", std::to_string(grid)}}));
        } else if (c.patch_merge && grid / 2 > c.window && (grid / 2) % c.window != 0) {
            problems.push_back(Message(Msg::config_merge_window, {{"half", std::to_string(grid / 2)},
                                                                  {"side", std::to_string(grid)},
                                                                  {"window", std::to_string(c.window)}}));
        }
    }
    if (c.patch_merge && c.path != AttentionPath::windowed)
        problems.push_back(Message(Msg::config_merge_needs_window));
}

AttentionConfig stage2_config(const AttentionConfig& c) {
    AttentionConfig s = c;
    const std::size_t grid = exact_sqrt(c.tokens) / 2;  // H/2
    s.tokens = grid * grid, s.dim = 2 * c.dim, s.heads = 2 * c.heads, s.patch_merge = false;
    if (grid <= c.window) s.window = grid, s.shift = false;  // one window covers the grid: nothing to shift
    return s;
}

std::uint64_t beyond_trace_bytes(const AttentionConfig& c) {
    const std::uint64_t bnc = mul(mul(c.batch, c.tokens), c.dim);
    const std::uint64_t weights = add(mul(4, mul(c.dim, c.dim)), mul(4, c.dim));
    const std::uint64_t bh = mul(c.batch, c.heads);
    std::uint64_t floats = add(mul(19, bnc), weights);
    switch (c.path) {
        case AttentionPath::flash: {
            // no N x N step; tile records for one (b, head): m, l per tile row and a bounded output
            const std::uint64_t br = std::max<std::size_t>(1, c.tile_rows), bc = std::max<std::size_t>(1, c.tile_cols);
            const std::uint64_t tiles = mul((c.tokens + br - 1) / br, (c.tokens + bc - 1) / bc);
            const std::uint64_t kept = std::min<std::uint64_t>(tiles, kFlashMaxTiles);
            floats = add(floats, add(mul(mul(kept, br), 2), std::min<std::uint64_t>(kFlashOutputBudget,
                                                                                   mul(mul(kept, br), c.head_dim()))));
            floats = add(floats, mul(2, mul(bh, c.tokens)));  // row_max, row_sum [B, h, N]
            break;
        }
        case AttentionPath::kv_cache:  // the assembled attn [B, h, N, N] and the per-token rows of item 0
            floats = add(floats, add(mul(mul(bh, c.tokens), c.tokens), mul(mul(c.heads, c.tokens), c.tokens)));
            break;
        case AttentionPath::windowed: {
            // grid, win_split, win_perm, windows, win_merge, win_unperm, grid_out, tokens_out (and shifted,
            // unshifted) of B * N * C each; 4 maps (and masked) of B * h * N * M^2 instead of N^2; the Swin
            // mask; the row sums of attn and attn_drop
            const std::uint64_t m2 = mul(c.window, c.window);
            floats = add(add(floats, mul(8 + 2 * c.shift, bnc)),
                         mul(add(mul(4 + c.shift, mul(bh, c.tokens)), c.tokens), m2));
            floats = add(floats, mul(2, mul(bh, c.tokens)));
            break;
        }
        case AttentionPath::standard: break;
    }
    if (c.path == AttentionPath::windowed && c.patch_merge) {
        // PatchMerging: the grid view, x0..x3 (N/4 * C each), cat, its view and the norm
        // (N/4 * 4C each), the reduction (N/4 * 2C); norm and reduction weights; then stage 2.
        floats = add(floats, add(mul(11, bnc) / 2, add(mul(8, c.dim), mul(8, mul(c.dim, c.dim)))));
        return add(mul(floats, sizeof(float)), beyond_trace_bytes(stage2_config(c)));
    }
    return mul(floats, sizeof(float));
}

// ---- the paths ------------------------------------------------------------------------------

Trace run_beyond(const AttentionConfig& cfg, const AttentionWeights& w, const Tensor& x, const RunHooks& hooks) {
    switch (cfg.path) {
        case AttentionPath::flash: return run_flash(cfg, w, x, hooks);
        case AttentionPath::kv_cache: return run_kv_cache(cfg, w, x, hooks);
        case AttentionPath::windowed: return run_windowed(cfg, w, x, hooks);
        case AttentionPath::standard: break;
    }
    throw std::logic_error("run_beyond: the standard path is core/engine's record_textbook");
}

namespace {

std::vector<std::string> named(std::initializer_list<StepId> steps) {
    std::vector<std::string> names;
    for (StepId step : steps) names.emplace_back(step_name(step));
    return names;
}

}  // namespace

std::vector<std::string> path_step_names(const AttentionConfig& cfg) {
    const std::vector<std::string> qkv =
        named({StepId::input, StepId::qkv, StepId::qkv_split, StepId::qkv_heads, StepId::q, StepId::k, StepId::v});
    const std::vector<std::string> tail =
        named({StepId::context, StepId::context_t, StepId::merged, StepId::out, StepId::out_drop});
    std::vector<std::string> names;
    auto append = [&](const std::vector<std::string>& more) { names.insert(names.end(), more.begin(), more.end()); };
    switch (cfg.path) {
        case AttentionPath::standard:
            names = attention_step_names();
            if (cfg.masked())
                names.insert(std::find(names.begin(), names.end(), step_name(StepId::attn)),
                             std::string(step_name(StepId::masked)));
            break;
        case AttentionPath::flash:
            append(qkv);
            append(tail);
            break;
        case AttentionPath::kv_cache:
            append(qkv);
            names.emplace_back(step_name(StepId::attn));
            append(tail);
            break;
        case AttentionPath::windowed: {
            auto block = [&](const std::string& prefix, bool shift) {
                std::vector<std::string> block_names = {"grid"};
                if (shift) block_names.push_back("shifted");
                for (const char* name : {"win_split", "win_perm", "windows"}) block_names.push_back(name);
                for (const std::string& name : named({StepId::qkv, StepId::qkv_split, StepId::qkv_heads, StepId::q,
                                                      StepId::k, StepId::v, StepId::k_t, StepId::scores, StepId::scaled}))
                    block_names.push_back(name);
                if (shift) block_names.emplace_back(step_name(StepId::masked));
                for (const std::string& name : named({StepId::attn, StepId::attn_drop})) block_names.push_back(name);
                block_names.insert(block_names.end(), tail.begin(), tail.end());
                block_names.insert(block_names.end(), {"win_merge", "win_unperm", "grid_out"});
                if (shift) block_names.push_back("unshifted");
                block_names.push_back("tokens_out");
                for (const std::string& name : block_names) names.push_back(prefix + name);
            };
            names = named({StepId::input});
            block("", cfg.shift);
            if (cfg.patch_merge) {
                append({"patch_merge_grid", "patch_merge_x0", "patch_merge_x1", "patch_merge_x2", "patch_merge_x3",
                        "patch_merge_cat", "patch_merge_flat", "patch_merge_norm", "patch_merge_reduction"});
                block(kStage2Prefix, stage2_config(cfg).shift);
            }
            break;
        }
    }
    return names;
}

std::string beyond_summary(const Trace& trace) {
    const AttentionConfig& c = trace.config;
    std::string text = std::string("path: ") + path_name(c.path);
    char line[512];
    if (c.path == AttentionPath::flash) {
        std::snprintf(line, sizeof line, " (tiles Br x Bc = %zu x %zu)", c.tile_rows, c.tile_cols);
        text += line;
    }
    if (c.path == AttentionPath::windowed) {
        std::snprintf(line, sizeof line, " (M = %zu%s%s)", c.window, c.shift ? ", shifted by M/2" : "",
                      c.patch_merge ? ", then patch merging and a second stage" : "");
        text += line;
    }
    const std::string mask = mask_summary(c);
    text += "; mask: " + (mask.empty() ? std::string("none") : mask);
    const BeyondRecord* r = trace.beyond.get();
    if (r && r->flash) {
        const FlashRecord& f = *r->flash;
        std::snprintf(line, sizeof line,
                      "\nflash: %zu tiles (%zu skipped by the mask) over every (b, head); the [B, h, N, N] matrix "
                      "was never stored; attention working memory %s vs %s on the standard path (%.1fx less)",
                      f.tiles_total, f.tiles_skipped, format_bytes(f.memory.flash_bytes).c_str(),
                      format_bytes(f.memory.standard_bytes).c_str(),
                      static_cast<double>(f.memory.standard_bytes) / static_cast<double>(f.memory.flash_bytes));
        text += line;
    }
    if (r && r->kv) {
        std::snprintf(line, sizeof line,
                      "\nkv-cache: %zu tokens decoded one at a time; %.4g GFLOP with the cache vs %.4g GFLOP "
                      "recomputing every prefix (%.1fx fewer, %.1f%% saved)",
                      r->kv->tokens.size(), r->kv->flops_cached * 1e-9, r->kv->flops_recompute * 1e-9,
                      static_cast<double>(r->kv->flops_recompute) / static_cast<double>(r->kv->flops_cached),
                      100.0 * (1.0 - static_cast<double>(r->kv->flops_cached) / static_cast<double>(r->kv->flops_recompute)));
        text += line;
    }
    if (r && r->windows) {
        std::snprintf(line, sizeof line, "\nwindows: a %zu x %zu grid in %zu windows of %zu x %zu tokens per item",
                      r->windows->grid, r->windows->grid, r->windows->windows, r->windows->window, r->windows->window);
        text += line;
    }
    if (r && r->merge) {
        const PatchMergeRecord& m = *r->merge;
        std::snprintf(line, sizeof line,
                      "\npatch merging: %zu x %zu grid, C = %zu, %zu heads -> %zu x %zu grid, 2C = %zu, %zu heads; "
                      "stage 2: windows of %zu x %zu tokens%s, %zu per item",
                      m.grid, m.grid, m.dim, m.heads, m.merged_grid, m.merged_grid, m.merged_dim, m.merged_heads,
                      m.stage2.window, m.stage2.window, m.stage2.shift ? " shifted by M/2" : "", m.stage2.windows);
        text += line;
    }
    return text;
}

nlohmann::json beyond_to_json(const BeyondRecord& r) {
    nlohmann::json j = {{"path", path_name(r.path)}};
    if (r.flash) {
        const FlashRecord& f = *r.flash;
        nlohmann::json tiles = nlohmann::json::array();
        for (const FlashTile& t : f.tiles)
            tiles.push_back({{"row_block", t.row_block}, {"col_block", t.col_block}, {"rows", {t.row0, t.row0 + t.rows}},
                             {"cols", {t.col0, t.col0 + t.cols}}, {"skipped", t.skipped}, {"m", t.m}, {"l", t.l}});
        nlohmann::json memory = nlohmann::json::array();
        for (const MemoryPoint& p : f.memory_vs_tokens)
            memory.push_back({{"tokens", p.tokens}, {"standard_bytes", p.standard_bytes}, {"flash_bytes", p.flash_bytes}});
        j["flash"] = {{"tile", {f.tile_rows, f.tile_cols}},
                      {"grid", {f.row_blocks, f.col_blocks}},
                      {"recorded_batch_item", f.batch_item},
                      {"recorded_head", f.head},
                      {"tiles_total", f.tiles_total},
                      {"tiles_skipped", f.tiles_skipped},
                      {"tiles_truncated", f.tiles_truncated},
                      {"partial_outputs_truncated", f.o_truncated},
                      {"largest_buffer_floats", f.largest_tensor_floats},
                      {"peak_bytes", {{"standard", f.memory.standard_bytes}, {"flash", f.memory.flash_bytes}}},
                      {"memory_vs_tokens", memory},
                      {"tiles", tiles}};
    }
    if (r.kv) {
        nlohmann::json tokens = nlohmann::json::array();
        for (const KvToken& t : r.kv->tokens) {
            nlohmann::json tok = {{"t", t.t}, {"cache_shape", t.cache_shape}, {"flops_cached", t.flops_cached},
                                  {"flops_recompute", t.flops_recompute}};
            if (!t.attn.empty()) tok["attn_item0"] = t.attn;
            tokens.push_back(std::move(tok));
        }
        j["kv_cache"] = {{"flops_cached", r.kv->flops_cached}, {"flops_recompute", r.kv->flops_recompute},
                         {"tokens", tokens}};
    }
    if (r.windows)
        j["windows"] = {{"grid", r.windows->grid}, {"window", r.windows->window}, {"shift", r.windows->shift},
                        {"windows_per_item", r.windows->windows}, {"region", r.windows->region}};
    if (r.merge) {
        const PatchMergeRecord& m = *r.merge;
        j["patch_merge"] = {{"grid", {m.grid, m.merged_grid}},
                            {"dim", {m.dim, m.merged_dim}},
                            {"heads", {m.heads, m.merged_heads}},
                            {"stage2_windows",
                             {{"grid", m.stage2.grid},
                              {"window", m.stage2.window},
                              {"shift", m.stage2.shift},
                              {"windows_per_item", m.stage2.windows},
                              {"region", m.stage2.region}}}};
    }
    return j;
}

}  // namespace attnscope
