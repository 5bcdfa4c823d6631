// Layout steps are views, as in PyTorch: reshape, permute, unbind and transpose share the
// storage of the step they come from and copy nothing until someone reads them. The reference
// values here come from xtensor's own transpose/view/reshape and from plain loops, not from
// core/tensor/views.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <thread>

#include <xtensor/xmanipulation.hpp>
#include <xtensor/xrandom.hpp>
#include <xtensor/xview.hpp>

#include "ops.hpp"
#include "pipeline.hpp"
#include "run.hpp"
#include "views.hpp"

using namespace attnscope;

namespace {

std::shared_ptr<const Tensor> random_tensor(const Shape& shape, int seed) {
    xt::random::seed(static_cast<unsigned>(seed));
    Array a = xt::random::randn<float>(shape);
    return std::make_shared<const Tensor>(Tensor{a, Axes(shape.size(), "")});
}

bool same_values(const Array& a, const Array& b) { return shape_of(a) == shape_of(b) && a == b; }

// Plain triple loop over evaluated operands, in double.
Array reference_matmul(const Array& a, const Array& b) {
    const Shape as = shape_of(a), bs = shape_of(b);
    const std::size_t r = as.size(), n = as[r - 2], k = as[r - 1], m = bs[r - 1];
    Shape ys = as;
    ys[r - 1] = m;
    Array y = Array::from_shape(ys);
    const std::size_t batches = a.size() / (n * k);
    for (std::size_t i = 0; i < batches; ++i)
        for (std::size_t row = 0; row < n; ++row)
            for (std::size_t col = 0; col < m; ++col) {
                double acc = 0.0;
                for (std::size_t j = 0; j < k; ++j)
                    acc += static_cast<double>(a.data()[i * n * k + row * k + j]) * b.data()[i * k * m + j * m + col];
                y.data()[i * n * m + row * m + col] = static_cast<float>(acc);
            }
    return y;
}

double max_abs_diff(const Array& a, const Array& b) {
    REQUIRE(shape_of(a) == shape_of(b));
    double e = 0.0;
    for (std::size_t i = 0; i < a.size(); ++i) e = std::max(e, std::fabs(double(a.data()[i]) - b.data()[i]));
    return e;
}

}  // namespace

TEST_CASE("permute, transpose and select views hold what xtensor's own ops give") {
    const auto t = random_tensor({2, 3, 4, 5}, 1);
    const TensorView v = view_of(t);
    const Array expected_perm = xt::transpose(t->values, {2, 0, 3, 1});
    CHECK(same_values(gather(permute_view(v, {2, 0, 3, 1})).values, expected_perm));
    const Array expected_t = xt::transpose(t->values, {0, 3, 2, 1});
    CHECK(same_values(gather(transpose_view(v, 1, 3)).values, expected_t));
    const Array expected_sel = xt::view(t->values, xt::all(), 2, xt::all(), xt::all());
    CHECK(same_values(gather(select_view(v, 1, 2)).values, expected_sel));
    // A view of a view: select after permute, as q = qkv.permute(2, 0, 3, 1, 4).unbind(0)[0].
    const Array expected_both = xt::view(xt::eval(xt::transpose(t->values, {2, 0, 3, 1})), 1);
    CHECK(same_values(gather(select_view(permute_view(v, {2, 0, 3, 1}), 0, 1)).values, expected_both));
    CHECK_THROWS_AS(permute_view(v, {0, 0, 1, 2}), ShapeError);
    CHECK_THROWS_AS(select_view(v, 1, 3), ShapeError);
}

TEST_CASE("reshape is a view when the strides allow it and a copy otherwise") {
    const auto t = random_tensor({2, 3, 4}, 2);
    const TensorView v = view_of(t);
    const auto split = reshape_view(v, {2, 3, 2, 2}, {"a", "b", "c", "d"});
    REQUIRE(split.has_value());
    CHECK(split->base == t);
    // [2, 3, 4] -> transpose(0, 1) -> [3, 2, 4]: merging the first two axes cannot be a view.
    const TensorView tr = transpose_view(v, 0, 1);
    CHECK_FALSE(reshape_view(tr, {6, 4}, {"x", "y"}).has_value());
    const TensorView merged = reshape_or_copy(tr, {6, 4}, {"x", "y"});
    CHECK(merged.base != t);
    Array expected = xt::eval(xt::transpose(t->values, {1, 0, 2}));
    expected.reshape({6, 4});
    CHECK(same_values(contiguous(merged)->values, expected));
    CHECK(contiguous(merged) == merged.base);  // the copy is handed out as it is, not copied again
    CHECK_THROWS_AS(reshape_view(v, {5, 5}, {"x", "y"}), ShapeError);
}

TEST_CASE("matmul reads strided and transposed operands in place") {
    // qkv [B, N, 3, h, c] -> permute(2, 0, 3, 1, 4) -> q, k [B, h, N, c]; scores = q @ k^T.
    const std::size_t B = 2, N = 7, h = 3, c = 5;
    const auto qkv = random_tensor({B, N, 3, h, c}, 3);
    const TensorView heads = permute_view(view_of(qkv), {2, 0, 3, 1, 4});
    const TensorView q = select_view(heads, 0, 0), k = select_view(heads, 0, 1);
    const TensorView k_t = transpose_view(k, 2, 3);
    const Array expected = reference_matmul(gather(q).values, gather(k_t).values);
    const Tensor scores = matmul(q, k_t, {"B", "h", "N", "N'"}, "q", "k_t");
    CHECK(max_abs_diff(scores.values, expected) < 1e-5);
    // An operand whose last two axes have no unit stride is gathered first.
    const auto big = random_tensor({2, 3, 4, 6}, 4);
    const TensorView odd = permute_view(view_of(big), {3, 1, 0, 2});  // [6, 3, 2, 4], strides [1, 24, 72, 6]
    const auto other = random_tensor({6, 3, 4, 2}, 5);
    const Tensor y = matmul(odd, view_of(other), {"a", "b", "c", "d"}, "odd", "other");
    CHECK(max_abs_diff(y.values, reference_matmul(gather(odd).values, other->values)) < 1e-5);
    CHECK_THROWS_AS(matmul(q, k, {"B", "h", "N", "N'"}, "q", "k"), ShapeError);
}

TEST_CASE("stats of a strided view equal the stats of its copy") {
    Array a = xt::random::randn<float>({2, 5, 3, 4, 16});
    a(1, 2, 0, 3, 7) = std::numeric_limits<float>::quiet_NaN();
    a(0, 4, 1, 2, 3) = std::numeric_limits<float>::infinity();
    const auto t = std::make_shared<const Tensor>(Tensor{a, {}});
    for (std::size_t part = 0; part < 6; ++part) {
        // q, k, v as the pipeline takes them, then k_t-like transposes (no unit stride last)
        const TensorView qkv = select_view(permute_view(view_of(t), {2, 0, 3, 1, 4}), 0, part % 3);
        const TensorView v = part < 3 ? qkv : transpose_view(qkv, 2, 3);
        const Stats s = compute_stats(v), copy = compute_stats(gather(v).values);
        CHECK(s.min == copy.min);
        CHECK(s.max == copy.max);
        CHECK(s.nan_count == copy.nan_count);
        CHECK(s.inf_count == copy.inf_count);
        CHECK(s.mean == doctest::Approx(copy.mean).epsilon(1e-6));
        CHECK(s.std == doctest::Approx(copy.std).epsilon(1e-6));
    }
}

TEST_CASE("the recorded layout steps share storage and copy nothing until read") {
    AttentionConfig cfg;
    cfg.batch = 2;
    cfg.tokens = 9;
    cfg.dim = 24;
    cfg.heads = 4;
    const Trace t = run_attention(cfg);
    const TensorView qkv = t.at("qkv").view();
    for (const char* name : {"qkv_split", "qkv_heads", "q", "k", "v", "k_t"}) {
        CAPTURE(name);
        CHECK_FALSE(t.at(name).holds_values());
        CHECK(t.at(name).view().base == qkv.base);
    }
    CHECK(t.at("context_t").view().base == t.at("context").view().base);
    CHECK(t.at("attn_drop").view().base == t.at("attn").view().base);
    CHECK(t.at("out_drop").view().base == t.at("out").view().base);
    // merged is a real copy in PyTorch too (transpose then reshape): it holds its own values.
    CHECK(t.at("merged").holds_values());
    CHECK(t.at("merged").view().base != t.at("context").view().base);

    // Read: the same values the copying ops give from the step before.
    const Tensor heads =
        permute(reshape(t.at("qkv").tensor(), {2, 9, 3, 4, 6}, {"B", "N", "3", "h", "c"}), {2, 0, 3, 1, 4});
    CHECK(same_values(t.at("k").tensor().values, select(heads, 0, 1).values));
    CHECK(t.at("k").holds_values());
    CHECK(t.at("k").axes() == Axes{"B", "h", "N'", "c"});
    CHECK(same_values(t.at("k_t").tensor().values, transpose(select(heads, 0, 1), 2, 3).values));
    CHECK(&t.at("attn_drop").tensor() == &t.at("attn").tensor());  // dropout's identity: the same tensor
    CHECK(t.checks.row_sum("attn_drop")->ok());
}

TEST_CASE("the input step holds the caller's shared tensor and a plain tensor is copied once") {
    AttentionConfig cfg;
    cfg.batch = 1, cfg.tokens = 5, cfg.dim = 16, cfg.heads = 2;
    const auto x = std::make_shared<const Tensor>(default_input(cfg));
    const Trace shared = run_attention(cfg, default_weights(cfg), x);
    CHECK(&shared.at("input").tensor() == x.get());
    const Trace copied = run_attention(cfg, default_weights(cfg), *x);
    CHECK(&copied.at("input").tensor() != x.get());
    CHECK(same_values(copied.at("input").tensor().values, x->values));
    CHECK(copied.at("out").tensor().values == shared.at("out").tensor().values);
    // Other labels than B, N, C: the step gets a relabelled copy.
    const auto other = std::make_shared<const Tensor>(Tensor{x->values, {"b", "t", "d"}});
    const Trace relabelled = run_attention(cfg, default_weights(cfg), other);
    CHECK(relabelled.at("input").axes() == Axes{"B", "N", "C"});
}

TEST_CASE("two threads reading the same view or lazy step get one tensor") {
    AttentionConfig cfg;
    cfg.batch = 1;
    cfg.tokens = 64;
    cfg.dim = 64;
    cfg.heads = 4;
    const Trace t = run_attention(cfg);
    const Step copy = t.at("q");  // copies of a step share its values
    const Tensor* seen[2] = {nullptr, nullptr};
    std::thread a([&] { seen[0] = &t.at("q").tensor(); });
    std::thread b([&] { seen[1] = &copy.tensor(); });
    a.join();
    b.join();
    CHECK(seen[0] == seen[1]);
    CHECK(t.at("q").holds_values());
    // The same for a lazy step (scaled after the fused scale + softmax pass).
    const Step lazy_copy = t.at("scaled");
    REQUIRE_FALSE(lazy_copy.holds_values());
    std::thread c([&] { seen[0] = &t.at("scaled").tensor(); });
    std::thread d([&] { seen[1] = lazy_copy.view().base.get(); });
    c.join();
    d.join();
    CHECK(seen[0] == seen[1]);
}
