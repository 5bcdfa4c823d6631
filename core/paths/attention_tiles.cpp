// The flash path's attention map on demand: exact tiles, the block-max overview, a tile cache.
#include "attention_tiles.hpp"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <string>

#include "beyond.hpp"
#include "pipeline.hpp"
#include "serial_blas.hpp"
#include "vmath.hpp"

namespace attnscope {

namespace {

// The flat data of a recorded step's tensor (the one place this file touches Step).
const float* step_data(const Trace& trace, const char* name, const Shape& expected) {
    const Step* step = trace.find(name);
    if (!step || step->shape() != expected) return nullptr;
    return step->tensor().values.data();
}

}  // namespace

FlashAttentionSource flash_attention_source(const Trace& trace, std::string* why) {
    FlashAttentionSource s;
    auto fail = [&](const char* text) {
        if (why) *why = text;
        return FlashAttentionSource{};
    };
    const FlashRecord* r = trace.beyond ? trace.beyond->flash.get() : nullptr;
    if (!r) return fail("the attention map on demand needs the flash path (--flash)");
    const AttentionConfig& c = trace.config;
    const std::size_t B = c.batch, h = c.heads, N = c.tokens, hd = c.head_dim();
    if (r->row_max.size() != B * h * N || r->row_sum.size() != B * h * N)
        return fail("this flash trace kept no per-row max and sum (m, l) for every head");
    const Shape qs = {B, h, N, hd};
    s.q = step_data(trace, "q", qs);
    s.k = step_data(trace, "k", qs);
    if (!s.q || !s.k) return fail("the flash trace has no q and k steps of shape [B, h, N, c]");
    s.row_max = r->row_max.data();
    s.row_sum = r->row_sum.data();
    s.batch = B, s.heads = h, s.tokens = N, s.head_dim = hd;
    s.scale = attention_scale(c);
    s.causal = c.causal;
    s.valid_tokens = c.valid_tokens;
    if (why) why->clear();
    return s;
}

void attention_tile(const FlashAttentionSource& s, std::size_t b, std::size_t head, std::size_t r0, std::size_t r1,
                    std::size_t c0, std::size_t c1, float* out) {
    const std::size_t N = s.tokens, c = s.head_dim;
    if (!s.ok() || b >= s.batch || head >= s.heads || r0 >= r1 || c0 >= c1 || r1 > N || c1 > N)
        throw std::out_of_range("attention_tile: block [" + std::to_string(b) + ", " + std::to_string(head) + ", " +
                                std::to_string(r0) + ":" + std::to_string(r1) + ", " + std::to_string(c0) + ":" +
                                std::to_string(c1) + "] is outside attn [" + std::to_string(s.batch) + ", " +
                                std::to_string(s.heads) + ", " + std::to_string(N) + ", " + std::to_string(N) + "]");
    const std::size_t rows = r1 - r0, cols = c1 - c0;
    const std::size_t valid = s.valid_tokens.empty() ? N : s.valid_tokens.at(b);
    const std::size_t bh = b * s.heads + head;
    // Every key of the tile hidden (causal: all after every query; padding): exact zeros, no work.
    if ((s.causal && c0 > r1 - 1) || c0 >= valid) {
        std::fill(out, out + rows * cols, 0.0f);
        return;
    }
    const float* Q = s.q + (bh * N + r0) * c;  // [rows, c]
    const float* K = s.k + (bh * N + c0) * c;  // [cols, c]
    // S = Q_tile K_tile^T * scale                                                     [rows, cols]
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(rows), int(cols), int(c), s.scale, Q, int(c), K, int(c),
                0.0f, out, int(cols));
    // attn = exp(S - m) / l, hidden keys 0                                              [rows, cols]
    const float* m = s.row_max + bh * N + r0;
    const float* l = s.row_sum + bh * N + r0;
    for (std::size_t i = 0; i < rows; ++i) {
        float* row = out + i * cols;
        const float inv_l = 1.0f / l[i];
        // keys c0 + j visible for j < visible_end (causal: j <= r0 + i; padding: < valid)
        std::size_t end = std::min(c1, valid);
        if (s.causal) end = std::min(end, r0 + i + 1);
        const std::size_t visible_end = end > c0 ? end - c0 : 0;
        vmath::exp_shifted(row, m[i], inv_l, row, visible_end);
        std::fill(row + visible_end, row + cols, 0.0f);
    }
}

std::vector<float> attention_tile(const FlashAttentionSource& s, std::size_t b, std::size_t head, std::size_t r0,
                                  std::size_t r1, std::size_t c0, std::size_t c1) {
    std::vector<float> out(r1 > r0 && c1 > c0 ? (r1 - r0) * (c1 - c0) : 0);
    attention_tile(s, b, head, r0, r1, c0, c1, out.data());
    return out;
}

float attention_weight(const FlashAttentionSource& s, std::size_t b, std::size_t head, std::size_t row,
                       std::size_t col) {
    float v = 0.0f;
    attention_tile(s, b, head, row, row + 1, col, col + 1, &v);
    return v;
}

bool attention_hidden(const FlashAttentionSource& s, std::size_t b, std::size_t row, std::size_t col) {
    const std::size_t valid = s.valid_tokens.empty() ? s.tokens : s.valid_tokens.at(b);
    return col >= valid || (s.causal && col > row);
}

std::size_t overview_block(std::size_t tokens, std::size_t max_cells) {
    max_cells = std::max<std::size_t>(1, max_cells);
    return std::max<std::size_t>(1, (tokens + max_cells - 1) / max_cells);
}

std::size_t overview_cells(std::size_t tokens, std::size_t block) { return (tokens + block - 1) / block; }

void attention_overview_rows(const FlashAttentionSource& s, std::size_t b, std::size_t head, std::size_t block,
                             std::size_t band0, std::size_t band1, float* out) {
    const std::size_t N = s.tokens;
    if (block == 0) throw std::out_of_range("attention_overview_rows: block must be at least 1");
    const std::size_t cells = overview_cells(N, block);
    if (band0 >= band1 || band1 > cells)
        throw std::out_of_range("attention_overview_rows: bands " + std::to_string(band0) + ".." +
                                std::to_string(band1) + " outside 0.." + std::to_string(cells));
    if (!s.ok() || b >= s.batch || head >= s.heads)  // checked here: no exception may leave the parallel loop
        throw std::out_of_range("attention_overview_rows: [" + std::to_string(b) + ", " + std::to_string(head) +
                                "] is outside the heads [" + std::to_string(s.batch) + ", " + std::to_string(s.heads) +
                                "]");
    const std::size_t r0 = band0 * block, r1 = std::min(N, band1 * block), rows = r1 - r0;
    // Key chunks of whole blocks, about 256 keys wide: one [rows, chunk] tile per thread in memory
    // at a time. Chunks fill disjoint cells, so the threads take them as they finish one.
    const std::size_t chunk = std::max<std::size_t>(1, 256 / block) * block, chunks = (N + chunk - 1) / chunk;
    std::fill(out, out + (band1 - band0) * cells, 0.0f);  // weights are >= 0: max starts at 0
    SerialBlas serial;
#pragma omp parallel if (chunks >= 2 && rows * N >= (std::size_t(1) << 15))
    {
        std::vector<float> tile(rows * std::min(chunk, N));
#pragma omp for schedule(dynamic)
        for (std::size_t k = 0; k < chunks; ++k) {
            const std::size_t c0 = k * chunk, c1 = std::min(N, c0 + chunk), cols = c1 - c0;
            attention_tile(s, b, head, r0, r1, c0, c1, tile.data());
            for (std::size_t i = 0; i < rows; ++i) {
                float* o = out + ((r0 + i) / block - band0) * cells;
                const float* row = tile.data() + i * cols;
                for (std::size_t j = 0; j < cols; ++j) {
                    float& cell = o[(c0 + j) / block];
                    cell = std::max(cell, row[j]);
                }
            }
        }
    }
}

std::vector<float> attention_overview(const FlashAttentionSource& s, std::size_t b, std::size_t head,
                                      std::size_t block) {
    const std::size_t cells = overview_cells(s.tokens, block);
    std::vector<float> out(cells * cells);
    attention_overview_rows(s, b, head, block, 0, cells, out.data());
    return out;
}

// ---- the tile cache ---------------------------------------------------------------------------

AttentionTileCache::AttentionTileCache(std::size_t byte_cap, std::size_t tile)
    : cap_(byte_cap), tile_(std::max<std::size_t>(1, tile)) {}

const std::vector<float>* AttentionTileCache::find(std::size_t b, std::size_t head, std::size_t tr, std::size_t tc) {
    auto it = tiles_.find(Key{b, head, tr, tc});
    if (it == tiles_.end()) return nullptr;
    lru_.splice(lru_.begin(), lru_, it->second.lru);
    return &it->second.values;
}

const std::vector<float>& AttentionTileCache::get(const FlashAttentionSource& s, std::size_t b, std::size_t head,
                                                  std::size_t tr, std::size_t tc) {
    if (const std::vector<float>* hit = find(b, head, tr, tc)) return *hit;
    const std::size_t N = s.tokens;
    const std::size_t r0 = tr * tile_, c0 = tc * tile_;
    if (r0 >= N || c0 >= N)
        throw std::out_of_range("AttentionTileCache: tile (" + std::to_string(tr) + ", " + std::to_string(tc) +
                                ") is outside the " + std::to_string(N) + " x " + std::to_string(N) + " map");
    const std::size_t r1 = std::min(N, r0 + tile_), c1 = std::min(N, c0 + tile_);
    const auto start = std::chrono::steady_clock::now();
    std::vector<float> values = attention_tile(s, b, head, r0, r1, c0, c1);
    seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ++computed_;
    const std::size_t bytes = values.size() * sizeof(float);
    // Drop the least recently used tiles until the new one fits (it always stays, even over the cap).
    while (!lru_.empty() && bytes_ + bytes > cap_) {
        auto old = tiles_.find(lru_.back());
        bytes_ -= old->second.values.size() * sizeof(float);
        tiles_.erase(old);
        lru_.pop_back();
    }
    const Key key{b, head, tr, tc};
    lru_.push_front(key);
    bytes_ += bytes;
    Entry& e = tiles_[key];
    e.values = std::move(values);
    e.lru = lru_.begin();
    return e.values;
}

void AttentionTileCache::clear() {
    tiles_.clear();
    lru_.clear();
    bytes_ = 0;
}

}  // namespace attnscope
