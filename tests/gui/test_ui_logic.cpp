// Window-free panel logic: slicing N-D tensors to 2-D, colour ranges and colormaps, row-sum
// summaries, axis colours and moves, keyboard stepping/playback, settings (de)serialisation.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <numeric>
#include <set>

#include "logic/axes.hpp"
#include "logic/colormap.hpp"
#include "logic/file_browser.hpp"
#include "logic/renderer.hpp"
#include "logic/rowsum.hpp"
#include "logic/settings.hpp"
#include "logic/slice.hpp"
#include "logic/stepper.hpp"

using namespace attnscope;
using namespace attnscope::ui;

namespace {

// values[i] = i, shape as given.
Array iota(const Shape& shape) {
    Array a = make_array(shape);
    std::iota(a.begin(), a.end(), 0.0f);
    return a;
}

}  // namespace

// ---- slicing ---------------------------------------------------------------------------------

TEST_CASE("default slice shows the last two axes") {
    const SliceSpec s = default_slice({2, 8, 16, 16});
    CHECK(s.row_axis == 2);
    CHECK(s.col_axis == 3);
    CHECK(s.index == std::vector<std::size_t>{0, 0, 0, 0});
    const SliceSpec v = default_slice({5});
    CHECK(v.row_axis == -1);
    CHECK(v.col_axis == 0);
    const SliceSpec sc = default_slice({});
    CHECK(sc.row_axis == -1);
    CHECK(sc.col_axis == -1);
}

TEST_CASE("extract_slice of a 5-D tensor picks the fixed indices") {
    const Shape shape = {3, 2, 4, 5, 6};  // [3, B, h, N, c]
    const Array a = iota(shape);
    SliceSpec s = default_slice(shape);
    s.index = {1, 1, 2, 0, 0};
    const Slice2D sl = extract_slice(a, s);
    REQUIRE(sl.rows == 5);
    REQUIRE(sl.cols == 6);
    const Strides st = contiguous_strides(shape);
    const float base = static_cast<float>(1 * st[0] + 1 * st[1] + 2 * st[2]);
    CHECK(sl.at(0, 0) == base);
    CHECK(sl.at(4, 5) == base + 4 * st[3] + 5);
    CHECK(sl.min == base);
    CHECK(sl.max == base + 4 * st[3] + 5);
}

TEST_CASE("extract_slice with transposed and non-adjacent axes") {
    const Shape shape = {2, 3, 4};
    const Array a = iota(shape);
    SliceSpec s;
    s.row_axis = 2;  // rows walk the last axis
    s.col_axis = 0;  // columns walk the first axis
    s.index = {0, 1, 0};
    const Slice2D sl = extract_slice(a, normalized(s, shape));
    REQUIRE(sl.rows == 4);
    REQUIRE(sl.cols == 2);
    // element [c, 1, r] = c*12 + 1*4 + r
    CHECK(sl.at(0, 0) == 4.0f);
    CHECK(sl.at(3, 1) == 12.0f + 4.0f + 3.0f);
    CHECK(full_index(s, 3, 3, 1) == std::vector<std::size_t>{1, 1, 3});
}

TEST_CASE("extract_slice of rank-1 and rank-0 tensors") {
    const Array v = iota({5});
    const Slice2D sl = extract_slice(v, normalized(default_slice({5}), {5}));
    CHECK(sl.rows == 1);
    CHECK(sl.cols == 5);
    CHECK(sl.at(0, 4) == 4.0f);
    Array s = make_array({});
    s() = 7.0f;
    const Slice2D one = extract_slice(s, normalized(default_slice({}), {}));
    CHECK(one.rows == 1);
    CHECK(one.cols == 1);
    CHECK(one.at(0, 0) == 7.0f);
}

TEST_CASE("extract_slice counts NaN and Inf and keeps min/max finite") {
    Array a = iota({2, 3});
    a(0, 1) = std::numeric_limits<float>::quiet_NaN();
    a(1, 2) = std::numeric_limits<float>::infinity();
    const Slice2D sl = extract_slice(a, default_slice({2, 3}));
    CHECK(sl.nan_count == 1);
    CHECK(sl.inf_count == 1);
    CHECK(sl.min == 0.0f);
    CHECK(sl.max == 4.0f);
}

TEST_CASE("extract_slice of a strided 2-D slice: values, NaN and Inf counts and finite min/max as a plain loop gives") {
    Array a = iota({3, 70, 50});  // the slice [1, :, :] has rows of 50 and is read with a column stride too
    a(1, 10, 7) = std::numeric_limits<float>::quiet_NaN();
    a(1, 69, 49) = -std::numeric_limits<float>::infinity();
    a(1, 0, 0) = std::numeric_limits<float>::infinity();
    for (int swap = 0; swap < 2; ++swap) {
        SliceSpec spec = normalized(default_slice({3, 70, 50}), {3, 70, 50});
        spec.index[0] = 1;
        if (swap) std::swap(spec.row_axis, spec.col_axis);
        const Slice2D sl = extract_slice(a, spec);
        std::size_t nan = 0, inf = 0;
        float lo = std::numeric_limits<float>::infinity(), hi = -lo;
        for (std::size_t r = 0; r < sl.rows; ++r)
            for (std::size_t c = 0; c < sl.cols; ++c) {
                const float v = swap ? a(1, c, r) : a(1, r, c);
                if (std::isnan(v)) {
                    ++nan;
                    CHECK(std::isnan(sl.at(r, c)));
                    continue;
                }
                CHECK(sl.at(r, c) == v);
                if (std::isinf(v)) {
                    ++inf;
                } else {
                    lo = std::min(lo, v);
                    hi = std::max(hi, v);
                }
            }
        CHECK(sl.nan_count == nan);
        CHECK(sl.inf_count == inf);
        CHECK(sl.min == lo);
        CHECK(sl.max == hi);
    }
}

TEST_CASE("an empty tensor gives an empty slice") {
    const Array a = make_array({2, 0, 3});
    const Slice2D sl = extract_slice(a, normalized(default_slice({2, 0, 3}), {2, 0, 3}));
    CHECK(sl.empty());
}

TEST_CASE("normalized repairs specs after the shape changes") {
    SliceSpec s;
    s.row_axis = 3;
    s.col_axis = 4;
    s.index = {5, 9, 9, 0, 0};
    const SliceSpec n = normalized(s, {2, 8, 16, 16});  // rank 5 -> rank 4
    CHECK(n.index.size() == 4);
    CHECK(n.index[0] == 1);
    CHECK(n.index[1] == 7);
    CHECK(n.row_axis >= 0);
    CHECK(n.col_axis != n.row_axis);
    CHECK(n.col_axis >= 0);
    CHECK(n.col_axis < 4);
    SliceSpec same;
    same.row_axis = same.col_axis = 1;
    const SliceSpec m = normalized(same, {2, 3, 4});
    CHECK(m.row_axis != m.col_axis);
}

TEST_CASE("carried_slice keeps the head and batch item chosen on the step left, where they apply") {
    const Axes attn_axes{"B", "h", "N", "N'"};
    const Shape attn_shape{2, 8, 16, 16};
    SliceSpec head3 = default_slice(attn_shape);
    head3.index = {1, 3, 0, 0};  // batch item 1, head 3
    // attn -> context [B, h, N, c]: the same head and batch item.
    const SliceSpec ctx = carried_slice(head3, attn_axes, attn_shape, default_slice({2, 8, 16, 96}),
                                        {"B", "h", "N", "c"}, {2, 8, 16, 96});
    CHECK(ctx.index[0] == 1);
    CHECK(ctx.index[1] == 3);
    CHECK(ctx.row_axis == 2);
    CHECK(ctx.col_axis == 3);
    // -> context_t [B, N, h, c]: h is shown as rows there, so only B is carried.
    const SliceSpec ctx_t = carried_slice(ctx, {"B", "h", "N", "c"}, {2, 8, 16, 96}, default_slice({2, 16, 8, 96}),
                                          {"B", "N", "h", "c"}, {2, 16, 8, 96});
    CHECK(ctx_t.index[0] == 1);
    CHECK(ctx_t.row_axis == 2);
    // A head that the next step does not have (fewer heads) keeps the step's own index.
    const SliceSpec fewer = carried_slice(head3, attn_axes, attn_shape, default_slice({2, 2, 16, 16}), attn_axes,
                                          {2, 2, 16, 16});
    CHECK(fewer.index[1] == 0);
    // Default shown axes are not forced on the next step (k [.., N, c] -> k_t [.., c, N] stays c x N) ...
    const SliceSpec kt = carried_slice(default_slice({2, 8, 16, 96}), {"B", "h", "N", "c"}, {2, 8, 16, 96},
                                       default_slice({2, 8, 96, 16}), {"B", "h", "c", "N"}, {2, 8, 96, 16});
    CHECK(kt.row_axis == 2);
    CHECK(kt.col_axis == 3);
    // ... but shown axes the user chose are, when the next step names both.
    SliceSpec chosen = default_slice(attn_shape);
    chosen.row_axis = 1;  // h x N'
    chosen.index = {0, 0, 5, 0};
    const SliceSpec next = carried_slice(chosen, attn_axes, attn_shape, default_slice(attn_shape), attn_axes, attn_shape);
    CHECK(next.row_axis == 1);
    CHECK(next.col_axis == 3);
    CHECK(next.index[2] == 5);  // N is fixed there: its index is carried too
}

TEST_CASE("describe_slice and format_index") {
    SliceSpec s = default_slice({2, 8, 16, 16});
    s.index[0] = 1;
    s.index[1] = 3;
    CHECK(describe_slice("attn", s, 4) == "attn[1, 3, :, :]");
    CHECK(format_index({0, 3, 5, 7}) == "[0, 3, 5, 7]");
}

TEST_CASE("head_slice: rows and cols skip the head axis, other indices come from the base") {
    const Axes axes = {"3", "B", "h", "N", "c"};
    const Shape shape = {3, 2, 8, 16, 96};
    SliceSpec base = default_slice(shape);
    base.index = {2, 1, 0, 0, 0};
    const SliceSpec s = head_slice(axes, shape, base, 5);
    CHECK(s.row_axis == 3);
    CHECK(s.col_axis == 4);
    CHECK(s.index[0] == 2);
    CHECK(s.index[1] == 1);
    CHECK(s.index[2] == 5);
    CHECK(head_axis({"B", "N", "C"}) == -1);
    // qkv_split [B, N, 3, h, c]: the head axis sits between the others.
    const SliceSpec t = head_slice({"B", "N", "3", "h", "c"}, {2, 16, 3, 8, 96}, default_slice({2, 16, 3, 8, 96}), 7);
    CHECK(t.row_axis == 2);
    CHECK(t.col_axis == 4);
    CHECK(t.index[3] == 7);
}

// ---- colour ranges and colormaps ---------------------------------------------------------------

TEST_CASE("auto colormap: sequential for non-negative, diverging for signed") {
    CHECK(auto_colormap(0.0f, 1.0f) == Colormap::Sequential);
    CHECK(auto_colormap(-0.1f, 1.0f) == Colormap::Diverging);
    CHECK(resolve_colormap(ColormapChoice::Sequential, -1.0f, 1.0f) == Colormap::Sequential);
}

TEST_CASE("make_range per slice, per tensor, fixed") {
    const auto s = make_range(RangeMode::PerSlice, 0.1f, 0.5f, 0.0f, 1.0f, 2.0f, 3.0f, Colormap::Sequential, ScaleMode::Linear);
    CHECK(s.lo == doctest::Approx(0.1f));
    CHECK(s.hi == doctest::Approx(0.5f));
    const auto t = make_range(RangeMode::PerTensor, 0.1f, 0.5f, 0.0f, 1.0f, 2.0f, 3.0f, Colormap::Sequential, ScaleMode::Linear);
    CHECK(t.lo == 0.0f);
    CHECK(t.hi == 1.0f);
    const auto f = make_range(RangeMode::Fixed, 0.1f, 0.5f, 0.0f, 1.0f, 3.0f, 2.0f, Colormap::Sequential, ScaleMode::Linear);
    CHECK(f.lo == 2.0f);  // swapped into order
    CHECK(f.hi == 3.0f);
}

TEST_CASE("a diverging range is symmetric around 0, so 0 is white") {
    const auto r = make_range(RangeMode::PerSlice, -0.2f, 3.0f, 0, 0, 0, 0, Colormap::Diverging, ScaleMode::Linear);
    CHECK(r.lo == -3.0f);
    CHECK(r.hi == 3.0f);
    CHECK(normalize_value(0.0f, r) == doctest::Approx(0.5f));
    const auto mid = colormap_color(Colormap::Diverging, 0.5f);
    CHECK(mid[0] > 240);
    CHECK(mid[1] > 240);
    CHECK(mid[2] > 240);
    // blue below 0, red above
    const auto neg = colormap_color(Colormap::Diverging, 0.1f), pos = colormap_color(Colormap::Diverging, 0.9f);
    CHECK(neg[2] > neg[0]);
    CHECK(pos[0] > pos[2]);
}

TEST_CASE("a constant slice still gets a drawable range") {
    const auto u = make_range(RangeMode::PerSlice, 0.0625f, 0.0625f, 0, 0, 0, 0, Colormap::Sequential, ScaleMode::Linear);
    CHECK(u.hi > u.lo);
    CHECK(normalize_value(0.0625f, u) == doctest::Approx(1.0f));
    const auto z = make_range(RangeMode::PerSlice, 0.0f, 0.0f, 0, 0, 0, 0, Colormap::Sequential, ScaleMode::Linear);
    CHECK(z.hi > z.lo);
    CHECK(normalize_value(0.0f, z) == doctest::Approx(0.0f));
    const auto d = make_range(RangeMode::PerSlice, 0.0f, 0.0f, 0, 0, 0, 0, Colormap::Diverging, ScaleMode::Linear);
    CHECK(d.hi > d.lo);
    const auto n = make_range(RangeMode::Fixed, 0, 0, 0, 0, std::nanf(""), 1.0f, Colormap::Sequential, ScaleMode::Linear);
    CHECK(std::isfinite(n.lo));
}

TEST_CASE("normalize_value: linear, clamped, NaN passes through") {
    ColorRange r{0.0f, 2.0f, Colormap::Sequential, ScaleMode::Linear};
    CHECK(normalize_value(1.0f, r) == doctest::Approx(0.5f));
    CHECK(normalize_value(-5.0f, r) == 0.0f);
    CHECK(normalize_value(5.0f, r) == 1.0f);
    CHECK(std::isnan(normalize_value(std::nanf(""), r)));
}

TEST_CASE("log scale spreads small attention weights and round-trips through the legend") {
    ColorRange lin{0.0f, 1.0f, Colormap::Sequential, ScaleMode::Linear};
    ColorRange log = lin;
    log.scale = ScaleMode::Log;
    CHECK(normalize_value(0.01f, log) > normalize_value(0.01f, lin) * 5);
    CHECK(normalize_value(0.0f, log) == doctest::Approx(0.0f));
    CHECK(normalize_value(1.0f, log) == doctest::Approx(1.0f));
    for (float t : {0.0f, 0.25f, 0.5f, 1.0f}) CHECK(normalize_value(denormalize(t, log), log) == doctest::Approx(t).epsilon(1e-4));
    const auto ticks = legend_values(lin, 5);
    REQUIRE(ticks.size() == 5);
    CHECK(ticks.front() == 0.0f);
    CHECK(ticks[2] == doctest::Approx(0.5f));
    CHECK(ticks.back() == 1.0f);
}

TEST_CASE("colormap LUTs: 256 RGBA entries, sequential gets brighter") {
    const auto lut = colormap_lut(Colormap::Sequential);
    REQUIRE(lut.size() == static_cast<std::size_t>(kLutSize) * 4);
    auto lum = [&](int i) { return 0.299 * lut[i * 4] + 0.587 * lut[i * 4 + 1] + 0.114 * lut[i * 4 + 2]; };
    for (int i = 16; i < kLutSize; i += 16) CHECK(lum(i) > lum(i - 16));
    for (int i = 0; i < kLutSize; ++i) CHECK(lut[i * 4 + 3] == 255);
    CHECK(colormap_lut(Colormap::Diverging).size() == lut.size());
}

TEST_CASE("format_tick is as short as the colour bar's span allows") {
    CHECK(format_tick(0.6736, 0.6736) == "0.674");
    CHECK(format_tick(7.45e-07, 0.6736) == "0");  // 0 at the bar's precision
    CHECK(format_tick(0.09361, 0.1510) == "0.094");
    CHECK(format_tick(-1.186, 2.372) == "-1.19");
    CHECK(format_tick(2304.0, 2304.0) == "2304");
    CHECK(format_tick(3.0e6, 3.0e6) == "3e+06");
    CHECK(format_tick(1e-7, 2e-7) == "1e-07");
    CHECK(format_tick(0.5, 0.0) == format_value(0.5));  // a flat bar: the full value
}

TEST_CASE("format_value is short and readable") {
    CHECK(format_value(0.0) == "0");
    CHECK(format_value(0.0625) == "0.0625");
    CHECK(format_value(768) == "768");
    CHECK(format_value(1.3e-05) == "1.30e-05");
    CHECK(format_value(std::nan("")) == "NaN");
    CHECK(format_value(-INFINITY) == "-Inf");
}

// ---- row sums --------------------------------------------------------------------------------

namespace {

RowSumCheck make_check(bool dropout) {
    RowSumCheck c;
    c.step = dropout ? "attn_drop" : "attn";
    c.sums.values = make_array({2, 3, 4});
    c.sums.axes = {"B", "h", "N"};
    std::fill(c.sums.values.begin(), c.sums.values.end(), 1.0f);
    c.sums.values(1, 2, 3) = 1.5f;  // one bad row in batch 1, head 2
    c.sums.values(0, 1, 0) = 0.8f;  // and one in batch 0, head 1
    c.tolerance = 1e-5;
    c.max_error = 0.5;
    c.failing_rows = 2;
    c.rows = 24;
    c.head_max_error = {0, 0.2, 0, 0, 0, 0.5};
    c.head_failing = {0, 1, 0, 0, 0, 1};
    c.deviation_expected = dropout;
    c.explanation = dropout ? "dropout rescales" : "";
    return c;
}

}  // namespace

TEST_CASE("row-sum summary reads per-head numbers and names the worst head") {
    const RowSumSummary s = summarize(make_check(false));
    CHECK(s.batch == 2);
    CHECK(s.heads == 3);
    CHECK(s.rows_per_head == 4);
    REQUIRE(s.per_head.size() == 6);
    CHECK(s.per_head[5].batch == 1);
    CHECK(s.per_head[5].head == 2);
    CHECK(s.per_head[5].failing == 1);
    CHECK(s.worst == 5);
    CHECK(s.headline.find("do NOT sum to 1") != std::string::npos);
    const RowSumSummary d = summarize(make_check(true));
    CHECK(d.headline.find("expected") != std::string::npos);
    RowSumCheck ok = make_check(false);
    ok.failing_rows = 0;
    CHECK(summarize(ok).headline.find("all 24 rows") != std::string::npos);
}

TEST_CASE("head_row_sums and failing_rows of one (batch, head)") {
    const RowSumCheck c = make_check(false);
    const auto sums = head_row_sums(c, 1, 2);
    REQUIRE(sums.size() == 4);
    CHECK(sums[3] == 1.5f);
    const auto bad = failing_rows(c, 1, 2);
    CHECK(bad == std::vector<bool>{false, false, false, true});
    CHECK(failing_rows(c, 0, 0) == std::vector<bool>(4, false));
    CHECK(head_row_sums(c, 2, 0).empty());  // out of range: empty, not a crash
    float lo, hi;
    plot_range(sums, c.tolerance, &lo, &hi);
    CHECK(lo < 1.0f);
    CHECK(hi > 1.5f);
}

// ---- axis colours and moves --------------------------------------------------------------------

TEST_CASE("every pinned axis label has its own fixed colour") {
    const std::vector<std::string> labels = {"B", "N", "N'", "3", "h", "c", "C", "3C"};
    std::set<std::uint32_t> colours;
    for (const auto& l : labels) colours.insert(axis_color(l));
    CHECK(colours.size() == labels.size());
    CHECK(axis_color("B") == 0x56B4E9u);
    CHECK(axis_color("h") == axis_color("h"));  // the same in every panel
    CHECK(axis_color("unknown-axis") == axis_color("unknown-axis"));
    CHECK(text_color_on(0xF0E442) == 0x000000u);  // dark text on yellow
    CHECK(text_color_on(0x202020) == 0xFFFFFFu);
}

TEST_CASE("axis moves: permute(2, 0, 3, 1, 4) moves every axis") {
    const auto m = axis_moves({"B", "N", "3", "h", "c"}, {"3", "B", "h", "N", "c"});
    REQUIRE(m.size() == 5);
    CHECK(m[0].from == 2.0f);
    CHECK(m[1].from == 0.0f);
    CHECK(m[2].from == 3.0f);
    CHECK(m[3].from == 1.0f);
    CHECK(m[4].from == 4.0f);
    for (const auto& x : m) CHECK(x.matched);
    CHECK(is_reorder({"B", "N", "3", "h", "c"}, {"3", "B", "h", "N", "c"}));
    CHECK_FALSE(is_reorder({"B", "N"}, {"B", "N"}));
}

TEST_CASE("axis moves: transpose(1, 2), a split and a merge") {
    const auto t = axis_moves({"B", "h", "N", "c"}, {"B", "N", "h", "c"});
    CHECK(t[1].from == 2.0f);
    CHECK(t[2].from == 1.0f);
    const auto split = axis_moves({"B", "N", "3C"}, {"B", "N", "3", "h", "c"});
    CHECK(split[2].from == 2.0f);  // 3, h and c grow out of 3C
    CHECK(split[3].from == 2.0f);
    CHECK_FALSE(split[4].matched);
    const auto merge = axis_moves({"B", "N", "h", "c"}, {"B", "N", "C"});
    CHECK(merge[2].from == doctest::Approx(2.5f));  // C comes from between h and c
    // Patch merging's x0 = x[:, 0::2, 0::2, :]: H/2 from H and W/2 from W, not crossed, in their colours.
    const auto half = axis_moves({"B", "H", "W", "C"}, {"B", "H/2", "W/2", "C"});
    CHECK(half[1].derived);
    CHECK(half[1].from == 1.0f);
    CHECK(half[2].from == 2.0f);
    CHECK(axis_color("W/2") == axis_color("W"));
    CHECK(axis_color("H/2") == axis_color("H"));
    CHECK(base_label("N/4") == "N");
    CHECK(base_label("3C") == "3C");
    CHECK(base_label("a/b") == "a/b");
    CHECK(ease_in_out(0.0f) == 0.0f);
    CHECK(ease_in_out(1.0f) == 1.0f);
    CHECK(ease_in_out(0.5f) == doctest::Approx(0.5f));
}

TEST_CASE("reshape in memory order: the bug's q/k/v index differs before and after, the permute's would not") {
    // reshape(3, B, h, N, c) of a [B, N, 3, h, c] tensor: relabelled, shown by the "3" axis.
    CHECK(relabelled_axis({"B", "N", "3", "h", "c"}, {"3", "B", "h", "N", "c"}) == 0);
    CHECK(relabelled_axis({"B", "N", "3C"}, {"B", "N", "3", "h", "c"}) == -1);  // a split is no reorder
    CHECK(relabelled_axis({"B", "N"}, {"B", "N"}) == -1);
    const Shape before{2, 4, 3, 2, 2}, after{3, 2, 2, 4, 2};  // B 2, N 4, h 2, c 2
    // Before: every token holds its q, k and v (3 * h * c = 12 numbers), so the "3" index cycles
    // 0, 1, 2 every 4 numbers, 8 times; one sample per number shows all 24 runs.
    const auto in = memory_runs(before, 2, 96);
    REQUIRE(in.size() == 24);
    for (std::size_t i = 0; i < in.size(); ++i) {
        CHECK(in[i].index == i % 3);
        CHECK(in[i].end - in[i].begin == 4);
    }
    // After: the reshape cuts memory into three blocks, whatever the numbers were.
    const auto out = memory_runs(after, 0, 96);
    REQUIRE(out.size() == 3);
    CHECK(out[0].begin == 0);
    CHECK(out[0].end == 32);
    CHECK(out[2].index == 2);
    CHECK(out[2].end == 96);
    // Fewer samples than numbers: runs still cover every sample once, in order.
    const auto coarse = memory_runs(before, 2, 10);
    CHECK(coarse.front().begin == 0);
    CHECK(coarse.back().end == 10);
    for (std::size_t i = 1; i < coarse.size(); ++i) CHECK(coarse[i].begin == coarse[i - 1].end);
    CHECK(memory_runs(before, 7, 10).empty());
}

// ---- keyboard stepping and playback -------------------------------------------------------------

TEST_CASE("arrow keys, Home and End move the selection within range") {
    Stepper s;
    s.set_count(17);
    CHECK(s.selected == 0);
    CHECK_FALSE(s.key(StepKey::Prev));  // already first
    CHECK(s.key(StepKey::Next));
    CHECK(s.selected == 1);
    CHECK(s.key(StepKey::Last));
    CHECK(s.selected == 16);
    CHECK_FALSE(s.key(StepKey::Next));
    CHECK(s.key(StepKey::First));
    CHECK(s.selected == 0);
    s.set_count(0);
    CHECK_FALSE(s.key(StepKey::Next));
    CHECK(s.selected == 0);
}

TEST_CASE("Space plays through the steps at the set pace and stops at the end") {
    Stepper s;
    s.set_count(3);
    s.interval = 1.0;
    s.key(StepKey::TogglePlay);
    CHECK(s.playing);
    CHECK_FALSE(s.tick(0.5));
    CHECK(s.tick(0.6));
    CHECK(s.selected == 1);
    CHECK(s.tick(1.0));
    CHECK(s.selected == 2);
    CHECK_FALSE(s.playing);  // reached the last step
    CHECK_FALSE(s.tick(5.0));
    s.key(StepKey::TogglePlay);  // at the end: replay from the start
    CHECK(s.playing);
    CHECK(s.selected == 0);
    s.key(StepKey::TogglePlay);
    CHECK_FALSE(s.playing);
}

TEST_CASE("a manual step during playback resets the timer") {
    Stepper s;
    s.set_count(10);
    s.interval = 1.0;
    s.key(StepKey::TogglePlay);
    s.tick(0.9);
    s.key(StepKey::Next);
    CHECK(s.selected == 1);
    CHECK_FALSE(s.tick(0.5));
    CHECK(s.selected == 1);
    s.set_count(1);
    CHECK(s.selected == 0);
}

// ---- settings ---------------------------------------------------------------------------------

TEST_CASE("settings round-trip through JSON") {
    Settings s;
    s.config.batch = 1;
    s.config.tokens = 197;
    s.config.heads = 12;
    s.config.training = true;
    s.config.attn_drop = 0.1f;
    s.step = "attn_drop";
    s.ui_scale = 1.5f;
    s.panels.heads = false;
    s.range_mode = RangeMode::Fixed;
    s.scale_mode = ScaleMode::Log;
    s.colormap = ColormapChoice::Diverging;
    s.heads_shared_scale = false;
    std::string error;
    const auto back = settings_from_json(settings_to_json(s), &error);
    REQUIRE(back);
    CHECK(back->has_config);
    CHECK(back->config.tokens == 197);
    CHECK(back->config.heads == 12);
    CHECK(back->config.training);
    CHECK(back->config.attn_drop == doctest::Approx(0.1f));
    CHECK(back->step == "attn_drop");
    CHECK(back->ui_scale == doctest::Approx(1.5f));
    CHECK_FALSE(back->panels.heads);
    CHECK(back->panels.pipeline);
    CHECK(back->range_mode == RangeMode::Fixed);
    CHECK(back->scale_mode == ScaleMode::Log);
    CHECK(back->colormap == ColormapChoice::Diverging);
    CHECK_FALSE(back->heads_shared_scale);
}

TEST_CASE("a corrupt settings file is rejected with a message, never a crash") {
    std::string error;
    CHECK_FALSE(settings_from_json("{not json", &error));
    CHECK_FALSE(error.empty());
    error.clear();
    CHECK_FALSE(settings_from_json("[1, 2]", &error));
    CHECK_FALSE(error.empty());
    error.clear();
    CHECK_FALSE(settings_from_json(R"({"config": {"batch": "two"}})", &error));
    CHECK_FALSE(error.empty());
    CHECK_FALSE(settings_from_json("", &error));
    // Unknown keys are ignored, out-of-range values clamped, a missing config keeps the demo.
    const auto s = settings_from_json(R"({"future": 1, "ui_scale": 99, "range_mode": 7})", &error);
    REQUIRE(s);
    CHECK_FALSE(s->has_config);
    CHECK(s->ui_scale == 3.0f);
    CHECK(s->range_mode == RangeMode::Fixed);
}

TEST_CASE("settings folder follows XDG_CONFIG_HOME, then HOME") {
    CHECK(settings_dir("/x/cfg", "/home/u") == "/x/cfg/attnscope");
    CHECK(settings_dir("", "/home/u") == "/home/u/.config/attnscope");
    CHECK(settings_dir(nullptr, "/home/u") == "/home/u/.config/attnscope");
    CHECK(settings_dir(nullptr, nullptr).empty());
}

// ---- File > Open browser and recent files ------------------------------------------------------

TEST_CASE("the browser shows folders first, then tensor files (torch.save ones too), sorted; other files and hidden ones are left out") {
    const std::vector<DirEntry> raw = {{"b.npz", false, 1},      {"notes.txt", false, 1}, {"Zeta", true, 0},
                                       {"A.SAFETENSORS", false, 1}, {".hidden", true, 0},  {"alpha", true, 0},
                                       {"c.npy", false, 1},      {"model.pt", false, 1},  {".x.npy", false, 1}};
    const std::vector<DirEntry> e = browser_entries(raw);
    std::vector<std::string> names;
    for (const auto& d : e) names.push_back(d.name);
    CHECK(names == std::vector<std::string>{"alpha", "Zeta", "A.SAFETENSORS", "b.npz", "c.npy", "model.pt"});
}

TEST_CASE("tensor file extensions, any case") {
    CHECK(is_tensor_file("x.npy"));
    CHECK(is_tensor_file("dump.NPZ"));
    CHECK(is_tensor_file("model.safetensors"));
    CHECK(is_tensor_file("model.pt"));
    CHECK(is_tensor_file("pytorch_model.BIN"));
    CHECK(!is_tensor_file("model.txt"));
    CHECK(!is_tensor_file("npy"));
    CHECK(!is_tensor_file("x.npy.txt"));
}

TEST_CASE("picture extensions for the ViT and what File > Open lists") {
    CHECK(is_image_file("cat.png"));
    CHECK(is_image_file("PHOTO.JPG"));
    CHECK(is_image_file("a.jpeg"));
    CHECK(!is_image_file("png"));
    CHECK(!is_image_file("x.npy"));
    CHECK(is_openable_file("x.npy"));
    CHECK(is_openable_file("y.png"));
    CHECK(!is_openable_file("notes.txt"));
    const auto e = browser_entries({{"notes.txt", false, 1}, {"b.png", false, 1}, {"a.npz", false, 1}});
    REQUIRE(e.size() == 2);
    CHECK(e[0].name == "a.npz");
    CHECK(e[1].name == "b.png");
}

TEST_CASE("parent folder and display name") {
    CHECK(parent_folder("/a/b") == "/a");
    CHECK(parent_folder("/a/b/") == "/a");
    CHECK(parent_folder("/a") == "/");
    CHECK(parent_folder("/") == "/");
    CHECK(display_name("/a/b/acts.npz") == "acts.npz");
    CHECK(display_name("/a/dump/") == "dump");
}

TEST_CASE("list_folder: entries, .npy count, and an inline error for a missing folder") {
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / "attnscope_browser_test";
    fs::remove_all(dir);
    fs::create_directories(dir / "sub");
    for (const char* f : {"q.npy", "k.npy", "readme.md", "acts.npz"}) std::ofstream(dir / f) << "x";
    const FolderListing l = list_folder(dir.string());
    CHECK(l.error.empty());
    CHECK(l.folder == dir.string());
    CHECK(l.npy_files == 2);
    REQUIRE(l.entries.size() == 4);
    CHECK(l.entries[0].name == "sub");
    CHECK(l.entries[0].is_dir);
    CHECK(l.entries[1].name == "acts.npz");
    CHECK(l.entries[1].size == 1);
    const FolderListing missing = list_folder((dir / "nope").string());
    CHECK(missing.error.find("no such folder") != std::string::npos);
    CHECK(missing.entries.empty());
    const FolderListing file = list_folder((dir / "q.npy").string());
    CHECK(file.error.find("not a folder") != std::string::npos);
    fs::remove_all(dir);
}

TEST_CASE("recent files: most recent first, de-duplicated, at most 10") {
    std::vector<std::string> r;
    for (int i = 0; i < 12; ++i) r = add_recent(r, "/f" + std::to_string(i));
    REQUIRE(r.size() == 10);
    CHECK(r.front() == "/f11");
    CHECK(r.back() == "/f2");
    r = add_recent(r, "/f5");
    CHECK(r.size() == 10);
    CHECK(r.front() == "/f5");
    CHECK(std::count(r.begin(), r.end(), "/f5") == 1);
}

TEST_CASE("settings keep the recent files and the browser folder") {
    Settings s;
    s.recent_files = {"/a/x.npz", "/b/y.safetensors"};
    s.browser_folder = "/a";
    std::string error;
    const auto back = settings_from_json(settings_to_json(s), &error);
    REQUIRE(back);
    CHECK(back->recent_files == s.recent_files);
    CHECK(back->browser_folder == "/a");
    // Older settings files have neither key.
    const auto old = settings_from_json("{\"version\": 1}", &error);
    REQUIRE(old);
    CHECK(old->recent_files.empty());
    // More than 10 entries are cut.
    std::string many = "{\"recent_files\": [";
    for (int i = 0; i < 15; ++i) many += (i ? ",\"/f" : "\"/f") + std::to_string(i) + "\"";
    many += "]}";
    const auto cut = settings_from_json(many, &error);
    REQUIRE(cut);
    CHECK(cut->recent_files.size() == 10);
}

TEST_CASE("software renderers are recognised from GL_RENDERER, GPUs are not") {
    using attnscope::ui::software_renderer;
    CHECK(software_renderer("llvmpipe (LLVM 15.0.6, 256 bits)"));
    CHECK(software_renderer("softpipe"));
    CHECK(software_renderer("Mesa X11 swrast"));
    CHECK(software_renderer("GDI Generic"));
    CHECK(software_renderer("Apple Software Renderer"));
    CHECK_FALSE(software_renderer("AMD Radeon RX 6600 (radeonsi, navi23, LLVM 15.0.6, DRM 3.49, 6.1.0-13-amd64)"));
    CHECK_FALSE(software_renderer("Mesa Intel(R) UHD Graphics 620 (KBL GT2)"));
    CHECK_FALSE(software_renderer("NVIDIA GeForce RTX 3060/PCIe/SSE2"));
    CHECK_FALSE(software_renderer(""));
}
