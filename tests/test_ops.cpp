// Every op against a naive loop written here, and the shape errors each op throws.
#include <doctest/doctest.h>

#include <cmath>

#include "ops.hpp"
#include "torch_layout.hpp"

using namespace attnscope;

namespace {

Tensor iota_tensor(const Shape& shape, Axes axes, float step = 0.25f, float offset = -3.0f) {
    Tensor t{make_array(shape), std::move(axes)};
    for (std::size_t i = 0; i < t.values.size(); ++i) t.values.data()[i] = offset + step * static_cast<float>(i % 97);
    return t;
}

Tensor random_tensor(const Shape& shape, Axes axes, std::uint64_t seed) {
    Tensor t{make_array(shape), std::move(axes)};
    Rng rng(seed, 0);
    for (float& v : t.values) v = rng.normal();
    return t;
}

// Row-major flat index of `index` in `shape`.
std::size_t flat(const Shape& shape, const std::vector<std::size_t>& index) {
    std::size_t f = 0;
    for (std::size_t d = 0; d < shape.size(); ++d) f = f * shape[d] + index[d];
    return f;
}

// Calls fn(index) for every index of shape in row-major order.
template <typename Fn>
void for_each_index(const Shape& shape, Fn fn) {
    std::vector<std::size_t> index(shape.size(), 0);
    const std::size_t n = element_count(shape);
    for (std::size_t i = 0; i < n; ++i) {
        fn(index);
        for (std::size_t d = shape.size(); d-- > 0;) {
            if (++index[d] < shape[d]) break;
            index[d] = 0;
        }
    }
}

std::string shape_error_of(const std::function<void()>& fn) {
    try {
        fn();
    } catch (const ShapeError& e) {
        return e.what();
    }
    return "<no ShapeError>";
}

}  // namespace

TEST_CASE("linear equals x @ W^T + b computed by a naive loop") {
    const Tensor x = random_tensor({2, 3, 5}, {"B", "N", "C"}, 1);
    const Tensor w = random_tensor({7, 5}, {"o", "i"}, 2);
    const Tensor b = random_tensor({7}, {"o"}, 3);
    for (bool with_bias : {false, true}) {
        const Tensor y = linear(x, w.values, with_bias ? &b.values : nullptr, "D");
        CHECK(shape_of(y.values) == Shape{2, 3, 7});
        CHECK(y.axes == Axes{"B", "N", "D"});
        for (std::size_t r = 0; r < 6; ++r)
            for (std::size_t o = 0; o < 7; ++o) {
                double expected = with_bias ? b.values(o) : 0.0;
                for (std::size_t i = 0; i < 5; ++i) expected += double(x.values.data()[r * 5 + i]) * w.values(o, i);
                CHECK(y.values.data()[r * 7 + o] == doctest::Approx(expected).epsilon(1e-5));
            }
    }
}

TEST_CASE("linear names both shapes and the axis that disagrees") {
    const Tensor x = random_tensor({2, 16, 512}, {"B", "N", "C"}, 1);
    const Array w = make_array({2304, 768});
    const std::string msg = shape_error_of([&] { linear(x, w, nullptr, "3C", "qkv.weight"); });
    CHECK(msg.find("[2304, 768]") != std::string::npos);
    CHECK(msg.find("[2, 16, 512]") != std::string::npos);
    CHECK(msg.find("C=512") != std::string::npos);
    const Array bad_bias = make_array({5});
    CHECK(shape_error_of([&] { linear(x, make_array({4, 512}), &bad_bias, "D"); }).find("bias") != std::string::npos);
}

TEST_CASE("reshape keeps row-major order and refuses a different element count") {
    const Tensor x = iota_tensor({2, 6}, {"B", "C"});
    const Tensor y = reshape(x, {2, 3, 2}, {"B", "h", "c"});
    for (std::size_t i = 0; i < 12; ++i) CHECK(y.values.data()[i] == x.values.data()[i]);
    CHECK(y.axes == Axes{"B", "h", "c"});
    CHECK(shape_error_of([&] { reshape(x, {5, 3}, {"a", "b"}); }).find("12 elements") != std::string::npos);
}

TEST_CASE("permute(2 0 3 1 4) moves every element where a naive index map says") {
    const Shape in{2, 3, 3, 4, 5};  // [B, N, 3, h, c]
    const Tensor x = iota_tensor(in, {"B", "N", "3", "h", "c"}, 1.0f, 0.0f);
    const Tensor y = permute(x, {2, 0, 3, 1, 4});
    const Shape out{3, 2, 4, 3, 5};
    REQUIRE(shape_of(y.values) == out);
    CHECK(y.axes == Axes{"3", "B", "h", "N", "c"});
    std::size_t mismatches = 0;
    for_each_index(in, [&](const std::vector<std::size_t>& i) {
        const std::size_t j = flat(out, {i[2], i[0], i[3], i[1], i[4]});
        mismatches += y.values.data()[j] != x.values.data()[flat(in, i)];
    });
    CHECK(mismatches == 0);
    CHECK(shape_error_of([&] { permute(x, {0, 0, 1, 2, 3}); }).find("not a permutation") != std::string::npos);
}

TEST_CASE("transpose and select (unbind) against naive loops") {
    const Shape in{3, 2, 4, 5};
    const Tensor x = random_tensor(in, {"3", "B", "N", "c"}, 4);
    const Tensor t = transpose(x, 2, 3);
    CHECK(shape_of(t.values) == Shape{3, 2, 5, 4});
    CHECK(t.axes == Axes{"3", "B", "c", "N"});
    for_each_index(in, [&](const std::vector<std::size_t>& i) {
        CHECK(t.values.data()[flat({3, 2, 5, 4}, {i[0], i[1], i[3], i[2]})] == x.values.data()[flat(in, i)]);
    });
    for (std::size_t k = 0; k < 3; ++k) {
        const Tensor s = select(x, 0, k);
        CHECK(s.axes == Axes{"B", "N", "c"});
        for_each_index({2, 4, 5}, [&](const std::vector<std::size_t>& i) {
            CHECK(s.values.data()[flat({2, 4, 5}, i)] == x.values.data()[flat(in, {k, i[0], i[1], i[2]})]);
        });
    }
    const Tensor mid = select(x, 2, 3);  // a middle axis
    for_each_index({3, 2, 5}, [&](const std::vector<std::size_t>& i) {
        CHECK(mid.values.data()[flat({3, 2, 5}, i)] == x.values.data()[flat(in, {i[0], i[1], 3, i[2]})]);
    });
    CHECK(shape_error_of([&] { select(x, 0, 3); }).find("out of range") != std::string::npos);
    CHECK(shape_error_of([&] { transpose(x, 1, 4); }).find("do not both exist") != std::string::npos);
}

TEST_CASE("batched matmul against a naive triple loop") {
    const Tensor a = random_tensor({2, 3, 4, 5}, {"B", "h", "N", "c"}, 5);
    const Tensor b = random_tensor({2, 3, 5, 6}, {"B", "h", "c", "N'"}, 6);
    const Tensor y = matmul(a, b, {"B", "h", "N", "N'"});
    REQUIRE(shape_of(y.values) == Shape{2, 3, 4, 6});
    for (std::size_t bh = 0; bh < 6; ++bh)
        for (std::size_t i = 0; i < 4; ++i)
            for (std::size_t j = 0; j < 6; ++j) {
                double e = 0;
                for (std::size_t k = 0; k < 5; ++k) e += double(a.values.data()[bh * 20 + i * 5 + k]) * b.values.data()[bh * 30 + k * 6 + j];
                CHECK(y.values.data()[bh * 24 + i * 6 + j] == doctest::Approx(e).epsilon(1e-5));
            }
}

TEST_CASE("matmul with k not transposed names q k and the axes like TensorSensor") {
    const Tensor q = random_tensor({2, 8, 16, 96}, {"B", "h", "N", "c"}, 7);
    const Tensor k = random_tensor({2, 8, 16, 96}, {"B", "h", "N'", "c"}, 8);
    const std::string msg = shape_error_of([&] { matmul(q, k, {"B", "h", "N", "N'"}, "q", "k"); });
    CHECK(msg == "matmul: q [2, 8, 16, 96] @ k [2, 8, 16, 96]: q's last axis (c=96) must equal k's "
                 "second-to-last axis (N'=16)");
    const Tensor other = random_tensor({2, 4, 96, 16}, {"B", "h", "c", "N'"}, 9);
    CHECK(shape_error_of([&] { matmul(q, other, {"B", "h", "N", "N'"}, "q", "k_t"); }).find("batch axis 1") !=
          std::string::npos);
}

TEST_CASE("scale multiplies every element") {
    const Tensor x = random_tensor({3, 4}, {"N", "N'"}, 10);
    const Tensor y = scale(x, 0.125f);
    for (std::size_t i = 0; i < 12; ++i) CHECK(y.values.data()[i] == x.values.data()[i] * 0.125f);
}

TEST_CASE("softmax over the last axis equals exp(x - max) / sum in double precision") {
    for (std::size_t n : {1u, 3u, 4u, 8u, 17u, 197u}) {  // tails shorter and longer than a SIMD batch
        const Tensor x = random_tensor({2, 3, n}, {"h", "N", "N'"}, 11 + n);
        const Tensor y = softmax_last(x);
        for (std::size_t r = 0; r < 6; ++r) {
            double m = -INFINITY, sum = 0;
            for (std::size_t j = 0; j < n; ++j) m = std::max(m, double(x.values.data()[r * n + j]));
            for (std::size_t j = 0; j < n; ++j) sum += std::exp(double(x.values.data()[r * n + j]) - m);
            for (std::size_t j = 0; j < n; ++j)
                CHECK(y.values.data()[r * n + j] ==
                      doctest::Approx(std::exp(double(x.values.data()[r * n + j]) - m) / sum).epsilon(1e-5));
        }
    }
}

TEST_CASE("softmax of scores far above 88 gives no NaN (the naive float32 exp overflows there)") {
    Tensor x{make_array({1, 4}), {"N", "N'"}};
    x.values = Array{{100.0f, 200.0f, 1000.0f, 999.0f}};
    CHECK(std::isinf(std::exp(x.values(0, 2))));  // what a softmax without the max subtraction meets
    const Tensor y = softmax_last(x);
    for (float v : y.values) CHECK(std::isfinite(v));
    CHECK(y.values(0, 2) == doctest::Approx(1.0 / (1.0 + std::exp(-1.0))));
}

TEST_CASE("dropout: identity in eval - in training each value is 0 or x / (1 - p) about p dropped") {
    const Tensor x = random_tensor({64, 64}, {"N", "N'"}, 12);
    Rng rng(3, 4);
    const Tensor eval = dropout(x, 0.5f, false, rng);
    CHECK(std::equal(eval.values.begin(), eval.values.end(), x.values.begin()));
    const float p = 0.25f;
    const Tensor y = dropout(x, p, true, rng);
    std::size_t dropped = 0, wrong = 0;
    for (std::size_t i = 0; i < x.values.size(); ++i) {
        const float v = y.values.data()[i];
        if (v == 0.0f) ++dropped;
        else wrong += std::fabs(v - x.values.data()[i] / (1.0f - p)) > 1e-6f * std::fabs(v);
    }
    CHECK(wrong == 0);
    CHECK(double(dropped) / x.values.size() == doctest::Approx(p).epsilon(0.1));  // 4096 draws: within 10%
    Rng same(3, 4);
    dropout(x, 0.5f, false, same);
    CHECK(dropout(x, p, true, same).values == y.values);  // seeded: the same mask again
}

TEST_CASE("PyTorch view rules: reshape after permute must copy after a plain split it is a view") {
    const TorchLayout qkv = TorchLayout::contiguous({2, 16, 2304});
    const auto split = torch_view_strides(qkv, {2, 16, 3, 8, 96});
    REQUIRE(split);
    CHECK(*split == Strides{36864, 2304, 768, 96, 1});
    const TorchLayout heads = torch_permute({{2, 16, 3, 8, 96}, *split}, {2, 0, 3, 1, 4});
    CHECK(heads.strides == Strides{768, 36864, 96, 2304, 1});
    CHECK_FALSE(heads.is_contiguous());
    const TorchLayout context_t = torch_transpose(TorchLayout::contiguous({2, 8, 16, 96}), 1, 2);
    CHECK_FALSE(torch_view_strides(context_t, {2, 16, 768}));  // .view would raise: reshape copies
    CHECK(torch_view_strides(TorchLayout::contiguous({4, 6}), {2, 2, 6}) == Strides{12, 6, 1});
}
