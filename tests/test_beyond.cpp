// Beyond the textbook: masks, FlashAttention tiles, the KV cache and Swin windows, each against
// PyTorch (tools/make_mask_golden.py, tools/make_window_golden.py) or the standard path.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "beyond.hpp"
#include "checks.hpp"
#include "flash.hpp"
#include "io.hpp"
#include "pipeline.hpp"
#include "run.hpp"
#include "trace_json.hpp"
#include "weights.hpp"

using namespace attnscope;
namespace fs = std::filesystem;

namespace {

const fs::path kMasks = fs::path(ATTNSCOPE_TEST_DATA) / "masks";
const fs::path kWindows = fs::path(ATTNSCOPE_TEST_DATA) / "windows";
const fs::path kPatchMerge = fs::path(ATTNSCOPE_TEST_DATA) / "patch_merge";

nlohmann::json read_json(const fs::path& p) {
    std::ifstream in(p);
    REQUIRE(in.good());
    return nlohmann::json::parse(in);
}

// |ours - ref| <= tol * max(1, |ref|) everywhere; equal infinities count as equal. Returns the worst
// absolute error over the finite entries.
double check_close(const Array& ours, const Array& ref, double tol, const std::string& what) {
    CAPTURE(what);
    REQUIRE(shape_of(ours) == shape_of(ref));
    double worst = 0.0;
    std::size_t bad = 0;
    for (std::size_t i = 0; i < ours.size(); ++i) {
        const double o = ours.data()[i], r = ref.data()[i];
        if (std::isinf(r) || std::isinf(o)) {
            bad += !(o == r);
            continue;
        }
        const double d = std::fabs(o - r);
        worst = std::max(worst, d);
        bad += !(d <= tol * std::max(1.0, std::fabs(r)));
    }
    CAPTURE(worst);
    CHECK(bad == 0);
    return worst;
}

struct Fixture {
    AttentionConfig config;
    AttentionWeights weights;
    Tensor input;
    nlohmann::json meta;
};

Fixture load_fixture(const fs::path& dir) {
    Fixture f;
    f.meta = read_json(dir / "meta.json");
    f.config.batch = f.meta["batch"];
    f.config.tokens = f.meta["tokens"];
    f.config.dim = f.meta["dim"];
    f.config.heads = f.meta["heads"];
    f.config.qkv_bias = f.meta["qkv_bias"];
    if (f.meta.contains("causal")) f.config.causal = f.meta["causal"];
    if (f.meta.contains("valid_tokens") && !f.meta["valid_tokens"].is_null())
        f.config.valid_tokens = f.meta["valid_tokens"].get<std::vector<std::size_t>>();
    f.weights = load_attention_weights((dir / "weights.safetensors").string(), std::nullopt, f.config.dim);
    f.input = Tensor{read_npy((dir / "input.npy").string()), {"B", "N", "C"}};
    return f;
}

std::vector<fs::path> cases(const fs::path& root) {
    std::vector<fs::path> dirs;
    for (const auto& e : fs::directory_iterator(root))
        if (e.is_directory()) dirs.push_back(e.path());
    std::sort(dirs.begin(), dirs.end());
    return dirs;
}

AttentionConfig small_config(std::size_t N, std::size_t C = 64, std::size_t h = 2, std::size_t B = 2) {
    AttentionConfig c;
    c.batch = B, c.tokens = N, c.dim = C, c.heads = h, c.qkv_bias = true, c.seed = 7;
    return c;
}

}  // namespace

// ---- masks --------------------------------------------------------------------------------------

TEST_CASE("masks: causal and key padding equal PyTorch masked_fill then softmax within 1e-5") {
    const auto dirs = cases(kMasks);
    REQUIRE(dirs.size() == 3);
    for (const auto& dir : dirs) {
        CAPTURE(dir.string());
        const Fixture f = load_fixture(dir);
        const Trace t = run_attention(f.config, f.weights, f.input);
        REQUIRE(t.find("masked") != nullptr);
        CHECK(t.at("attn").inputs == std::vector<std::string>{"masked"});
        for (const char* step : {"masked", "attn", "context", "merged", "out"})
            check_close(t.at(step).tensor().values, read_npy((dir / (std::string(step) + ".npy")).string()), 1e-5, step);
        CHECK(t.checks.shapes_ok());
        CHECK(t.checks.nonfinite.ok());  // the -inf of the mask are on purpose
        const RowSumCheck* r = t.checks.row_sum("attn");
        REQUIRE(r);
        std::size_t valid_rows = 0;
        for (std::size_t b = 0; b < f.config.batch; ++b)
            valid_rows += f.config.valid_tokens.empty() ? f.config.tokens : f.config.valid_tokens[b];
        CHECK(r->rows == valid_rows * f.config.heads);
        CHECK(r->failing_rows == 0);
    }
}

TEST_CASE("masks: without a mask the steps and their names are the textbook ones") {
    const Trace t = run_attention(small_config(8));
    CHECK(t.find("masked") == nullptr);
    CHECK(t.steps.size() == attention_step_names().size());
    AttentionConfig c = small_config(8);
    c.causal = true;
    const Trace m = run_attention(c);
    CHECK(m.steps.size() == attention_step_names().size() + 1);
    std::vector<std::string> names;
    for (const Step& s : m.steps) names.push_back(s.name);
    CHECK(names == path_step_names(c));
    // the upper triangle of every head is exactly 0, row 0 attends only to itself
    const Array& attn = m.at("attn").tensor().values;
    CHECK(attn(1, 1, 0, 0) == 1.0f);
    CHECK(attn(0, 0, 3, 4) == 0.0f);
}

TEST_CASE("masks: validate names --valid-tokens when the counts are wrong") {
    AttentionConfig c = small_config(16);
    c.valid_tokens = {12, 16, 3};
    auto p = validate(c, UINT64_MAX);
    REQUIRE(!p.empty());
    CHECK(english(p.front()).find("--valid-tokens 12,16,3 has 3 values but --batch is 2") != std::string::npos);
    c.valid_tokens = {0, 16};
    p = validate(c, UINT64_MAX);
    REQUIRE(!p.empty());
    CHECK(english(p.front()).find("must be in 1..N = 16") != std::string::npos);
    c.valid_tokens = {12, 17};
    CHECK(!validate(c, UINT64_MAX).empty());
    c.valid_tokens = {12, 16};
    CHECK(validate(c, UINT64_MAX).empty());
}

// ---- FlashAttention -----------------------------------------------------------------------------

TEST_CASE("flash: equals the standard path within 1e-5 for several N and tile sizes with and without masks") {
    struct Case {
        std::size_t N, Br, Bc;
        bool causal;
        std::vector<std::size_t> valid;
    };
    const Case cases_[] = {{16, 16, 16, false, {}}, {16, 4, 8, true, {}},   {37, 8, 5, false, {}},
                           {197, 16, 16, false, {}}, {197, 16, 16, true, {}}, {64, 64, 1, true, {}},
                           {50, 7, 16, false, {20, 50}}, {50, 16, 7, true, {33, 1}}, {10, 32, 32, true, {}}};
    double worst = 0.0;
    for (const Case& k : cases_) {
        CAPTURE(k.N);
        CAPTURE(k.Br);
        CAPTURE(k.Bc);
        CAPTURE(k.causal);
        AttentionConfig std_cfg = small_config(k.N);
        std_cfg.causal = k.causal;
        std_cfg.valid_tokens = k.valid;
        AttentionConfig flash_cfg = std_cfg;
        flash_cfg.path = AttentionPath::flash;
        flash_cfg.tile_rows = k.Br, flash_cfg.tile_cols = k.Bc;
        REQUIRE(validate(flash_cfg, UINT64_MAX).empty());
        const Trace s = run_attention(std_cfg), f = run_attention(flash_cfg);
        for (const char* step : {"context", "context_t", "merged", "out", "out_drop"})
            worst = std::max(worst, check_close(f.at(step).tensor().values, s.at(step).tensor().values, 1e-5, step));
        CHECK(f.checks.shapes_ok());
        CHECK(f.checks.nonfinite.ok());
    }
    MESSAGE("flash vs standard, worst |difference|: " << worst);
}

TEST_CASE("flash: the N x N steps do not exist and the tiles hold the running max and sum") {
    AttentionConfig c = small_config(197, 64, 2, 1);
    c.path = AttentionPath::flash;
    c.causal = true;
    const Trace f = run_attention(c);
    std::vector<std::string> names;
    for (const Step& s : f.steps) {
        names.push_back(s.name);
        const Shape sh = s.shape();
        for (std::size_t i = 0; i + 1 < sh.size(); ++i) CHECK_FALSE((sh[i] == 197 && sh[i + 1] == 197));
    }
    CHECK(names == std::vector<std::string>{"input", "qkv", "qkv_split", "qkv_heads", "q", "k", "v", "context",
                                            "context_t", "merged", "out", "out_drop"});
    REQUIRE(f.beyond);
    REQUIRE(f.beyond->flash);
    const FlashRecord& r = *f.beyond->flash;
    CHECK(r.row_blocks == 13);  // ceil(197 / 16)
    CHECK(r.col_blocks == 13);
    CHECK(r.tiles.size() == 13 * 13);
    CHECK(r.tiles_total == 13 * 13 * 2);               // every (b, head)
    CHECK(r.tiles_skipped == 13 * 12 / 2 * 2);         // above the diagonal
    CHECK(r.tiles.back().rows == 197 - 12 * 16);      // the last block is ragged
    CHECK(r.largest_tensor_floats < 197 * 197);
    CHECK(r.memory.flash_bytes < r.memory.standard_bytes);
    // m and l of the last tile of each row block are the row max and softmax denominator of the
    // standard path's masked scores
    AttentionConfig s_cfg = c;
    s_cfg.path = AttentionPath::standard;
    const Trace s = run_attention(s_cfg);
    const Array& masked = s.at("masked").tensor().values;  // [B, h, N, N']
    double worst_m = 0, worst_l = 0;
    for (std::size_t i = 0; i < 197; ++i) {
        double mx = -INFINITY, sum = 0;
        for (std::size_t j = 0; j < 197; ++j) mx = std::max<double>(mx, masked(0, 0, i, j));
        for (std::size_t j = 0; j < 197; ++j) sum += std::exp(double(masked(0, 0, i, j)) - mx);
        worst_m = std::max(worst_m, std::fabs(r.final_m[i] - mx));
        worst_l = std::max(worst_l, std::fabs(r.final_l[i] - sum) / sum);
    }
    CHECK(worst_m < 1e-5);
    CHECK(worst_l < 1e-5);
    // a row's running max never decreases from tile to tile
    for (std::size_t t = 1; t < r.tiles.size(); ++t)
        if (r.tiles[t].row_block == r.tiles[t - 1].row_block)
            for (std::size_t i = 0; i < r.tiles[t].rows; ++i) CHECK(r.tiles[t].m[i] >= r.tiles[t - 1].m[i]);
}

TEST_CASE("flash: tile records are bounded for large N") {
    AttentionConfig c = small_config(1100, 16, 1, 1);
    c.path = AttentionPath::flash;
    c.tile_rows = c.tile_cols = 16;
    const Trace f = run_attention(c);
    const FlashRecord& r = *f.beyond->flash;
    CHECK(r.tiles.size() == kFlashMaxTiles);
    CHECK(r.tiles_truncated);
    CHECK(r.tiles_total == 69 * 69);
    std::size_t floats = 0;
    for (const FlashTile& t : r.tiles) floats += t.o.size();
    CHECK(floats <= kFlashOutputBudget);
}

TEST_CASE("flash: equals PyTorch's causal fixture") {
    const fs::path dir = kMasks / "causal_b2_n16_c16_h2";
    Fixture f = load_fixture(dir);
    f.config.path = AttentionPath::flash;
    f.config.tile_rows = 4, f.config.tile_cols = 8;
    const Trace t = run_attention(f.config, f.weights, f.input);
    for (const char* step : {"context", "merged", "out"})
        check_close(t.at(step).tensor().values, read_npy((dir / (std::string(step) + ".npy")).string()), 1e-5, step);
}

TEST_CASE("flash: training with attention dropout is refused with a message naming --flash") {
    AttentionConfig c = small_config(16);
    c.path = AttentionPath::flash;
    c.training = true;
    c.attn_drop = 0.1f;
    const auto p = validate(c, UINT64_MAX);
    REQUIRE(p.size() == 1);
    CHECK(english(p.front()).find("--flash runs in eval mode only") != std::string::npos);
    c.attn_drop = 0.0f;
    c.proj_drop = 0.2f;  // dropout after the projection still works
    CHECK(validate(c, UINT64_MAX).empty());
}

TEST_CASE("flash: memory grows like N for flash and N squared for the standard path") {
    AttentionConfig c = small_config(64, 768, 12, 1);
    const MemoryPoint a = attention_memory(c, 1024), b = attention_memory(c, 2048);
    CHECK(double(b.flash_bytes) / a.flash_bytes == doctest::Approx(2.0).epsilon(0.01));
    CHECK(double(b.standard_bytes) / a.standard_bytes > 3.0);
    // standard at N = 1024, h = 12, c = 64: q, k, v, context 4 * 12 * 1024 * 64 floats + 2 * 12 * 1024^2
    CHECK(a.standard_bytes == 4ull * (4ull * 12 * 1024 * 64 + 2ull * 12 * 1024 * 1024));
}

// ---- KV cache ------------------------------------------------------------------------------------

TEST_CASE("kv-cache: each token's output equals the matching row of full causal attention") {
    for (const std::vector<std::size_t>& valid : {std::vector<std::size_t>{}, std::vector<std::size_t>{9, 20}}) {
        AttentionConfig c = small_config(20, 48, 3);
        c.valid_tokens = valid;
        c.path = AttentionPath::kv_cache;
        AttentionConfig s_cfg = c;
        s_cfg.path = AttentionPath::standard;
        s_cfg.causal = true;
        const Trace kv = run_attention(c), s = run_attention(s_cfg);
        CHECK(kv.config.causal);  // implied
        for (const char* step : {"attn", "context", "merged", "out"})
            check_close(kv.at(step).tensor().values, s.at(step).tensor().values, 1e-5, step);
        REQUIRE(kv.beyond);
        REQUIRE(kv.beyond->kv);
        const KvRecord& r = *kv.beyond->kv;
        REQUIRE(r.tokens.size() == 20);
        for (std::size_t t = 0; t < 20; ++t) {
            CHECK(r.tokens[t].cache_shape == Shape{2, 3, t + 1, 16});
            REQUIRE(r.tokens[t].attn.size() == 3 * (t + 1));
            for (std::size_t j = 0; j <= t; ++j)  // head 1 of batch item 0
                CHECK(std::fabs(r.tokens[t].attn[(t + 1) + j] - s.at("attn").tensor().values(0, 1, t, j)) < 1e-6);
        }
        CHECK(r.flops_cached < r.flops_recompute);
        CHECK(kv.checks.all_ok());
    }
}

TEST_CASE("kv-cache: equals PyTorch's causal fixture and counts FLOPs by the stated formulas") {
    const fs::path dir = kMasks / "causal_b2_n16_c16_h2";
    Fixture f = load_fixture(dir);
    f.config.path = AttentionPath::kv_cache;
    const Trace t = run_attention(f.config, f.weights, f.input);
    for (const char* step : {"attn", "context", "merged", "out"})
        check_close(t.at(step).tensor().values, read_npy((dir / (std::string(step) + ".npy")).string()), 1e-5, step);
    const KvRecord& r = *t.beyond->kv;
    const std::uint64_t B = 2, C = 16, T = 16;  // the last token: 16 keys in the cache
    CHECK(r.tokens.back().flops_cached == B * (2 * C * 3 * C + 4 * T * C + 2 * C * C));
    CHECK(r.tokens.back().flops_recompute == B * (2 * T * C * 3 * C + 4 * T * T * C + 2 * T * C * C));
    const auto j = trace_to_json(t);
    CHECK(j["beyond"]["kv_cache"]["tokens"].size() == 16);
    CHECK(j["beyond"]["kv_cache"]["tokens"][3]["cache_shape"] == nlohmann::json::array({2, 2, 4, 8}));
}

// ---- windows -------------------------------------------------------------------------------------

// A windows or patch-merging case: the fixture with the windowed path, its window and shift.
Fixture load_windowed_fixture(const fs::path& dir, bool patch_merge) {
    Fixture f = load_fixture(dir);
    f.config.path = AttentionPath::windowed;
    f.config.window = f.meta["window"];
    f.config.shift = f.meta["shift"];
    f.config.patch_merge = patch_merge;
    REQUIRE(validate(f.config, UINT64_MAX).empty());
    return f;
}

TEST_CASE("windows: Swin's window_partition roll mask and window_reverse equal PyTorch within 1e-5") {
    const auto dirs = cases(kWindows);
    REQUIRE(dirs.size() == 2);
    for (const auto& dir : dirs) {
        CAPTURE(dir.string());
        const Fixture f = load_windowed_fixture(dir, false);
        const Trace t = run_attention(f.config, f.weights, f.input);
        std::vector<std::string> names;
        for (const Step& s : t.steps) names.push_back(s.name);
        CHECK(names == path_step_names(f.config));
        for (const char* step : {"windows", "attn", "out", "tokens_out"})
            check_close(t.at(step).tensor().values, read_npy((dir / (std::string(step) + ".npy")).string()), 1e-5, step);
        CHECK(t.checks.shapes_ok());
        CHECK(t.checks.all_ok());
        CHECK(t.at("win_perm").contiguous == false);
        CHECK(t.at("windows").is_view == false);  // .contiguous() copies
        REQUIRE(t.beyond->windows);
        CHECK(t.beyond->windows->windows == 4);
        CHECK(t.beyond->windows->shift == (f.config.shift ? 2u : 0u));
    }
}

TEST_CASE("windows: validate explains the grid and the class token") {
    AttentionConfig c = small_config(197);
    c.path = AttentionPath::windowed;
    c.window = 7;
    auto p = validate(c, UINT64_MAX);
    REQUIRE(!p.empty());
    CHECK(english(p.front()).find("197 = 14*14 + 1: leave out the class token, --tokens 196") != std::string::npos);
    c.tokens = 196;
    CHECK(validate(c, UINT64_MAX).empty());
    c.window = 5;
    p = validate(c, UINT64_MAX);
    REQUIRE(!p.empty());
    CHECK(english(p.front()).find("--window 5 must divide the grid side 14") != std::string::npos);
}

// ---- patch merging -------------------------------------------------------------------------------

TEST_CASE("patch merging: Swin's PatchMerging and the second stage equal PyTorch within 1e-5") {
    const auto dirs = cases(kPatchMerge);
    REQUIRE(dirs.size() == 3);
    for (const auto& dir : dirs) {
        CAPTURE(dir.string());
        const Fixture f = load_windowed_fixture(dir, true);
        const std::size_t C = f.config.dim;
        PatchMergeWeights m;
        m.norm_weight = read_npy((dir / "norm_weight.npy").string());
        m.norm_bias = read_npy((dir / "norm_bias.npy").string());
        m.reduction_weight = read_npy((dir / "reduction_weight.npy").string());
        m.stage2 = load_attention_weights((dir / "stage2.safetensors").string(), std::nullopt, 2 * C);
        const Trace t = run_windowed(f.config, f.weights, f.input, {}, &m);

        std::vector<std::string> names;
        for (const Step& s : t.steps) names.push_back(s.name);
        CHECK(names == path_step_names(f.config));
        const AttentionConfig stage2 = stage2_config(f.config);
        CHECK(stage2.window == f.meta["stage2_window"].get<std::size_t>());
        CHECK(stage2.shift == f.meta["stage2_shift"].get<bool>());
        CHECK(stage2.heads == 2 * f.config.heads);  // Swin doubles the heads with the channels
        CHECK((t.find("stage2_masked") != nullptr) == stage2.shift);
        for (const char* step :
             {"tokens_out", "patch_merge_grid", "patch_merge_x0", "patch_merge_x1", "patch_merge_x2", "patch_merge_x3",
              "patch_merge_cat", "patch_merge_flat", "patch_merge_norm", "patch_merge_reduction", "stage2_windows",
              "stage2_attn", "stage2_out", "stage2_tokens_out"}) {
            CAPTURE(step);
            const Array torch_values = read_npy((dir / (std::string(step) + ".npy")).string());
            REQUIRE(t.at(step).shape() == shape_of(torch_values));
            check_close(t.at(step).tensor().values, torch_values, 1e-5, step);
        }
        for (const auto& [step, strides] : f.meta["strides"].items()) {  // PyTorch's tensor.stride()
            CAPTURE(step);
            CHECK(t.at(step).torch_strides == strides.get<Strides>());
        }
        CHECK(t.at("patch_merge_x1").is_view);
        CHECK_FALSE(t.at("patch_merge_x1").contiguous);
        CHECK_FALSE(t.at("patch_merge_cat").is_view);
        CHECK(t.checks.shapes_ok());
        CHECK(t.checks.all_ok());
        REQUIRE(t.checks.row_sum("stage2_attn"));
        REQUIRE(t.beyond->merge);
        const PatchMergeRecord& r = *t.beyond->merge;
        CHECK(r.merged_grid * 2 == r.grid);
        CHECK(r.merged_dim == 2 * C);
        CHECK(r.stage2.window == stage2.window);
        const auto j = trace_to_json(t);
        CHECK(j["config"]["patch_merge"] == true);
        CHECK(j["beyond"]["patch_merge"]["dim"] == nlohmann::json::array({C, 2 * C}));
    }
}

TEST_CASE("patch merging: the seeded weights are new streams of the seed, the first stage is unchanged") {
    AttentionConfig c = small_config(64, 16, 2, 1);
    c.path = AttentionPath::windowed;
    c.window = 4;
    const Trace plain = run_attention(c);
    c.patch_merge = true;
    const Trace merged = run_attention(c);
    check_close(merged.at("tokens_out").tensor().values, plain.at("tokens_out").tensor().values, 0.0, "tokens_out");
    const PatchMergeWeights a = default_patch_merge_weights(c), b = default_patch_merge_weights(c);
    CHECK(a.reduction_weight == b.reduction_weight);
    CHECK(a.stage2.qkv_weight == b.stage2.qkv_weight);
    CHECK(shape_of(a.reduction_weight) == Shape{32, 64});
    CHECK(shape_of(a.stage2.qkv_weight) == Shape{96, 32});
    // Not the first stage's numbers again: under the same stream uniform(-b, b) would give the same
    // fractions of the bound b = sqrt(6 / (4 * dim)).
    const AttentionWeights first = default_weights(c);
    const double b1 = std::sqrt(6.0 / 64.0), b2 = std::sqrt(6.0 / 128.0);
    CHECK(a.stage2.qkv_weight(0, 0) / b2 != doctest::Approx(first.qkv_weight(0, 0) / b1));
    CHECK(a.norm_weight == xt::ones<float>({64}));  // nn.LayerNorm's own start
    CHECK(a.norm_bias == xt::zeros<float>({64}));
}

TEST_CASE("patch merging: validate refuses an odd grid, a merged grid the window does not tile, and no window") {
    AttentionConfig c = small_config(81, 16, 2, 1);  // 9 x 9
    c.path = AttentionPath::windowed;
    c.window = 3;
    c.patch_merge = true;
    auto p = validate(c, UINT64_MAX);
    REQUIRE(!p.empty());
    CHECK(english(p.front()).find("grid side must be even; N = 81 = 9*9") != std::string::npos);
    c.tokens = 144;  // 12 x 12 -> 6 x 6, windows of 4 do not tile 6
    c.window = 4;
    p = validate(c, UINT64_MAX);
    REQUIRE(!p.empty());
    CHECK(english(p.front()).find("merged grid side 6 (half of 12) is not divisible by --window 4") != std::string::npos);
    c.window = 6;  // 12 x 12 in windows of 6, then 6 x 6 as one window
    CHECK(validate(c, UINT64_MAX).empty());
    CHECK(stage2_config(c).window == 6);
    c.path = AttentionPath::standard;
    c.window = 0;
    p = validate(c, UINT64_MAX);
    REQUIRE(!p.empty());
    CHECK(english(p.front()).find("--patch-merge needs --window M") != std::string::npos);
}

TEST_CASE("patch merging: the memory budget counts the merging and the second stage") {
    AttentionConfig c = small_config(256, 16, 2, 2);
    c.path = AttentionPath::windowed;
    c.window = 4;
    c.shift = true;
    const std::uint64_t without = trace_bytes(c);
    c.patch_merge = true;
    const Trace t = run_attention(c);
    std::uint64_t recorded = 0, added = 0;
    for (const Step& s : t.steps) {  // every step's tensor, as trace_bytes counts them, plus the row sums
        std::uint64_t bytes = s.tensor().values.size() * sizeof(float);
        if (const RowSumCheck* r = t.checks.row_sum(s.name)) bytes += r->sums.values.size() * sizeof(float);
        recorded += bytes;
        if (s.name.rfind("patch_merge_", 0) == 0 || s.name.rfind(kStage2Prefix, 0) == 0) added += bytes;
    }
    CHECK(recorded <= trace_bytes(c));
    CHECK(added <= trace_bytes(c) - without);
}

TEST_CASE("flash and kv-cache follow --no-scale like the standard path") {
    AttentionConfig cfg;
    cfg.batch = 1;
    cfg.tokens = 20;
    cfg.dim = 64;
    cfg.heads = 2;
    cfg.causal = true;
    cfg.scaled = false;  // scores 8x larger than with c^-0.5: a path that kept the scale would differ
    const Trace s = run_attention(cfg);
    for (AttentionPath path : {AttentionPath::flash, AttentionPath::kv_cache}) {
        AttentionConfig p = cfg;
        p.path = path;
        p.tile_rows = 8;
        p.tile_cols = 4;
        const Trace t = run_attention(p);
        for (const char* step : {"context", "out"}) check_close(t.at(step).tensor().values, s.at(step).tensor().values, 1e-5, step);
    }
}
