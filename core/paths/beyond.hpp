// Beyond the textbook path: masks, FlashAttention tiling, a KV cache and Swin's windows.
//
// - Masks (every path): `causal` hides key j from query i when j > i; `valid_tokens[b]` hides the
//   padding keys j >= valid_tokens[b] of batch item b (PyTorch's key_padding_mask). Hidden scores
//   become -inf before softmax (a `masked` step between `scaled` and `attn`, present only when a
//   mask is on, so every other step keeps its name and meaning). Query rows of padding tokens still
//   see the valid keys (no row is ever fully hidden, so no NaN); their outputs are discarded
//   downstream, so the row-sum check covers only the rows of valid queries.
// - flash (core/paths/flash.cpp): the tiled online-softmax forward; scores/scaled/attn/attn_drop (and k_t)
//   do not exist; the tiles are recorded in FlashRecord.
// - kv_cache (core/paths/kv_cache.cpp): causal decoding, one token at a time, the cache [B, h, t, c]
//   growing; per-token records in KvRecord; context/merged/out assembled from the per-token rows.
// - windowed (core/paths/windows.cpp): Swin's window_partition, attention within M x M windows (optionally
//   shifted by M/2 with Swin's mask), window_reverse; with patch_merge, Swin's PatchMerging and a
//   second windowed stage on the merged grid (H/2 x H/2 tokens, 2C channels, 2h heads).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config.hpp"
#include "mask.hpp"
#include "pipeline.hpp"
#include "trace.hpp"

namespace attnscope {

// ---- FlashAttention ---------------------------------------------------------------------------

struct FlashTile {
    std::size_t row_block = 0, col_block = 0;  // in the row_blocks x col_blocks grid
    std::size_t row0 = 0, rows = 0;            // query rows row0 .. row0 + rows - 1
    std::size_t col0 = 0, cols = 0;            // key columns
    bool skipped = false;                      // causal: every key is after every query, not computed
    std::vector<float> m, l;  // [rows] running max and running sum after this tile
    std::vector<float> o;     // [rows, c] running output (rescaled, not yet divided by l); empty over budget
};

struct MemoryPoint {
    std::size_t tokens = 0;
    std::uint64_t standard_bytes = 0;  // q, k, v, scaled + attn [B, h, N, N], context
    std::uint64_t flash_bytes = 0;     // q, k, v, O, m, l, one S and one P tile
};

struct FlashRecord {
    std::size_t tile_rows = 0, tile_cols = 0;   // Br x Bc
    std::size_t tokens = 0, head_dim = 0;       // N, c
    std::size_t row_blocks = 0, col_blocks = 0;
    std::size_t batch_item = 0, head = 0;       // the (b, head) whose tiles are recorded
    std::vector<FlashTile> tiles;               // in computation order: row block outer, column block inner
    bool o_truncated = false;                   // partial outputs omitted after kFlashOutputBudget floats
    bool tiles_truncated = false;               // only the first kFlashMaxTiles tiles are in `tiles`
    std::size_t tiles_total = 0;                // over every (b, head)
    std::size_t tiles_skipped = 0;              // causal tiles above the diagonal, over every (b, head)
    std::vector<float> final_m, final_l;        // [N] for (batch_item, head)
    std::vector<float> row_max, row_sum;        // [B, h, N] final m and l of every row: attn = exp(s - m) / l
                                                // (core/paths/attention_tiles.hpp recomputes any tile from them)
    MemoryPoint memory;                         // this config
    std::vector<MemoryPoint> memory_vs_tokens;  // the same B, C, h, Br, Bc at N = 64 .. 4096 (and this N)
    std::size_t largest_tensor_floats = 0;      // the largest buffer the flash path allocated (one tile or [N, c])
};
constexpr std::size_t kFlashOutputBudget = std::size_t(1) << 21;  // floats of partial outputs kept (8 MiB)
constexpr std::size_t kFlashMaxTiles = 4096;  // tiles recorded (N = 1024 with 16 x 16 tiles); later ones are computed only

// Peak working memory of the attention core (float32), standard vs flash, from the shapes.
MemoryPoint attention_memory(const AttentionConfig& config, std::size_t tokens);

// ---- KV cache ---------------------------------------------------------------------------------

struct KvToken {
    std::size_t t = 0;                  // the token that arrived (0-based); the cache then holds t + 1
    Shape cache_shape;                  // [B, h, t + 1, c]
    std::vector<float> attn;            // [h, t + 1] its attention row, batch item 0 (empty over budget)
    std::uint64_t flops_cached = 0;     // this token with the cache
    std::uint64_t flops_recompute = 0;  // rerunning the layer on tokens 0..t
};

struct KvRecord {
    std::vector<KvToken> tokens;
    std::uint64_t flops_cached = 0, flops_recompute = 0;  // totals
    bool attn_truncated = false;
};

// ---- windows ----------------------------------------------------------------------------------

struct WindowRecord {
    std::size_t grid = 0;     // the tokens form a grid x grid patch grid
    std::size_t window = 0;   // M
    std::size_t shift = 0;    // M / 2 with --shift, else 0
    std::size_t windows = 0;  // nW = (grid / M)^2 per batch item
    std::vector<int> region;  // [grid * grid] Swin's region id of each token of the rolled grid (shift)
};

// ---- patch merging: Swin's hierarchy ------------------------------------------------------------

// PatchMerging's parameters and those of the second stage's attention.
struct PatchMergeWeights {
    Array norm_weight, norm_bias;  // [4C] nn.LayerNorm(4 * C)
    Array reduction_weight;        // [2C, 4C] nn.Linear(4 * C, 2 * C, bias=False)
    AttentionWeights stage2;       // the second stage's attention over 2C channels
};

// From config.seed: the norm as nn.LayerNorm starts (weight 1, bias 0), the reduction as nn.Linear
// starts (uniform +-1/sqrt(4C)), the second stage's attention initialised like the first stage's
// (default_weights) from streams of its own.
PatchMergeWeights default_patch_merge_weights(const AttentionConfig& config);

// The second stage: N/4 tokens on the H/2 x H/2 grid, 2C channels and 2h heads (Swin doubles the
// heads with the channels, so the head dim c stays), the same window M and shift, except that a
// window as large as the grid covers it whole and is not shifted (Swin's rule for small grids).
AttentionConfig stage2_config(const AttentionConfig& config);

struct PatchMergeRecord {
    std::size_t grid = 0, dim = 0, heads = 0;                       // the first stage: H, C, h
    std::size_t merged_grid = 0, merged_dim = 0, merged_heads = 0;  // the second: H/2, 2C, 2h
    WindowRecord stage2;                                            // the second stage's windows
};

// What the paths beyond the textbook record besides their steps.
struct BeyondRecord {
    AttentionPath path = AttentionPath::standard;
    std::shared_ptr<const FlashRecord> flash;
    std::shared_ptr<const KvRecord> kv;
    std::shared_ptr<const WindowRecord> windows;
    std::shared_ptr<const PatchMergeRecord> merge;  // windowed with patch_merge
};

// The prefix of the second stage's steps: "stage2_attn" is the first stage's "attn" one level up.
inline constexpr const char* kStage2Prefix = "stage2_";

// ---- the paths ------------------------------------------------------------------------------

// Problems with the mask, tile and window options (added to core/run's validate()).
void validate_beyond(const AttentionConfig& config, std::vector<Message>& problems);
// trace_bytes for the non-standard paths.
std::uint64_t beyond_trace_bytes(const AttentionConfig& config);

// Runs config.path (flash, kv_cache or windowed); called by core/run's run_attention for those paths.
Trace run_beyond(const AttentionConfig& config, const AttentionWeights& weights, const Tensor& input,
                 const RunHooks& hooks);

Trace run_flash(const AttentionConfig& config, const AttentionWeights& weights, const Tensor& input,
                const RunHooks& hooks);
Trace run_kv_cache(const AttentionConfig& config, const AttentionWeights& weights, const Tensor& input,
                   const RunHooks& hooks);
// merge: PatchMerging's and the second stage's weights (null: default_patch_merge_weights);
// read only with config.patch_merge.
Trace run_windowed(const AttentionConfig& config, const AttentionWeights& weights, const Tensor& input,
                   const RunHooks& hooks, const PatchMergeWeights* merge = nullptr);

// The pinned step names of each path, in order (flash: input..v, context..out_drop).
std::vector<std::string> path_step_names(const AttentionConfig& config);

// One or two lines for the command line: the path and mask, and what the path measured (flash:
// tiles and peak memory against the standard path; kv-cache: FLOPs against recomputing).
std::string beyond_summary(const Trace& trace);

// {"path", "flash": {...}, "kv_cache": {"tokens": [...]}, "windows": {...}} for trace.json.
nlohmann::json beyond_to_json(const BeyondRecord& record);

}  // namespace attnscope
