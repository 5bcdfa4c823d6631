#pragma once
// y = x @ W^T + b with the weight laid out once, ahead of time, for an AVX-512 kernel.
//
// Why not OpenBLAS here: sgemm packs its operands into blocks on every call. At a ViT's shapes
// (197 tokens, weights of 0.6-9 MB) the weight is the large operand and comes from memory, so every
// forward pays for reading and rewriting all the weights (about 20% of sgemm's time, measured with
// perf), and OpenBLAS 0.3.21 has no API to keep a packed copy. PackedWeight is that copy, built when
// the weights are made or loaded; packed_linear reads it with a 14x32 register tile.
//
// Layout of PackedWeight::panels: [ceil(out/32), in, 32]: panel p holds the output features
// [32p, 32p+32) of every input feature k contiguously, zero beyond `out`.

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <vector>

#include "tensor.hpp"

namespace attnscope {

// `bytes` from malloc; blocks of 2 MB and up 2 MB-aligned. With ATTNSCOPE_HUGE_PAGES=1 in the
// environment their whole 2 MB pages are marked for transparent huge pages (madvise); by default they
// stay in 4 KB pages: where the kernel samples accessed bits (DAMON), huge pages made the forward
// slower and its tail longer (README, Benchmark). Freed with std::free; throws std::bad_alloc.
void* allocate_panels(std::size_t bytes);

// Storage for the packed weights (allocate_panels).
template <typename T>
struct PanelAllocator {
    using value_type = T;
    PanelAllocator() = default;
    template <typename U>
    PanelAllocator(const PanelAllocator<U>&) noexcept {}
    T* allocate(std::size_t n) { return static_cast<T*>(allocate_panels(n * sizeof(T))); }
    void deallocate(T* p, std::size_t) noexcept { std::free(p); }
    // resize() leaves the floats uninitialized (pack_weight writes every one): no zeroing pass over
    // memory that is about to be written, which on a VM with slow page faults is most of its cost.
    template <typename U>
    void construct(U* p) noexcept { ::new (static_cast<void*>(p)) U; }
    template <typename U, typename... Args>
    void construct(U* p, Args&&... args) { ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...); }
    template <typename U>
    bool operator==(const PanelAllocator<U>&) const noexcept { return true; }
    template <typename U>
    bool operator!=(const PanelAllocator<U>&) const noexcept { return false; }
};

struct PackedWeight {
    std::size_t out = 0, in = 0;
    const float* source = nullptr;                        // the [out, in] weight it was packed from (checked at each use)
    std::vector<float, PanelAllocator<float>> panels;  // [ceil(out/32), in, 32]
};

// True when the CPU and OS run AVX-512F and ATTNSCOPE_NO_AVX512 is not set in the environment.
bool packed_linear_available();

// The weight [out, in] packed for packed_linear, or nullptr where that does not pay: without
// AVX-512, or for a weight under 64 input features (the ops keep OpenBLAS there).
std::shared_ptr<const PackedWeight> pack_weight(const Array& weight);

// True when `packed` was packed from this very weight (same storage, same shape).
bool packed_from(const PackedWeight* packed, const Array& weight);

// Up to this many rows the kernel beats OpenBLAS; beyond, OpenBLAS's packing of the weight is spread
// over enough rows and its sgemm is as fast or faster (README, Benchmark: the ViT-B qkv shape at
// 197, 394 and 788 rows).
constexpr std::size_t kPackedLinearMaxRows = 512;

// y [rows, out] = x [rows, in] @ W^T (+ bias [out]) on `threads` threads; x and y row-major.
// Each output is bias + sum over k in increasing order, in float with FMA.
void packed_linear(const float* x, std::size_t rows, const PackedWeight& w, const float* bias, float* y, int threads);

// y [n, m] = a [n, k] @ b [k, m] on the calling thread, with the same register tile reading both
// operands where they are (a's rows ld_a apart, b's rows ld_b apart, unit column strides): no
// packing, for the small per-head products such as attn @ v, whose v is a strided window into qkv.
// m must be a multiple of 32 (the tile's width); needs packed_linear_available().
constexpr std::size_t kInPlaceMatmulWidth = 32;
void in_place_matmul(const float* a, std::size_t ld_a, const float* b, std::size_t ld_b, std::size_t n, std::size_t k,
                     std::size_t m, float* y);

}  // namespace attnscope
