// run_windowed: Swin Transformer's window attention on the token grid (Liu et al. 2021).
//
//     x = x.view(B, H, W, C)
//     x = torch.roll(x, shifts=(-s, -s), dims=(1, 2))                 # shifted windows only, s = M // 2
//     x = x.view(B, H // M, M, W // M, M, C).permute(0, 1, 3, 2, 4, 5)  # window_partition
//     x = x.contiguous().view(-1, M * M, C)                             # [B * nW, M*M, C]
//     x = attention(x, mask)   # the textbook steps, B' = B * nW sequences of N' = M*M tokens
//     x = x.view(B, H // M, W // M, M, M, C).permute(0, 1, 3, 2, 4, 5)  # window_reverse
//     x = x.contiguous().view(B, H, W, C)
//     x = torch.roll(x, shifts=(s, s), dims=(1, 2))                   # shifted windows only
//     x = x.view(B, H * W, C)
//
// With patch merging (Swin's PatchMerging between two stages), the block's output goes on:
//
//     x = x.view(B, H, W, C)
//     x0 = x[:, 0::2, 0::2, :]    # [B, H/2, W/2, C]: the top-left token of each 2 x 2 patch
//     x1 = x[:, 1::2, 0::2, :]    # bottom-left
//     x2 = x[:, 0::2, 1::2, :]    # top-right
//     x3 = x[:, 1::2, 1::2, :]    # bottom-right
//     x = torch.cat([x0, x1, x2, x3], -1).view(B, -1, 4 * C)            # [B, H/2*W/2, 4C]
//     x = self.reduction(self.norm(x))  # LayerNorm(4C), Linear(4C, 2C, bias=False): [B, H/2*W/2, 2C]
//
// and the second stage runs the same windowed block on the H/2 x W/2 grid with 2C channels and,
// as in Swin, twice the heads (the head dim c stays). Its steps carry the prefix "stage2_".
//
// The tokens must form a square grid (N = H * H): Swin has no class token, so a ViT sequence of
// 14 * 14 + 1 is refused with a message to leave the class token out. With the shift, tokens that
// were not neighbours before the roll (they wrapped around the border) share a window; Swin's mask
// hides them from each other (-inf here, -100 in Swin's code: both give exp() = 0 in float32).
#include <algorithm>
#include <cmath>

#include "beyond.hpp"
#include "checks.hpp"
#include "ops.hpp"
#include "random.hpp"
#include "recorder.hpp"
#include "views.hpp"

namespace attnscope {

namespace {

// torch.roll(x, shifts=(shift, shift), dims=(1, 2)) on x [B, H, W, C] (shift may be negative).
Tensor roll_grid(const Tensor& x, long shift) {
    const Shape s = shape_of(x.values);
    const std::size_t B = s[0], H = s[1], W = s[2], C = s[3];
    Tensor y{make_array(s), x.axes};
    auto wrap = [](long i, std::size_t n) { return static_cast<std::size_t>(((i % long(n)) + long(n)) % long(n)); };
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t i = 0; i < H; ++i)
            for (std::size_t j = 0; j < W; ++j) {
                const float* from = x.values.data() + ((b * H + i) * W + j) * C;
                float* to = y.values.data() + ((b * H + wrap(long(i) + shift, H)) * W + wrap(long(j) + shift, W)) * C;
                std::copy(from, from + C, to);
            }
    return y;
}

// Swin's img_mask: the region id of each cell of the rolled grid (slices (0, -M), (-M, -s), (-s, None)).
std::vector<int> swin_regions(std::size_t H, std::size_t M, std::size_t s) {
    std::vector<int> region(H * H);
    auto band = [&](std::size_t i) { return i < H - M ? 0 : (i < H - s ? 1 : 2); };
    for (std::size_t i = 0; i < H; ++i)
        for (std::size_t j = 0; j < H; ++j) region[i * H + j] = band(i) * 3 + band(j);
    return region;
}

// torch.cat([x0, x1, x2, x3], -1) on four views [B, H/2, W/2, C] -> [B, H/2, W/2, 4C]
Tensor cat_last(const std::vector<TensorView>& parts, const Axes& axes) {
    const Shape s = parts[0].shape;
    const std::size_t B = s[0], H = s[1], W = s[2], C = s[3], K = parts.size();
    Tensor y{make_array({B, H, W, K * C}), axes};
    float* to = y.values.data();
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t i = 0; i < H; ++i)
            for (std::size_t j = 0; j < W; ++j)
                for (const TensorView& part : parts) {
                    const float* from = part.data() + b * part.strides[0] + i * part.strides[1] + j * part.strides[2];
                    for (std::size_t k = 0; k < C; ++k) *to++ = from[k * part.strides[3]];
                }
    return y;
}

Array uniform_array(const Shape& shape, float bound, std::uint64_t seed, Stream stream) {
    Array a = make_array(shape);
    Rng rng(seed, stream);
    for (float& v : a) v = rng.uniform(-bound, bound);
    return a;
}

// The shapes the block's steps must have, for its config (B, N = H*H, C, h, M, shift).
std::vector<ExpectedShape> expected_block_shapes(const AttentionConfig& cfg, const std::string& prefix) {
    const std::size_t B = cfg.batch, N = cfg.tokens, C = cfg.dim, M = cfg.window;
    const std::size_t H = static_cast<std::size_t>(std::llround(std::sqrt(static_cast<double>(N)))), W = H;
    const std::size_t nH = H / M, nW_side = W / M, nW = nH * nW_side;
    std::vector<ExpectedShape> expected = {
        {"grid", "[B, H, W, C]", {B, H, W, C}},
        {"win_split", "[B, H/M, M, W/M, M, C]", {B, nH, M, nW_side, M, C}},
        {"win_perm", "[B, H/M, W/M, M, M, C]", {B, nH, nW_side, M, M, C}},
        {"windows", "[B*nW, M*M, C]", {B * nW, M * M, C}},
    };
    if (cfg.shift) expected.insert(expected.begin() + 1, {"shifted", "[B, H, W, C]", {B, H, W, C}});
    AttentionConfig sub = cfg;
    sub.batch = B * nW, sub.tokens = M * M;
    for (const ExpectedShape& e : expected_attention_shapes(sub))
        if (e.step != "input") expected.push_back({e.step, e.formula + " (B = B*nW, N = M*M)", e.shape});
    if (cfg.shift)
        expected.push_back({"masked", "[B, h, N, N] (B = B*nW, N = M*M)", {B * nW, cfg.heads, M * M, M * M}});
    expected.push_back({"win_merge", "[B, H/M, W/M, M, M, C]", {B, nH, nW_side, M, M, C}});
    expected.push_back({"win_unperm", "[B, H/M, M, W/M, M, C]", {B, nH, M, nW_side, M, C}});
    expected.push_back({"grid_out", "[B, H, W, C]", {B, H, W, C}});
    if (cfg.shift) expected.push_back({"unshifted", "[B, H, W, C]", {B, H, W, C}});
    expected.push_back({"tokens_out", "[B, N, C]", {B, N, C}});
    for (ExpectedShape& e : expected) e.step = prefix + e.step;
    return expected;
}

// The windowed block on the recorded x [B, N, C] (N = H * H), from `grid` to `tokens_out`, under
// the recorder's prefix. Returns tokens_out [B, N, C]; `record` receives the windows.
const Step& record_windowed_block(Recorder& rec, const Trace& trace, const AttentionConfig& cfg,
                                  const AttentionWeights& w, const Step& input, WindowRecord& record) {
    const std::size_t B = cfg.batch, N = cfg.tokens, C = cfg.dim, M = cfg.window;
    const std::size_t H = static_cast<std::size_t>(std::llround(std::sqrt(static_cast<double>(N)))), W = H;
    const std::size_t nH = H / M, nW_side = W / M, nW = nH * nW_side, s = cfg.shift ? M / 2 : 0;
    const std::string Ms = std::to_string(M), ss = std::to_string(s);

    // x.view(B, H, W, C)                                                      [B, H, W, C]
    TorchLayout layout = TorchLayout::contiguous({B, H, W, C});
    const Step* grid =
        &rec.add({"grid",
                  Op::reshape,
                  "x = x.view(B, H, W, C)",
                  "b (h w) C -> b h w C",
                  {input.name},
                  "view, no copy: the token axis is split into the patch grid rows and columns" + strides_note(layout)},
                 reshape(input.tensor(), {B, H, W, C}, {"B", "H", "W", "C"}), layout, true, &input.stats);
    // torch.roll(x, shifts=(-s, -s), dims=(1, 2))                              [B, H, W, C]
    if (cfg.shift)
        grid = &rec.add({"shifted", Op::roll, "x = torch.roll(x, shifts=(-" + ss + ", -" + ss + "), dims=(1, 2))",
                         "b h w C -> b h w C  (cyclic shift by -M/2 = -" + ss + ")", {"grid"},
                         "new contiguous tensor: the grid is rolled up and left by M/2, so the next windows straddle "
                         "the previous window borders; tokens that wrapped around are masked apart below"},
                        roll_grid(grid->tensor(), -static_cast<long>(s)), layout, false, &grid->stats);
    // x.view(B, H // M, M, W // M, M, C)                                      [B, H/M, M, W/M, M', C]
    layout = TorchLayout::contiguous({B, nH, M, nW_side, M, C});
    const Step& split = rec.add(
        {"win_split", Op::reshape, "x = x.view(B, H // M, M, W // M, M, C)  # window_partition, M = " + Ms,
         "b (wh m1) (ww m2) C -> b wh m1 ww m2 C", {grid->name},
         "view, no copy: rows and columns are each split into (window, position in the window)" + strides_note(layout)},
        reshape(grid->tensor(), {B, nH, M, nW_side, M, C}, {"B", "H/M", "M", "W/M", "M'", "C"}), layout, true, &grid->stats);
    // .permute(0, 1, 3, 2, 4, 5)                                              [B, H/M, W/M, M, M', C]
    layout = torch_permute(layout, {0, 1, 3, 2, 4, 5});
    // One window covering the grid (nW = 1) leaves every axis it swaps of size 1: still contiguous.
    const bool one_window = layout.is_contiguous();
    const Step& perm = rec.add(
        {"win_perm",
         Op::permute,
         ".permute(0, 1, 3, 2, 4, 5)",
         "b wh m1 ww m2 C -> b wh ww m1 m2 C",
         {"win_split"},
         std::string("view, no copy: the two window axes move next to each other, so each window's M x M tokens "
                     "become one block; ") +
             (one_window ? "with one window the axes swapped have size 1, so it stays contiguous" : "not contiguous") +
             strides_note(layout)},
        permute(split.tensor(), {0, 1, 3, 2, 4, 5}), layout, true, &split.stats);
    // .contiguous().view(-1, M * M, C)                                        [B * nW, M*M, C]
    layout = TorchLayout::contiguous({B * nW, M * M, C});
    const std::string sequences = "each window is now a sequence of M*M = " + std::to_string(M * M) +
                                  " tokens and the B * nW = " + std::to_string(B * nW) +
                                  " windows are the batch of the attention below";
    const Step& windows =
        rec.add({"windows",
                 Op::reshape,
                 "x_windows = x.contiguous().view(-1, M * M, C)",
                 "b wh ww m1 m2 C -> (b wh ww) (m1 m2) C",
                 {"win_perm"},
                 one_window ? "view, no copy: .contiguous() returns the contiguous tensor itself; " + sequences
                            : "copy: " + sequences},
                reshape(perm.tensor(), {B * nW, M * M, C}, {"B", "N", "C"}), layout, one_window, &perm.stats);

    // The textbook attention on B' = B * nW sequences of N' = M * M tokens.
    AttentionConfig sub = cfg;
    sub.batch = B * nW, sub.tokens = M * M, sub.path = AttentionPath::standard, sub.window = 0, sub.shift = false;
    const QkvSteps qkv = record_qkv_steps(rec, sub, w, windows);
    record.grid = H, record.window = M, record.shift = s, record.windows = nW;
    Array keep;
    if (cfg.shift) {
        record.region = swin_regions(H, M, s);
        keep = make_array({B * nW, M * M, M * M});  // [B', N', N'] 1 where both tokens come from the same region
        for (std::size_t b = 0; b < B; ++b)
            for (std::size_t wi = 0; wi < nW; ++wi)
                for (std::size_t i = 0; i < M * M; ++i)
                    for (std::size_t j = 0; j < M * M; ++j) {
                        auto region_of = [&](std::size_t t) {
                            const std::size_t r = (wi / nW_side) * M + t / M, c = (wi % nW_side) * M + t % M;
                            return record.region[r * W + c];
                        };
                        keep(b * nW + wi, i, j) = region_of(i) == region_of(j) ? 1.0f : 0.0f;
                    }
    }
    const Step& context = record_standard_attention(
        rec, sub, qkv, cfg.shift ? &keep : nullptr,
        "attn = attn.masked_fill(attn_mask[w] != 0, float(\"-inf\"))  # Swin's mask (it adds -100)",
        "new contiguous tensor: in a shifted window, tokens from different regions of the rolled grid (they were "
        "not neighbours: one wrapped around the border) get -inf, so they do not attend to each other");
    record_output_steps(rec, sub, w, context);
    const Step& out = trace.steps.back();

    // window_reverse: x.view(B, H // M, W // M, M, M, C)                      [B, H/M, W/M, M, M', C]
    layout = TorchLayout::contiguous({B, nH, nW_side, M, M, C});
    const Step& merge = rec.add(
        {"win_merge", Op::reshape, "x = x.view(B, H // M, W // M, M, M, C)  # window_reverse",
         "(b wh ww) (m1 m2) C -> b wh ww m1 m2 C", {out.name},
         "view, no copy: the batch of windows is split back into (batch, window row, window column)" +
             strides_note(layout)},
        reshape(out.tensor(), {B, nH, nW_side, M, M, C}, {"B", "H/M", "W/M", "M", "M'", "C"}), layout, true, &out.stats);
    // .permute(0, 1, 3, 2, 4, 5)                                              [B, H/M, M, W/M, M', C]
    layout = torch_permute(layout, {0, 1, 3, 2, 4, 5});
    const Step& unperm = rec.add(
        {"win_unperm",
         Op::permute,
         ".permute(0, 1, 3, 2, 4, 5)",
         "b wh ww m1 m2 C -> b wh m1 ww m2 C",
         {"win_merge"},
         std::string("view, no copy: the inverse permutation (it is its own inverse); ") +
             (one_window ? "contiguous, as with one window nothing moves" : "not contiguous") + strides_note(layout)},
        permute(merge.tensor(), {0, 1, 3, 2, 4, 5}), layout, true, &merge.stats);
    // .contiguous().view(B, H, W, C)                                          [B, H, W, C]
    layout = TorchLayout::contiguous({B, H, W, C});
    const Step* back =
        &rec.add({"grid_out",
                  Op::reshape,
                  "x = x.contiguous().view(B, H, W, C)",
                  "b wh m1 ww m2 C -> b (wh m1) (ww m2) C",
                  {"win_unperm"},
                  one_window ? "view, no copy: the one window already is the patch grid"
                             : "copy: the windows are laid back onto the patch grid"},
                 reshape(unperm.tensor(), {B, H, W, C}, {"B", "H", "W", "C"}), layout, one_window, &unperm.stats);
    // torch.roll(x, shifts=(s, s), dims=(1, 2))                               [B, H, W, C]
    if (cfg.shift)
        back = &rec.add({"unshifted", Op::roll, "x = torch.roll(x, shifts=(" + ss + ", " + ss + "), dims=(1, 2))",
                         "b h w C -> b h w C  (cyclic shift by +M/2)", {"grid_out"},
                         "new contiguous tensor: the roll is undone, every token is back in its place"},
                        roll_grid(back->tensor(), static_cast<long>(s)), layout, false, &back->stats);
    // x.view(B, H * W, C)                                                     [B, N, C]
    layout = TorchLayout::contiguous({B, N, C});
    return rec.add({"tokens_out",
                    Op::reshape,
                    "x = x.view(B, H * W, C)",
                    "b h w C -> b (h w) C",
                    {back->name},
                    "view, no copy: the output tokens in their original order" + strides_note(layout)},
                   reshape(back->tensor(), {B, N, C}, {"B", "N", "C"}), layout, true, &back->stats);
}

// Swin's PatchMerging on x [B, N, C] (N = H * H) -> [B, N/4, 2C]: each 2 x 2 patch of neighbours
// becomes one token of 4C numbers, normalized and projected to 2C.
const Step& record_patch_merging(Recorder& rec, const AttentionConfig& cfg, const PatchMergeWeights& m, const Step& x) {
    const std::size_t B = cfg.batch, N = cfg.tokens, C = cfg.dim;
    const std::size_t H = static_cast<std::size_t>(std::llround(std::sqrt(static_cast<double>(N)))), W = H;
    const std::size_t H2 = H / 2, W2 = W / 2;

    // x.view(B, H, W, C)                                                      [B, H, W, C]
    const TorchLayout grid_layout = TorchLayout::contiguous({B, H, W, C});
    const Step& grid =
        rec.add({"patch_merge_grid",
                 Op::reshape,
                 "x = x.view(B, H, W, C)  # PatchMerging",
                 "b (h w) C -> b h w C",
                 {x.name},
                 "view, no copy: the tokens go back onto their H x W grid, so that neighbours can be picked by row and "
                 "column" +
                     strides_note(grid_layout)},
                reshape_or_copy(x.view(), {B, H, W, C}, {"B", "H", "W", "C"}), grid_layout, true, &x.stats);

    // x[:, r::2, c::2, :]                                                     [B, H/2, W/2, C] each
    // Every other row and column: the strides of rows and columns double, nothing is copied.
    const TorchLayout part_layout{{B, H2, W2, C},
                                  {grid_layout.strides[0], 2 * grid_layout.strides[1], 2 * grid_layout.strides[2], 1}};
    struct Corner {
        const char* name;
        std::size_t row, col;
        const char* where;
    };
    const Corner corners[] = {{"patch_merge_x0", 0, 0, "top-left"},
                              {"patch_merge_x1", 1, 0, "bottom-left"},
                              {"patch_merge_x2", 0, 1, "top-right"},
                              {"patch_merge_x3", 1, 1, "bottom-right"}};
    std::vector<TensorView> parts;
    std::vector<std::string> part_names;
    for (const Corner& k : corners) {
        const std::string r = std::to_string(k.row), c = std::to_string(k.col);
        TensorView part = step_view(step_view(grid.view(), 1, k.row, 2), 2, k.col, 2);
        part.axes = {"B", "H/2", "W/2", "C"};
        const std::string index = "[:, " + r + "::2, " + c + "::2, :]";
        const Step& s = rec.add({k.name,
                                 Op::slice,
                                 std::string("x") + std::string(k.name).substr(13) + " = x" + index,
                                 "b (h2 r) (w2 c) C -> b h2 w2 C  (r = " + r + ", c = " + c + ")",
                                 {grid.name},
                                 std::string("view, no copy: the ") + k.where +
                                     " token of every 2 x 2 patch; stepping by 2 doubles the row and column strides, "
                                     "so it is not contiguous" +
                                     strides_note(part_layout)},
                                part, part_layout, true);
        parts.push_back(s.view());
        part_names.push_back(s.name);
    }

    // torch.cat([x0, x1, x2, x3], -1)                                         [B, H/2, W/2, 4C]
    TorchLayout layout = TorchLayout::contiguous({B, H2, W2, 4 * C});
    const Step& cat = rec.add({"patch_merge_cat", Op::cat, "x = torch.cat([x0, x1, x2, x3], -1)",
                               "b h2 w2 C (x4) -> b h2 w2 (4 C)", part_names,
                               "new contiguous tensor: the four neighbours of each 2 x 2 patch side by side, " +
                                   std::to_string(4 * C) + " = 4C numbers per merged token; the grid is halved"},
                              cat_last(parts, {"B", "H/2", "W/2", "4C"}), layout, false);

    // x.view(B, -1, 4 * C)                                                    [B, H/2*W/2, 4C]
    layout = TorchLayout::contiguous({B, H2 * W2, 4 * C});
    const Step& flat =
        rec.add({"patch_merge_flat",
                 Op::reshape,
                 "x = x.view(B, -1, 4 * C)",
                 "b h2 w2 C4 -> b (h2 w2) C4",
                 {cat.name},
                 "view, no copy: the merged grid back to a sequence of N/4 = " + std::to_string(H2 * W2) + " tokens" +
                     strides_note(layout)},
                reshape_or_copy(cat.view(), {B, H2 * W2, 4 * C}, {"B", "N/4", "4C"}), layout, true, &cat.stats);

    // self.norm(x)                                                            [B, H/2*W/2, 4C]
    const Step& norm =
        rec.add({"patch_merge_norm",
                 Op::layernorm,
                 "x = self.norm(x)  # nn.LayerNorm(4 * C)",
                 "b n C4 -> b n C4  (per token: (x - mean) / sqrt(var + 1e-5) * w + b)",
                 {flat.name},
                 "new contiguous tensor: each merged token normalized over its 4C numbers",
                 {{"self.norm.weight", shape_of(m.norm_weight)}, {"self.norm.bias", shape_of(m.norm_bias)}}},
                layer_norm(flat.tensor(), m.norm_weight, m.norm_bias, 1e-5f, "norm.weight"), layout, false);

    // self.reduction(x)                                                       [B, H/2*W/2, 2C]
    layout = TorchLayout::contiguous({B, H2 * W2, 2 * C});
    Tensor reduced = linear(norm.tensor(), m.reduction_weight, nullptr, "2C", "reduction.weight");
    reduced.axes = {"B", "N/4", "2C"};
    return rec.add({"patch_merge_reduction",
                    Op::linear,
                    "x = self.reduction(x)  # nn.Linear(4 * C, 2 * C, bias=False)",
                    "b n C4 -> b n C2  (x @ W^T)",
                    {norm.name},
                    "new contiguous tensor: 4C numbers per token projected to 2C = " + std::to_string(2 * C) +
                        ": a quarter of the tokens, twice the channels, the input of the second stage",
                    {{"self.reduction.weight", shape_of(m.reduction_weight)}}},
                   std::move(reduced), layout, false);
}

void add_row_sum_checks(std::vector<RowSumCheck>& row_sums, const Trace& trace, const AttentionConfig& cfg,
                        const std::string& prefix) {
    const bool attn_dropping = cfg.training && cfg.attn_drop > 0.0f;
    row_sums.push_back(check_row_sums(trace.at(prefix + "attn"), false, 0.0f));
    row_sums.push_back(check_row_sums(trace.at(prefix + "attn_drop"), attn_dropping, cfg.attn_drop));
}

}  // namespace

PatchMergeWeights default_patch_merge_weights(const AttentionConfig& cfg) {
    const std::size_t C = cfg.dim, C2 = 2 * cfg.dim;
    PatchMergeWeights m;
    m.norm_weight = xt::ones<float>({4 * C});
    m.norm_bias = xt::zeros<float>({4 * C});
    m.reduction_weight =
        uniform_array({C2, 4 * C}, static_cast<float>(1.0 / std::sqrt(4.0 * C)), cfg.seed, kMergeReduction);
    // As default_weights over 2C channels: Xavier-uniform qkv, zero qkv bias, proj uniform +-1/sqrt(2C).
    AttentionWeights& w = m.stage2;
    w.qkv_weight =
        uniform_array({3 * C2, C2}, static_cast<float>(std::sqrt(6.0 / (4.0 * C2))), cfg.seed, kStage2QkvWeight);
    if (cfg.qkv_bias) w.qkv_bias = xt::zeros<float>({3 * C2});
    const float bound = static_cast<float>(1.0 / std::sqrt(static_cast<double>(C2)));
    w.proj_weight = uniform_array({C2, C2}, bound, cfg.seed, kStage2ProjWeight);
    w.proj_bias = uniform_array({C2}, bound, cfg.seed, kStage2ProjBias);
    pack_weights(w);
    return m;
}

Trace run_windowed(const AttentionConfig& cfg, const AttentionWeights& w, const Tensor& x, const RunHooks& hooks,
                   const PatchMergeWeights* merge_weights) {
    const std::size_t B = cfg.batch, N = cfg.tokens, C = cfg.dim;
    Trace trace;
    trace.config = cfg;
    Recorder rec(trace, hooks, path_step_names(cfg).size());
    auto beyond = std::make_shared<BeyondRecord>();
    beyond->path = AttentionPath::windowed;

    // x                                                                       [B, N, C]
    const Step& input = rec.add(step_text(cfg.reference, StepId::input, "the input tensor: N = H * W patch tokens"),
                                Tensor{x.values, {"B", "N", "C"}}, TorchLayout::contiguous({B, N, C}), false);
    auto windows = std::make_shared<WindowRecord>();
    const Step& out = record_windowed_block(rec, trace, cfg, w, input, *windows);
    beyond->windows = windows;
    std::vector<ExpectedShape> expected = {{"input", "[B, N, C]", {B, N, C}}};
    for (ExpectedShape& e : expected_block_shapes(cfg, "")) expected.push_back(std::move(e));

    if (cfg.patch_merge) {
        const PatchMergeWeights defaults = merge_weights ? PatchMergeWeights{} : default_patch_merge_weights(cfg);
        const PatchMergeWeights& m = merge_weights ? *merge_weights : defaults;
        const AttentionConfig stage2 = stage2_config(cfg);
        const std::size_t H = windows->grid, H2 = H / 2;
        const Step& merged = record_patch_merging(rec, cfg, m, out);
        expected.push_back({"patch_merge_grid", "[B, H, W, C]", {B, H, H, C}});
        for (const char* part : {"patch_merge_x0", "patch_merge_x1", "patch_merge_x2", "patch_merge_x3"})
            expected.push_back({part, "[B, H/2, W/2, C]", {B, H2, H2, C}});
        expected.push_back({"patch_merge_cat", "[B, H/2, W/2, 4*C]", {B, H2, H2, 4 * C}});
        expected.push_back({"patch_merge_flat", "[B, H/2*W/2, 4*C]", {B, H2 * H2, 4 * C}});
        expected.push_back({"patch_merge_norm", "[B, H/2*W/2, 4*C]", {B, H2 * H2, 4 * C}});
        expected.push_back({"patch_merge_reduction", "[B, H/2*W/2, 2*C]", {B, H2 * H2, 2 * C}});

        // The second stage: the same block on the merged grid, its steps named stage2_<step>.
        rec.set_prefix(kStage2Prefix);
        auto record = std::make_shared<PatchMergeRecord>();
        record->grid = H, record->dim = C, record->heads = cfg.heads;
        record->merged_grid = H2, record->merged_dim = stage2.dim, record->merged_heads = stage2.heads;
        record_windowed_block(rec, trace, stage2, m.stage2, merged, record->stage2);
        rec.set_prefix("");
        beyond->merge = record;
        for (ExpectedShape& e : expected_block_shapes(stage2, kStage2Prefix)) expected.push_back(std::move(e));
    }
    trace.beyond = beyond;
    std::vector<RowSumCheck> row_sums;
    add_row_sum_checks(row_sums, trace, cfg, "");
    if (cfg.patch_merge) add_row_sum_checks(row_sums, trace, stage2_config(cfg), kStage2Prefix);
    rec.finish(expected, std::move(row_sums));
    return trace;
}

}  // namespace attnscope
