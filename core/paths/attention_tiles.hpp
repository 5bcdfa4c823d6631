// The attention map of the flash path, one tile at a time, on demand.
//
// The flash path never stores attn [B, h, N, N'] (core/paths/flash.cpp); it keeps q, k [B, h, N, c] as
// steps and, per row, the final running max m and sum l [B, h, N] (FlashRecord::row_max/row_sum).
// From those, any block of the map is exact without the rest:
//   attn[b, head, r0:r1, c0:c1] = exp(q[r0:r1] k[c0:c1]^T * scale - m[r0:r1]) / l[r0:r1]
// (hidden keys of the causal / key padding masks are exactly 0), which costs
// (r1 - r0) (c1 - c0) (2c + 1) operations: proportional to the tile, never to N x N.
//
// The overview summarises the whole map on a coarse grid: each cell is the MAX of a block of
// block x block weights (peaks stay visible when the map is shrunk). It visits every tile once, in
// bands, holding one band of tiles at a time (memory ~ block x N, never N x N).
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <tuple>
#include <vector>

#include "trace.hpp"

namespace attnscope {

// What the flash run kept that the map needs, read from a Trace (pointers into it: valid while the
// Trace lives). ok() is false for traces of other paths (no FlashRecord::row_max) or files.
struct FlashAttentionSource {
    const float* q = nullptr;        // [B, h, N, c]
    const float* k = nullptr;        // [B, h, N', c]
    const float* row_max = nullptr;  // [B, h, N] final m
    const float* row_sum = nullptr;  // [B, h, N] final l
    std::size_t batch = 0, heads = 0, tokens = 0, head_dim = 0;
    float scale = 1.0f;                     // c^-0.5, or 1 with --no-scale
    bool causal = false;                    // key j hidden from query i when j > i
    std::vector<std::size_t> valid_tokens;  // per batch item; keys >= valid are padding (empty: all N)
    bool ok() const { return q && k && row_max && row_sum && tokens > 0; }
};

// The source of a flash-path trace; ok() false (and *why filled) when the trace cannot give one.
FlashAttentionSource flash_attention_source(const Trace& trace, std::string* why = nullptr);

// attn[b, head, r0:r1, c0:c1] into out (row-major [r1 - r0, c1 - c0]). Throws std::out_of_range
// when the block is outside [B, h, N, N'] or empty.
void attention_tile(const FlashAttentionSource& source, std::size_t b, std::size_t head, std::size_t r0,
                    std::size_t r1, std::size_t c0, std::size_t c1, float* out);
std::vector<float> attention_tile(const FlashAttentionSource& source, std::size_t b, std::size_t head,
                                  std::size_t r0, std::size_t r1, std::size_t c0, std::size_t c1);

// One weight (the hover value): attention_tile of a 1 x 1 block.
float attention_weight(const FlashAttentionSource& source, std::size_t b, std::size_t head, std::size_t row,
                       std::size_t col);

// True when the causal / key padding mask hides key col from query row of batch item b (its weight is 0).
bool attention_hidden(const FlashAttentionSource& source, std::size_t b, std::size_t row, std::size_t col);

// The overview's block side for an N x N map and at most max_cells cells per side: ceil(N / max_cells).
std::size_t overview_block(std::size_t tokens, std::size_t max_cells);
// Cells per side of the overview: ceil(N / block).
std::size_t overview_cells(std::size_t tokens, std::size_t block);

// Rows band0..band1-1 of the overview of (b, head): out[i, j] = max of attn over the block
// rows (band0 + i) * block .., cols j * block .. (clipped at N), out is [band1 - band0, cells].
void attention_overview_rows(const FlashAttentionSource& source, std::size_t b, std::size_t head,
                             std::size_t block, std::size_t band0, std::size_t band1, float* out);
// The whole overview [cells, cells].
std::vector<float> attention_overview(const FlashAttentionSource& source, std::size_t b, std::size_t head,
                                      std::size_t block);

// Exact tiles of a fixed grid (tile x tile cells; the last row/column of tiles is clipped at N),
// kept up to a byte cap: the least recently used tile is dropped first. One cache belongs to one
// trace: clear() it when the trace changes.
class AttentionTileCache {
public:
    explicit AttentionTileCache(std::size_t byte_cap = std::size_t(64) << 20, std::size_t tile = 256);

    std::size_t tile_side() const { return tile_; }
    std::size_t byte_cap() const { return cap_; }
    std::size_t bytes() const { return bytes_; }
    std::size_t size() const { return tiles_.size(); }
    std::size_t computed() const { return computed_; }  // tiles computed so far (misses)
    double compute_seconds() const { return seconds_; }  // CPU time spent computing them

    // The cached tile (tr, tc) of (b, head), or nullptr (no computation; marks it recently used).
    const std::vector<float>* find(std::size_t b, std::size_t head, std::size_t tr, std::size_t tc);
    // The tile, computed first when missing (may drop older tiles). Its rows: tile rows tr * tile ..
    // min(N, (tr + 1) * tile), row-major. The reference stays valid until the next get() or clear().
    const std::vector<float>& get(const FlashAttentionSource& source, std::size_t b, std::size_t head,
                                  std::size_t tr, std::size_t tc);
    void clear();

private:
    using Key = std::tuple<std::size_t, std::size_t, std::size_t, std::size_t>;  // b, head, tr, tc
    struct Entry {
        std::vector<float> values;
        std::list<Key>::iterator lru;
    };
    std::size_t cap_, tile_;
    std::size_t bytes_ = 0, computed_ = 0;
    double seconds_ = 0.0;
    std::map<Key, Entry> tiles_;
    std::list<Key> lru_;  // most recently used first
};

}  // namespace attnscope
