// The flash path's attention map on demand (core/paths/attention_tiles): exact tiles and the block-max
// overview against the standard path's attn step and PyTorch (tools/make_tile_golden.py), the
// tile cache's byte cap.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include <nlohmann/json.hpp>

#include "attention_tiles.hpp"
#include "beyond.hpp"
#include "io.hpp"
#include "pipeline.hpp"
#include "run.hpp"
#include "weights.hpp"

using namespace attnscope;
namespace fs = std::filesystem;

namespace {

const fs::path kTiles = fs::path(ATTNSCOPE_TEST_DATA) / "tiles";

AttentionConfig small_config(std::size_t N, std::size_t C = 64, std::size_t h = 2, std::size_t B = 2) {
    AttentionConfig c;
    c.batch = B, c.tokens = N, c.dim = C, c.heads = h, c.qkv_bias = true, c.seed = 11;
    return c;
}

AttentionConfig flash_of(AttentionConfig c, std::size_t Br = 16, std::size_t Bc = 16) {
    c.path = AttentionPath::flash;
    c.tile_rows = Br, c.tile_cols = Bc;
    return c;
}

// attn[b, head, :, :] of a [B, h, N, N] array
const float* map_of(const Array& attn, std::size_t b, std::size_t head) {
    const std::size_t h = attn.shape()[1], N = attn.shape()[2];
    return attn.data() + (b * h + head) * N * N;
}

// Worst |tile - reference| over the map of (b, head), walked in tiles of tr x tc.
double worst_tile_error(const FlashAttentionSource& s, const float* ref, std::size_t b, std::size_t head,
                        std::size_t tr, std::size_t tc) {
    const std::size_t N = s.tokens;
    double worst = 0.0;
    for (std::size_t r0 = 0; r0 < N; r0 += tr)
        for (std::size_t c0 = 0; c0 < N; c0 += tc) {
            const std::size_t r1 = std::min(N, r0 + tr), c1 = std::min(N, c0 + tc);
            const std::vector<float> tile = attention_tile(s, b, head, r0, r1, c0, c1);
            for (std::size_t i = r0; i < r1; ++i)
                for (std::size_t j = c0; j < c1; ++j) {
                    const float v = tile[(i - r0) * (c1 - c0) + (j - c0)];
                    const double e = std::isfinite(v) ? std::abs(double(v) - double(ref[i * N + j]))
                                                      : std::numeric_limits<double>::infinity();
                    worst = std::max(worst, e);
                }
        }
    return worst;
}

// The block max of a reference map, the way PyTorch's max_pool2d(ceil_mode=True) takes it.
std::vector<float> block_max(const float* ref, std::size_t N, std::size_t block) {
    const std::size_t cells = (N + block - 1) / block;
    std::vector<float> out(cells * cells, -1.0f);
    for (std::size_t i = 0; i < N; ++i)
        for (std::size_t j = 0; j < N; ++j) {
            float& cell = out[(i / block) * cells + j / block];
            cell = std::max(cell, ref[i * N + j]);
        }
    return out;
}

nlohmann::json read_json(const fs::path& p) {
    std::ifstream in(p);
    REQUIRE(in.good());
    return nlohmann::json::parse(in);
}

}  // namespace

TEST_CASE("tiles: equal the standard path's attn within 1e-5 for N 10 to 197 and several tile sizes") {
    struct Case {
        std::size_t N;
        bool causal, scaled;
        std::vector<std::size_t> valid;
    };
    const std::vector<Case> cases = {{10, false, true, {}},  {10, true, true, {}},     {37, true, false, {}},
                                     {64, false, false, {}}, {50, true, true, {31, 50}}, {197, false, true, {}},
                                     {197, true, true, {}},  {197, false, false, {120, 197}}};
    double worst = 0.0;
    for (const Case& k : cases) {
        AttentionConfig std_cfg = small_config(k.N);
        std_cfg.causal = k.causal, std_cfg.scaled = k.scaled, std_cfg.valid_tokens = k.valid;
        CAPTURE(k.N);
        CAPTURE(k.causal);
        CAPTURE(k.scaled);
        CAPTURE(k.valid.size());
        const Trace s = run_attention(std_cfg);
        const Trace f = run_attention(flash_of(std_cfg, 16, 8));
        REQUIRE(f.find("attn") == nullptr);  // the flash path never stored the map
        std::string why;
        const FlashAttentionSource src = flash_attention_source(f, &why);
        REQUIRE_MESSAGE(src.ok(), why);
        const Array& attn = s.at("attn").tensor().values;
        for (std::size_t b = 0; b < std_cfg.batch; ++b)
            for (std::size_t head = 0; head < std_cfg.heads; ++head)
                for (auto [tr, tc] : {std::pair<std::size_t, std::size_t>{1, 1}, {7, 5}, {16, 16}, {64, 33}, {k.N, k.N}}) {
                    if (k.N > 64 && tr == 1) continue;  // 1 x 1 tiles: the small maps are enough
                    const double e = worst_tile_error(src, map_of(attn, b, head), b, head, tr, tc);
                    CHECK(e <= 1e-5);
                    worst = std::max(worst, e);
                }
    }
    MESSAGE("tiles vs standard attn, worst |difference|: " << worst);
}

TEST_CASE("tiles: the overview's block max equals the max over the standard attn block") {
    for (bool causal : {false, true}) {
        AttentionConfig std_cfg = small_config(197, 64, 2, 1);
        std_cfg.causal = causal;
        const Trace s = run_attention(std_cfg);
        const Trace f = run_attention(flash_of(std_cfg));
        const FlashAttentionSource src = flash_attention_source(f);
        REQUIRE(src.ok());
        for (std::size_t head = 0; head < 2; ++head)
            for (std::size_t block : {1, 3, 8, 50, 197, 300}) {
                CAPTURE(causal);
                CAPTURE(block);
                const float* ref = map_of(s.at("attn").tensor().values, 0, head);
                const std::vector<float> expected = block_max(ref, 197, block);
                const std::vector<float> overview = attention_overview(src, 0, head, block);
                REQUIRE(overview.size() == expected.size());
                double worst = 0.0;
                for (std::size_t i = 0; i < expected.size(); ++i)
                    worst = std::max(worst, std::abs(double(overview[i]) - double(expected[i])));
                CHECK(worst <= 1e-5);
                // In bands (as the GUI computes it, a few rows of blocks per frame): the same map.
                const std::size_t cells = overview_cells(197, block);
                std::vector<float> banded(cells * cells);
                for (std::size_t b0 = 0; b0 < cells; b0 += 2)
                    attention_overview_rows(src, 0, head, block, b0, std::min(cells, b0 + 2), banded.data() + b0 * cells);
                // (sgemm may round a band's rows differently from the whole map's in the last bit)
                double band_diff = 0.0;
                for (std::size_t i = 0; i < banded.size(); ++i)
                    band_diff = std::max(band_diff, std::abs(double(banded[i]) - double(overview[i])));
                CHECK(band_diff <= 1e-6);
            }
    }
    CHECK(overview_block(4097, 512) == 9);
    CHECK(overview_cells(4097, 9) == 456);
    CHECK(overview_block(100, 512) == 1);
}

TEST_CASE("tiles: equal PyTorch's attn and max-pooled overview") {
    std::vector<fs::path> dirs;
    for (const auto& e : fs::directory_iterator(kTiles))
        if (e.is_directory()) dirs.push_back(e.path());
    std::sort(dirs.begin(), dirs.end());
    REQUIRE(dirs.size() == 2);
    for (const fs::path& dir : dirs) {
        CAPTURE(dir.filename().string());
        const nlohmann::json meta = read_json(dir / "meta.json");
        AttentionConfig c;
        c.batch = meta["batch"], c.tokens = meta["tokens"], c.dim = meta["dim"], c.heads = meta["heads"];
        c.qkv_bias = meta["qkv_bias"], c.causal = meta["causal"], c.scaled = meta["scaled"];
        if (!meta["valid_tokens"].is_null()) c.valid_tokens = meta["valid_tokens"].get<std::vector<std::size_t>>();
        const AttentionWeights w = load_attention_weights((dir / "weights.safetensors").string(), std::nullopt, c.dim);
        const Tensor x{read_npy((dir / "input.npy").string()), {"B", "N", "C"}};
        const Trace f = run_attention(flash_of(c, 4, 8), w, x);
        const FlashAttentionSource src = flash_attention_source(f);
        REQUIRE(src.ok());
        const Array attn = read_npy((dir / "attn.npy").string());
        const Array overview = read_npy((dir / "overview.npy").string());
        const std::size_t block = meta["overview_block"], N = c.tokens, cells = overview_cells(N, block);
        REQUIRE(shape_of(overview) == Shape{c.batch, c.heads, cells, cells});
        double worst_tile = 0.0, worst_overview = 0.0;
        for (std::size_t b = 0; b < c.batch; ++b)
            for (std::size_t head = 0; head < c.heads; ++head) {
                for (std::size_t t : {5, 16, 64})
                    worst_tile = std::max(worst_tile, worst_tile_error(src, map_of(attn, b, head), b, head, t, t));
                const std::vector<float> ours = attention_overview(src, b, head, block);
                const float* ref = overview.data() + (b * c.heads + head) * cells * cells;
                for (std::size_t i = 0; i < ours.size(); ++i)
                    worst_overview = std::max(worst_overview, std::abs(double(ours[i]) - double(ref[i])));
            }
        CHECK(worst_tile <= 1e-5);
        CHECK(worst_overview <= 1e-5);
        MESSAGE(dir.filename().string() << ": worst |tile - torch| " << worst_tile << ", overview " << worst_overview);
    }
}

TEST_CASE("tiles: a tile reads only its own query and key rows") {
    // q and k NaN everywhere but rows 8..11 (queries) and 20..26 (keys); m = 0, l = 1.
    const std::size_t N = 32, c = 4;
    std::vector<float> q(N * c, std::nanf("")), k(N * c, std::nanf("")), m(N, 0.0f), l(N, 1.0f);
    for (std::size_t i = 8; i < 12; ++i)
        for (std::size_t e = 0; e < c; ++e) q[i * c + e] = 0.1f * float(e + i);
    for (std::size_t j = 20; j < 27; ++j)
        for (std::size_t e = 0; e < c; ++e) k[j * c + e] = 0.05f * float(e) - 0.01f * float(j);
    FlashAttentionSource s;
    s.q = q.data(), s.k = k.data(), s.row_max = m.data(), s.row_sum = l.data();
    s.batch = 1, s.heads = 1, s.tokens = N, s.head_dim = c, s.scale = 0.5f;
    const std::vector<float> tile = attention_tile(s, 0, 0, 8, 12, 20, 27);
    REQUIRE(tile.size() == 4 * 7);
    for (std::size_t i = 0; i < 4; ++i)
        for (std::size_t j = 0; j < 7; ++j) {
            double dot = 0.0;
            for (std::size_t e = 0; e < c; ++e) dot += double(q[(8 + i) * c + e]) * double(k[(20 + j) * c + e]);
            CHECK(tile[i * 7 + j] == doctest::Approx(std::exp(0.5 * dot)).epsilon(1e-6));
        }
    // Causal: the tile above the diagonal is exact zeros without touching q or k.
    CHECK_FALSE(attention_hidden(s, 0, 3, 20));
    s.causal = true;
    CHECK(attention_hidden(s, 0, 3, 20));
    CHECK_FALSE(attention_hidden(s, 0, 20, 20));
    s.valid_tokens = {25};
    CHECK(attention_hidden(s, 0, 30, 26));
    CHECK_FALSE(attention_hidden(s, 0, 30, 24));
    const std::vector<float> hidden = attention_tile(s, 0, 0, 0, 4, 20, 27);
    CHECK(std::all_of(hidden.begin(), hidden.end(), [](float v) { return v == 0.0f; }));
    CHECK_THROWS_AS(attention_tile(s, 0, 0, 8, 33, 0, 4), std::out_of_range);
    CHECK_THROWS_AS(attention_tile(s, 0, 1, 0, 1, 0, 1), std::out_of_range);
    CHECK_THROWS_AS(attention_tile(s, 0, 0, 4, 4, 0, 1), std::out_of_range);
    // The overview's bands run on all threads: a bad head is refused before, never inside, the loop.
    CHECK_THROWS_AS(attention_overview(s, 0, 1, 2), std::out_of_range);
    CHECK_THROWS_AS(attention_overview(s, 1, 0, 2), std::out_of_range);
}

TEST_CASE("tiles: the cache stays under its byte cap and drops the least recently used tile") {
    const Trace f = run_attention(flash_of(small_config(40, 32, 2, 1)));
    const FlashAttentionSource src = flash_attention_source(f);
    REQUIRE(src.ok());
    // tiles of 16 x 16 (1 KiB); the last row and column of tiles are 8 wide
    AttentionTileCache cache(3 * 16 * 16 * sizeof(float), 16);
    const std::vector<float> first = cache.get(src, 0, 0, 0, 0);
    CHECK(first == attention_tile(src, 0, 0, 0, 16, 0, 16));
    CHECK(cache.get(src, 0, 0, 2, 2).size() == 8 * 8);
    cache.get(src, 0, 1, 0, 1);
    CHECK(cache.computed() == 3);
    CHECK(cache.find(0, 0, 0, 0) != nullptr);  // (0,0,0,0) is now the most recent; (0,0,2,2) the oldest
    cache.get(src, 0, 0, 1, 1);
    cache.get(src, 0, 0, 1, 0);
    CHECK(cache.bytes() <= cache.byte_cap());
    CHECK(cache.find(0, 0, 2, 2) == nullptr);
    CHECK(cache.find(0, 0, 0, 0) != nullptr);
    CHECK(cache.computed() == 5);
    cache.get(src, 0, 0, 0, 0);  // a hit: nothing computed
    CHECK(cache.computed() == 5);
    CHECK_THROWS_AS(cache.get(src, 0, 0, 3, 0), std::out_of_range);
    cache.clear();
    CHECK(cache.size() == 0);
    CHECK(cache.bytes() == 0);
}

TEST_CASE("tiles: the standard path and a flash trace without row statistics give no source and say why") {
    std::string why;
    CHECK_FALSE(flash_attention_source(run_attention(small_config(8)), &why).ok());
    CHECK(why.find("--flash") != std::string::npos);
    const Trace f = run_attention(flash_of(small_config(8)));
    CHECK(f.beyond->flash->row_max.size() == 2 * 2 * 8);
    CHECK(flash_attention_source(f).ok());
}
