// The AVX-512 linear kernel (core/kernels/packed_linear) against PyTorch: tools/make_linear_golden.py
// computes F.linear on inputs whose float32 result is exact in any summation order, so the kernel
// must give it exactly, at shapes that reach every edge of its blocking. Rounding with real weights
// is covered by the ViT golden cases (test_vit), which run through the same kernel. The same tile
// reading attn @ v's operands in place is checked the same way.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>
#include <xtensor/xrandom.hpp>

#include "io.hpp"
#include "ops.hpp"
#include "packed_linear.hpp"
#include "pipeline.hpp"
#include "vit.hpp"

using namespace attnscope;
namespace fs = std::filesystem;

namespace {

const fs::path kLinear = fs::path(ATTNSCOPE_TEST_DATA) / "linear";

// The formulas of tools/make_linear_golden.py: exact in float32.
struct Inputs {
    Array x, w, b;
};
Inputs formula_inputs(std::size_t rows, std::size_t in, std::size_t out) {
    Inputs v{make_array({rows, in}), make_array({out, in}), make_array({out})};
    for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t k = 0; k < in; ++k)
            v.x(r, k) = static_cast<float>(static_cast<long>((r * 131 + k * 71) % 257) - 128) / 128.0f;
    for (std::size_t o = 0; o < out; ++o)
        for (std::size_t k = 0; k < in; ++k)
            v.w(o, k) = static_cast<float>(static_cast<long>((o * 97 + k * 13) % 211) - 105) / 256.0f;
    for (std::size_t o = 0; o < out; ++o) v.b(o) = static_cast<float>(static_cast<long>((o * 29) % 17) - 8) / 16.0f;
    return v;
}

std::size_t mismatches(const Array& a, const Array& b) {
    REQUIRE(a.size() == b.size());
    std::size_t n = 0;
    for (std::size_t i = 0; i < a.size(); ++i) n += a.data()[i] != b.data()[i];
    return n;
}

}  // namespace

TEST_CASE("packed linear gives PyTorch's exact F.linear at every edge of its blocking, on 1 and 2 threads") {
    if (!packed_linear_available()) {
        MESSAGE("no AVX-512 on this CPU: linear runs on OpenBLAS only, nothing to check here");
        return;
    }
    std::size_t cases = 0;
    for (const auto& entry : fs::directory_iterator(kLinear)) {
        std::ifstream meta_in(entry.path() / "meta.json");
        const nlohmann::json meta = nlohmann::json::parse(meta_in);
        if (!meta.contains("rows")) continue;  // the matmul case, below
        const std::size_t rows = meta["rows"], in = meta["in"], out = meta["out"];
        const bool bias = meta["bias"];
        CAPTURE(entry.path().filename().string());
        REQUIRE(meta["torch_f32_error"].get<double>() == 0.0);
        const Array expected = read_npy((entry.path() / "y.npy").string());
        REQUIRE(shape_of(expected) == Shape{rows, out});

        const Inputs v = formula_inputs(rows, in, out);
        const auto packed = pack_weight(v.w);
        REQUIRE(packed);
        for (int threads : {1, 2}) {
            CAPTURE(threads);
            Array y = make_array({rows, out});
            packed_linear(v.x.data(), rows, *packed, bias ? v.b.data() : nullptr, y.data(), threads);
            CHECK(mismatches(y, expected) == 0);
        }
        // Through the op the pipeline calls, with its [B, N, C] axes.
        const Tensor x{v.x, {"N", "C"}};
        const Tensor y = linear(x, v.w, bias ? &v.b : nullptr, "D", "weight", packed.get());
        CHECK(mismatches(y.values, expected) == 0);
        ++cases;
    }
    CHECK(cases == 4);
}

TEST_CASE("the in-place tile gives PyTorch's exact matmul with b a window of wider rows, as v in qkv") {
    const fs::path dir = kLinear / "matmul_2x3_n20_k45_m64";
    std::ifstream meta_in(dir / "meta.json");
    const nlohmann::json meta = nlohmann::json::parse(meta_in);
    const std::size_t n = meta["n"], k = meta["k"], m = meta["m"], width = meta["width"], first = meta["first"];
    REQUIRE(meta["batch"] == nlohmann::json{2, 3});
    REQUIRE(meta["torch_f32_error"].get<double>() == 0.0);
    const Array expected = read_npy((dir / "y.npy").string());
    REQUIRE(shape_of(expected) == Shape{2, 3, n, m});
    // The formulas of tools/make_linear_golden.py (matmul_inputs).
    Array a = make_array({2, 3, n, k}), whole = make_array({2, 3, k, width});
    for (std::size_t i = 0; i < a.size(); ++i)
        a.data()[i] = static_cast<float>(static_cast<long>(i * 37 % 255) - 127) / 128.0f;
    for (std::size_t j = 0; j < whole.size(); ++j)
        whole.data()[j] = static_cast<float>(static_cast<long>(j * 53 % 209) - 104) / 256.0f;
    if (!packed_linear_available()) {
        MESSAGE("no AVX-512 on this CPU: matmul runs on OpenBLAS only, nothing to check here");
        return;
    }
    // b read where it is: rows `width` apart, from column `first` (the kernel copies them together).
    Array y = make_array({2, 3, n, m});
    for (std::size_t item = 0; item < 6; ++item)
        in_place_matmul(a.data() + item * n * k, k, whole.data() + item * k * width + first, width, n, k, m,
                        y.data() + item * n * m);
    CHECK(mismatches(y, expected) == 0);
    // Through the op, with b contiguous (read without the copy).
    Array b = make_array({2, 3, k, m});
    for (std::size_t item = 0; item < 6; ++item)
        for (std::size_t r = 0; r < k; ++r)
            std::copy_n(whole.data() + (item * k + r) * width + first, m, b.data() + (item * k + r) * m);
    const Tensor y_op =
        matmul(Tensor{a, {"B", "h", "N", "N'"}}, Tensor{b, {"B", "h", "N'", "c"}}, {"B", "h", "N", "c"});
    CHECK(mismatches(y_op.values, expected) == 0);
}

TEST_CASE("a packed weight is used only for the storage it was packed from") {
    xt::random::seed(7);
    const Array w = xt::random::randn<float>({96, 128});
    const auto packed = pack_weight(w);
    if (!packed) {
        CHECK_FALSE(packed_linear_available());
        return;
    }
    CHECK(packed_from(packed.get(), w));
    const Array copy = w;  // new storage: might be edited, so the pack does not apply
    CHECK_FALSE(packed_from(packed.get(), copy));
    CHECK_FALSE(packed_from(nullptr, w));

    // Given another weight's pack, linear computes with the weight it was given (OpenBLAS).
    Array other = w;
    other(5, 7) += 1.0f;
    const Tensor x{xt::random::randn<float>({20, 128}), {"N", "C"}};
    const Tensor with_stale = linear(x, other, nullptr, "D", "weight", packed.get());
    const Tensor plain = linear(x, other, nullptr, "D");
    CHECK(mismatches(with_stale.values, plain.values) == 0);

    // Narrow weights stay on OpenBLAS.
    CHECK_FALSE(pack_weight(make_array({8, 63})));
}

TEST_CASE("packed linear agrees with OpenBLAS on random weights and keeps a NaN in its row") {
    xt::random::seed(11);
    const Array w = xt::random::randn<float>({2304, 768});
    const Array b = xt::random::randn<float>({2304});
    const auto packed = pack_weight(w);
    if (!packed) return;
    Array xs = xt::random::randn<float>({197, 768});
    xs(3, 100) = NAN;
    const Tensor x{xs, {"N", "C"}};
    const Tensor fast = linear(x, w, &b, "3C", "qkv.weight", packed.get());
    const Tensor blas = linear(x, w, &b, "3C", "qkv.weight");
    double worst = 0;
    for (std::size_t r = 0; r < 197; ++r)
        for (std::size_t o = 0; o < 2304; ++o) {
            const float f = fast.values(r, o), s = blas.values(r, o);
            if (r == 3) {
                REQUIRE(std::isnan(f));
                continue;
            }
            worst = std::max(worst, std::abs(double(f) - s));
        }
    // Sums of 768 products of N(0, 1) values (|y| ~ 28): two orders of float32 rounding differ by ~1e-5.
    CHECK(worst < 1e-3);
    CHECK(worst > 0);  // a different order of the sum: the kernel really ran
}

TEST_CASE("the pipeline's default weights and a fresh ViT come packed where the kernel runs") {
    AttentionConfig cfg;
    cfg.dim = 128;
    cfg.heads = 2;
    const AttentionWeights w = default_weights(cfg);
    CHECK(bool(w.qkv_packed) == packed_linear_available());
    CHECK(bool(w.proj_packed) == packed_linear_available());
    if (w.qkv_packed) CHECK(packed_from(w.qkv_packed.get(), w.qkv_weight));

    const VitModel m = fresh_vit_model(VitConfig{}, 1);  // the default config: D = 96, patches of 3*8*8
    const bool on = packed_linear_available();
    CHECK(packed_from(m.weights.patch_packed.get(), m.weights.patch_weight) == on);
    for (const VitBlockWeights& b : m.weights.blocks) {
        CHECK(packed_from(b.attn.qkv_packed.get(), b.attn.qkv_weight) == on);
        CHECK(packed_from(b.attn.proj_packed.get(), b.attn.proj_weight) == on);
        CHECK(packed_from(b.fc1_packed.get(), b.fc1_weight) == on);
        CHECK(packed_from(b.fc2_packed.get(), b.fc2_weight) == on);
    }
}
