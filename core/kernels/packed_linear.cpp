#include "packed_linear.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <new>
#include <stdexcept>
#include <string_view>
#include <utility>

#include <omp.h>
#include <sys/mman.h>

#include "vmath.hpp"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define ATTNSCOPE_AVX512 1
#else
#define ATTNSCOPE_AVX512 0
#endif

namespace attnscope {

namespace {

constexpr std::size_t kPanel = kInPlaceMatmulWidth;  // output features per panel: two 16-float vectors
constexpr std::size_t kMinIn = 64;       // below this many input features OpenBLAS is as fast
// Input features per pass: at most kMaxDepth, in near-equal passes. At 3072 a panel's slice is
// 384 KB and a 14-row block of x 168 KB: they fit an L2 of 1 MB with the next slice it prefetches.
// ViT-B's fc2 (3072 features) then takes one pass, not four 768-deep ones that each end in a
// barrier and read y back.
constexpr std::size_t kMaxDepth = 3072;
constexpr std::size_t kRowChunk = 336;   // rows per pass: their interleaved x (1 MB at depth 768) stays in L2
constexpr std::size_t kGroup = 4;        // panels a thread takes at a time

// [begin, end) of part `part` of `parts` near-equal parts of n.
std::pair<std::size_t, std::size_t> part_of(std::size_t n, std::size_t part, std::size_t parts) {
    return {n * part / parts, n * (part + 1) / parts};
}

}  // namespace

void* allocate_panels(std::size_t bytes) {
    constexpr std::size_t kHuge = std::size_t(2) << 20;
    void* p = nullptr;
    if (bytes < kHuge) {
        p = std::malloc(bytes ? bytes : 1);
    } else if (posix_memalign(&p, kHuge, bytes) != 0) {
        p = nullptr;
    }
    if (!p) throw std::bad_alloc();
    // Whole 2 MB pages only: the tail stays in 4 KB pages rather than fault in a huge page of which
    // it uses a part. A hint: without THP every page stays 4 KB. Off by default: a single linear runs
    // a little faster in huge pages, but where the kernel samples accessed bits (DAMON) the whole
    // forward is slower in them, with a longer tail (README, Benchmark).
    static const bool huge = [] {
        const char* v = std::getenv("ATTNSCOPE_HUGE_PAGES");
        return v && std::string_view(v) == "1";
    }();
    if (huge && bytes >= kHuge) madvise(p, bytes / kHuge * kHuge, MADV_HUGEPAGE);
    prefault_for_writing(p, bytes);  // pack_weight writes every panel next
    return p;
}

bool packed_linear_available() {
#if ATTNSCOPE_AVX512
    return vmath::avx512f();
#else
    return false;
#endif
}

std::shared_ptr<const PackedWeight> pack_weight(const Array& weight) {
    if (!packed_linear_available() || weight.dimension() != 2 || weight.shape()[1] < kMinIn || weight.shape()[0] == 0)
        return nullptr;
    auto packed = std::make_shared<PackedWeight>();
    const std::size_t out = weight.shape()[0], in = weight.shape()[1];
    const std::size_t panels = (out + kPanel - 1) / kPanel;
    packed->out = out;
    packed->in = in;
    packed->source = weight.data();
    packed->panels.resize(panels * in * kPanel);  // uninitialized (PanelAllocator)
    // panels[p, k, j] = W[32p + j, k], or 0 past the last output feature; written in order, once.
    float* dst = packed->panels.data();
    for (std::size_t p = 0; p < panels; ++p) {
        const std::size_t rows = std::min<std::size_t>(kPanel, out - p * kPanel);
        const float* w = weight.data() + p * kPanel * in;
        for (std::size_t k = 0; k < in; ++k, dst += kPanel) {
            for (std::size_t j = 0; j < rows; ++j) dst[j] = w[j * in + k];
            for (std::size_t j = rows; j < kPanel; ++j) dst[j] = 0.0f;
        }
    }
    return packed;
}

bool packed_from(const PackedWeight* packed, const Array& weight) {
    return packed && weight.dimension() == 2 && packed->source == weight.data() && packed->out == weight.shape()[0] &&
           packed->in == weight.shape()[1];
}

#if ATTNSCOPE_AVX512
namespace {

#define AVX512 __attribute__((target("avx512f")))

// 14 rows x 32 features: 28 accumulators + 2 weight vectors of 32 registers. The row loops are
// unrolled by pragma, not left to -O3: kept in arrays, the accumulators would go through memory (at -O2,
// RelWithDebInfo or a distribution's build, the tile ran at 40% of its -O3 rate).
constexpr int kTileRows = 14;

// Input feature k of a tile (x, ws as in tile below): lo[r], hi[r] += x(r, k) * ws[k * ld_w + 0:32]
// for each row r. Always inlined, so that the accumulators stay in registers.
template <int Rows, bool Interleaved>
AVX512 __attribute__((always_inline)) inline void add_feature(std::size_t k, const float* xs, std::size_t ld_x,
                                                              const float* ws, std::size_t ld_w, __m512 (&lo)[Rows],
                                                              __m512 (&hi)[Rows]) {
    const __m512 w_lo = _mm512_loadu_ps(ws + k * ld_w), w_hi = _mm512_loadu_ps(ws + k * ld_w + 16);
#pragma GCC unroll 14
    for (int r = 0; r < Rows; ++r) {
        const __m512 xv = _mm512_set1_ps(Interleaved ? xs[k * Rows + r] : xs[r * ld_x + k]);
        lo[r] = _mm512_fmadd_ps(xv, w_lo, lo[r]);
        hi[r] = _mm512_fmadd_ps(xv, w_hi, hi[r]);
    }
}

// One register tile over `depth` input features:
//   y[r, 0:32] = init[r, 0:32] + sum_k x(r, k) * ws[k * ld_w + 0:32]        for r < Rows
// Interleaved: x(r, k) = xs[k * Rows + r] (this tile's rows of x packed together); else
// x(r, k) = xs[r * ld_x + k] (rows read in place). ws: a panel's slice, rows ld_w apart (32 when
// packed). init rows are ld_init apart (0: one row for all, the bias). While it runs, the tile
// prefetches `prefetch_lines` cache lines from `prefetch` into L2: a share of the next panel's slice.
template <int Rows, bool Interleaved>
AVX512 void tile(const float* xs, std::size_t ld_x, const float* ws, std::size_t ld_w, std::size_t depth,
                 const float* init, std::size_t ld_init, float* y, std::size_t ld_y, const float* prefetch,
                 std::size_t prefetch_lines) {
    __m512 lo[Rows], hi[Rows];
#pragma GCC unroll 14
    for (int r = 0; r < Rows; ++r) {
        lo[r] = _mm512_loadu_ps(init + r * ld_init);
        hi[r] = _mm512_loadu_ps(init + r * ld_init + 16);
    }
    std::size_t k = 0;
    for (; k < std::min(prefetch_lines, depth); ++k) {
        _mm_prefetch(reinterpret_cast<const char*>(prefetch + k * 16), _MM_HINT_T1);
        add_feature<Rows, Interleaved>(k, xs, ld_x, ws, ld_w, lo, hi);
    }
    for (; k < depth; ++k) add_feature<Rows, Interleaved>(k, xs, ld_x, ws, ld_w, lo, hi);
#pragma GCC unroll 14
    for (int r = 0; r < Rows; ++r) {
        _mm512_storeu_ps(y + r * ld_y, lo[r]);
        _mm512_storeu_ps(y + r * ld_y + 16, hi[r]);
    }
}

using TileFn = void (*)(const float*, std::size_t, const float*, std::size_t, std::size_t, const float*, std::size_t,
                        float*, std::size_t, const float*, std::size_t);

template <bool Interleaved, int... Rows>
constexpr std::array<TileFn, sizeof...(Rows) + 1> tiles_for(std::integer_sequence<int, Rows...>) {
    return {nullptr, &tile<Rows + 1, Interleaved>...};
}
// kTiles[r]: the tile of r rows (1 <= r <= kTileRows) over packed x; kInPlaceTiles[r]: over x's rows.
constexpr auto kTiles = tiles_for<true>(std::make_integer_sequence<int, kTileRows>{});
constexpr auto kInPlaceTiles = tiles_for<false>(std::make_integer_sequence<int, kTileRows>{});

// A block of consecutive rows that one register tile covers.
struct RowBlock {
    std::size_t first, rows;
};

// Rows cut into chunks of at most kRowChunk, each chunk into near-equal blocks of at most kTileRows
// (197 rows: 15 blocks of 13-14, not 14 of 14 and one of 1). chunk_ends[c]: one past chunk c's last block.
void plan_rows(std::size_t rows, std::vector<RowBlock>& blocks, std::vector<std::size_t>& chunk_ends) {
    const std::size_t chunks = (rows + kRowChunk - 1) / kRowChunk;
    for (std::size_t c = 0; c < chunks; ++c) {
        const auto [r0, r1] = part_of(rows, c, chunks);
        const std::size_t n = (r1 - r0 + kTileRows - 1) / kTileRows;
        for (std::size_t b = 0; b < n; ++b) {
            const auto [b0, b1] = part_of(r1 - r0, b, n);
            blocks.push_back({r0 + b0, b1 - b0});
        }
        chunk_ends.push_back(blocks.size());
    }
}

}  // namespace

void packed_linear(const float* x, std::size_t rows, const PackedWeight& w, const float* bias, float* y, int threads) {
    const std::size_t in = w.in, out = w.out, panels = (out + kPanel - 1) / kPanel;
    if (rows == 0) return;
    std::vector<RowBlock> blocks;
    std::vector<std::size_t> chunk_ends;
    plan_rows(rows, blocks, chunk_ends);

    // x [rows, in] -> xs: each block's rows interleaved, [in, block rows], at offset first * in.
    thread_local std::vector<float> xs_buffer;
    if (xs_buffer.size() < rows * in) xs_buffer.resize(rows * in);
    float* xs = xs_buffer.data();
    // The bias, zero-padded to whole panels: the tiles' first init row.
    std::vector<float> bias_padded(panels * kPanel, 0.0f);
    if (bias) std::copy(bias, bias + out, bias_padded.begin());
    // One counter of claimed panel groups per pass (row chunk x depth slice).
    const std::size_t groups = (panels + kGroup - 1) / kGroup;
    const std::size_t depth_passes = (in + kMaxDepth - 1) / kMaxDepth, passes = chunk_ends.size() * depth_passes;
    // [k0, k1) of the input features that pass `pass` sums over.
    const auto depth_of = [&](std::size_t pass) { return part_of(in, pass % depth_passes, depth_passes); };
    std::vector<std::atomic<std::size_t>> pass_claims(passes);
    for (auto& c : pass_claims) c.store(0, std::memory_order_relaxed);

#pragma omp parallel num_threads(std::max(1, std::min<int>(threads, static_cast<int>(panels))))
    {
        const std::size_t t = static_cast<std::size_t>(omp_get_thread_num());
        const std::size_t n = static_cast<std::size_t>(omp_get_num_threads());
        for (std::size_t b = t; b < blocks.size(); b += n) {
            const RowBlock blk = blocks[b];
            const float* src = x + blk.first * in;
            float* dst = xs + blk.first * in;
            for (std::size_t k = 0; k < in; ++k)
                for (std::size_t r = 0; r < blk.rows; ++r) *dst++ = src[r * in + k];
        }
#pragma omp barrier
        alignas(64) float partial[kTileRows * kPanel];  // the last panel's tile when out % 32 != 0
        std::size_t carried = groups;  // a group of this pass claimed in the pass before
        // Panel p's slice from input feature k0 on.
        const auto slice = [&](std::size_t p, std::size_t k0) { return w.panels.data() + (p * in + k0) * kPanel; };
        for (std::size_t pass = 0; pass < passes; ++pass) {
            const std::size_t chunk = pass / depth_passes;
            const auto [k0, k1] = depth_of(pass);
            const std::size_t first_block = chunk ? chunk_ends[chunk - 1] : 0, end_block = chunk_ends[chunk];
            const std::size_t chunk_blocks = end_block - first_block;
            const std::size_t depth = k1 - k0;
            const std::size_t lines = depth * kPanel / 16;  // of the next panel's slice
            const std::size_t lines_per_tile = (lines + chunk_blocks - 1) / chunk_blocks;
            // Panels go to the threads kGroup at a time, as each asks: on a shared machine a core
            // slowed by another process takes fewer. A thread claims its next group as it starts
            // the last panel of the current one (from the next pass once this one has none left),
            // so that it can prefetch that group's first panel too. Each pass ends in a barrier:
            // the next pass adds to the same outputs.
            std::size_t g = carried < groups ? carried : pass_claims[pass].fetch_add(1);
            carried = groups;
            while (g < groups) {
                const std::size_t g0 = g * kGroup, g1 = std::min(panels, g0 + kGroup);
                std::size_t g_next = groups;
                for (std::size_t p = g0; p < g1; ++p) {
                    const float* ws = slice(p, k0);
                    const float* next = p + 1 < g1 ? slice(p + 1, k0) : nullptr;
                    if (p + 1 == g1) {
                        g_next = pass_claims[pass].fetch_add(1);
                        if (g_next < groups) {
                            next = slice(g_next * kGroup, k0);
                        } else if (pass + 1 < passes) {
                            carried = pass_claims[pass + 1].fetch_add(1);
                            if (carried < groups) next = slice(carried * kGroup, depth_of(pass + 1).first);
                        }
                    }
                    const std::size_t cols = std::min<std::size_t>(kPanel, out - p * kPanel);
                    for (std::size_t b = first_block; b < end_block; ++b) {
                        const RowBlock blk = blocks[b];
                        const std::size_t i = b - first_block;
                        const std::size_t prefetch_lines =
                            next ? std::min(lines_per_tile, lines - std::min(lines, i * lines_per_tile)) : 0;
                        const float* prefetch = next ? next + i * lines_per_tile * 16 : nullptr;
                        const float* xs_block = xs + blk.first * in + k0 * blk.rows;
                        float* y_block = y + blk.first * out + p * kPanel;
                        if (cols == kPanel) {
                            const bool first = k0 == 0;
                            kTiles[blk.rows](xs_block, 0, ws, kPanel, depth,
                                             first ? bias_padded.data() + p * kPanel : y_block, first ? 0 : out,
                                             y_block, out, prefetch, prefetch_lines);
                            continue;
                        }
                        // A partial panel: the tile works on `partial`, then its first `cols` columns go to y.
                        if (k0 == 0)
                            for (std::size_t r = 0; r < blk.rows; ++r)
                                std::copy_n(bias_padded.data() + p * kPanel, kPanel, partial + r * kPanel);
                        else
                            for (std::size_t r = 0; r < blk.rows; ++r)
                                std::copy_n(y_block + r * out, cols, partial + r * kPanel);
                        kTiles[blk.rows](xs_block, 0, ws, kPanel, depth, partial, kPanel, partial, kPanel, prefetch,
                                         prefetch_lines);
                        for (std::size_t r = 0; r < blk.rows; ++r) std::copy_n(partial + r * kPanel, cols, y_block + r * out);
                    }
                }
                g = g_next;
            }
#pragma omp barrier
        }
    }
}

void in_place_matmul(const float* a, std::size_t ld_a, const float* b, std::size_t ld_b, std::size_t n, std::size_t k,
                     std::size_t m, float* y) {
    if (m % kPanel != 0) throw std::logic_error("in_place_matmul: m must be a multiple of 32");
    alignas(64) static const float zeros[kPanel] = {};
    // b's rows side by side first (k * m floats, 50 KB for v at N = 197, c = 64): read in place, a
    // strided v puts every row of the sum on another page.
    thread_local std::vector<float> b_rows;
    if (ld_b != m) {
        if (b_rows.size() < k * m) b_rows.resize(k * m);
        for (std::size_t i = 0; i < k; ++i) std::copy_n(b + i * ld_b, m, b_rows.data() + i * m);
        b = b_rows.data();
    }
    const std::size_t blocks = (n + kTileRows - 1) / kTileRows;
    for (std::size_t bl = 0; bl < blocks; ++bl) {
        const auto [r0, r1] = part_of(n, bl, blocks);
        for (std::size_t p = 0; p < m / kPanel; ++p)
            kInPlaceTiles[r1 - r0](a + r0 * ld_a, ld_a, b + p * kPanel, m, k, zeros, 0, y + r0 * m + p * kPanel, m,
                                   nullptr, 0);
    }
}
#else
void in_place_matmul(const float*, std::size_t, const float*, std::size_t, std::size_t, std::size_t, std::size_t,
                     float*) {
    throw std::logic_error("in_place_matmul: this build has no AVX-512 kernel");
}
void packed_linear(const float*, std::size_t, const PackedWeight&, const float*, float*, int) {
    throw std::logic_error("packed_linear: this build has no AVX-512 kernel (pack_weight returns nullptr here)");
}
#endif

}  // namespace attnscope
