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
// The tokens must form a square grid (N = H * H): Swin has no class token, so a ViT sequence of
// 14 * 14 + 1 is refused with a message to leave the class token out. With the shift, tokens that
// were not neighbours before the roll (they wrapped around the border) share a window; Swin's mask
// hides them from each other (-inf here, -100 in Swin's code: both give exp() = 0 in float32).
#include <algorithm>
#include <cmath>

#include "beyond.hpp"
#include "checks.hpp"
#include "ops.hpp"
#include "recorder.hpp"

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

}  // namespace

Trace run_windowed(const AttentionConfig& cfg, const AttentionWeights& w, const Tensor& x, const RunHooks& hooks) {
    const std::size_t B = cfg.batch, N = cfg.tokens, C = cfg.dim, M = cfg.window;
    const std::size_t H = static_cast<std::size_t>(std::llround(std::sqrt(static_cast<double>(N)))), W = H;
    const std::size_t nH = H / M, nW_side = W / M, nW = nH * nW_side, s = cfg.shift ? M / 2 : 0;
    const std::string Ms = std::to_string(M), ss = std::to_string(s);
    Trace trace;
    trace.config = cfg;
    const auto names = path_step_names(cfg);
    Recorder rec(trace, hooks, names.size());

    // x                                                                       [B, N, C]
    const Step& input = rec.add(step_text(cfg.reference, "input", "the input tensor: N = H * W patch tokens"),
                                Tensor{x.values, {"B", "N", "C"}}, TorchLayout::contiguous({B, N, C}), false);
    // x.view(B, H, W, C)                                                      [B, H, W, C]
    TorchLayout layout = TorchLayout::contiguous({B, H, W, C});
    const Step* grid = &rec.add({"grid", Op::reshape, "x = x.view(B, H, W, C)", "b (h w) C -> b h w C", {"input"},
                                 "view, no copy: the token axis is split into the patch grid rows and columns" +
                                     strides_note(layout)},
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
    const Step& perm = rec.add(
        {"win_perm", Op::permute, ".permute(0, 1, 3, 2, 4, 5)", "b wh m1 ww m2 C -> b wh ww m1 m2 C", {"win_split"},
         "view, no copy: the two window axes move next to each other, so each window's M x M tokens become one "
         "block; not contiguous" + strides_note(layout)},
        permute(split.tensor(), {0, 1, 3, 2, 4, 5}), layout, true, &split.stats);
    // .contiguous().view(-1, M * M, C)                                        [B * nW, M*M, C]
    layout = TorchLayout::contiguous({B * nW, M * M, C});
    const Step& windows = rec.add(
        {"windows", Op::reshape, "x_windows = x.contiguous().view(-1, M * M, C)",
         "b wh ww m1 m2 C -> (b wh ww) (m1 m2) C", {"win_perm"},
         "copy: each window is now a sequence of M*M = " + std::to_string(M * M) + " tokens and the B * nW = " +
             std::to_string(B * nW) + " windows are the batch of the attention below"},
        reshape(perm.tensor(), {B * nW, M * M, C}, {"B", "N", "C"}), layout, false, &perm.stats);

    // The textbook attention on B' = B * nW sequences of N' = M * M tokens.
    AttentionConfig sub = cfg;
    sub.batch = B * nW, sub.tokens = M * M, sub.path = AttentionPath::standard, sub.window = 0, sub.shift = false;
    const QkvSteps qkv = record_qkv_steps(rec, sub, w, windows);
    auto record = std::make_shared<WindowRecord>();
    record->grid = H, record->window = M, record->shift = s, record->windows = nW;
    Array keep;
    if (cfg.shift) {
        record->region = swin_regions(H, M, s);
        keep = make_array({B * nW, M * M, M * M});  // [B', N', N'] 1 where both tokens come from the same region
        for (std::size_t b = 0; b < B; ++b)
            for (std::size_t wi = 0; wi < nW; ++wi)
                for (std::size_t i = 0; i < M * M; ++i)
                    for (std::size_t j = 0; j < M * M; ++j) {
                        auto region_of = [&](std::size_t t) {
                            const std::size_t r = (wi / nW_side) * M + t / M, c = (wi % nW_side) * M + t % M;
                            return record->region[r * W + c];
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
        {"win_unperm", Op::permute, ".permute(0, 1, 3, 2, 4, 5)", "b wh ww m1 m2 C -> b wh m1 ww m2 C", {"win_merge"},
         "view, no copy: the inverse permutation (it is its own inverse); not contiguous" + strides_note(layout)},
        permute(merge.tensor(), {0, 1, 3, 2, 4, 5}), layout, true, &merge.stats);
    // .contiguous().view(B, H, W, C)                                          [B, H, W, C]
    layout = TorchLayout::contiguous({B, H, W, C});
    const Step* back = &rec.add({"grid_out", Op::reshape, "x = x.contiguous().view(B, H, W, C)",
                                 "b wh m1 ww m2 C -> b (wh m1) (ww m2) C", {"win_unperm"},
                                 "copy: the windows are laid back onto the patch grid"},
                                reshape(unperm.tensor(), {B, H, W, C}, {"B", "H", "W", "C"}), layout, false, &unperm.stats);
    // torch.roll(x, shifts=(s, s), dims=(1, 2))                               [B, H, W, C]
    if (cfg.shift)
        back = &rec.add({"unshifted", Op::roll, "x = torch.roll(x, shifts=(" + ss + ", " + ss + "), dims=(1, 2))",
                         "b h w C -> b h w C  (cyclic shift by +M/2)", {"grid_out"},
                         "new contiguous tensor: the roll is undone, every token is back in its place"},
                        roll_grid(back->tensor(), static_cast<long>(s)), layout, false, &back->stats);
    // x.view(B, H * W, C)                                                     [B, N, C]
    layout = TorchLayout::contiguous({B, N, C});
    rec.add({"tokens_out", Op::reshape, "x = x.view(B, H * W, C)", "b h w C -> b (h w) C", {back->name},
             "view, no copy: the output tokens in their original order" + strides_note(layout)},
            reshape(back->tensor(), {B, N, C}, {"B", "N", "C"}), layout, true, &back->stats);

    auto beyond = std::make_shared<BeyondRecord>();
    beyond->path = AttentionPath::windowed;
    beyond->windows = record;
    trace.beyond = beyond;
    // Shapes: the grid steps, then the textbook steps of the windows.
    std::vector<ExpectedShape> expected = {
        {"input", "[B, N, C]", {B, N, C}},
        {"grid", "[B, H, W, C]", {B, H, W, C}},
        {"win_split", "[B, H/M, M, W/M, M, C]", {B, nH, M, nW_side, M, C}},
        {"win_perm", "[B, H/M, W/M, M, M, C]", {B, nH, nW_side, M, M, C}},
        {"windows", "[B*nW, M*M, C]", {B * nW, M * M, C}},
    };
    if (cfg.shift) expected.insert(expected.begin() + 2, {"shifted", "[B, H, W, C]", {B, H, W, C}});
    for (const ExpectedShape& e : expected_attention_shapes(sub))
        if (e.step != "input") expected.push_back({e.step, e.formula + " (B = B*nW, N = M*M)", e.shape});
    if (cfg.shift) expected.push_back({"masked", "[B, h, N, N] (B = B*nW, N = M*M)", {B * nW, cfg.heads, M * M, M * M}});
    expected.push_back({"win_merge", "[B, H/M, W/M, M, M, C]", {B, nH, nW_side, M, M, C}});
    expected.push_back({"win_unperm", "[B, H/M, M, W/M, M, C]", {B, nH, M, nW_side, M, C}});
    expected.push_back({"grid_out", "[B, H, W, C]", {B, H, W, C}});
    if (cfg.shift) expected.push_back({"unshifted", "[B, H, W, C]", {B, H, W, C}});
    expected.push_back({"tokens_out", "[B, N, C]", {B, N, C}});
    trace.checks.shapes = check_shapes(trace.steps, expected);
    const bool attn_dropping = cfg.training && cfg.attn_drop > 0.0f;
    trace.checks.row_sums.push_back(check_row_sums(trace.at("attn"), false, 0.0f));
    trace.checks.row_sums.push_back(check_row_sums(trace.at("attn_drop"), attn_dropping, cfg.attn_drop));
    trace.checks.nonfinite = find_first_nonfinite(trace.steps);
    return trace;
}

}  // namespace attnscope
