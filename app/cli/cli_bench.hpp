// `attnscope bench`'s measurements (app/cli/cli_bench.cpp): each returns one JSON object.
#pragma once

#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

#include "config.hpp"

namespace attnscope {

// Keeps memory freed by one recorded run for the next (glibc mallopt): no page faults and no
// kernel zeroing on re-runs. Called once at start-up, before any thread exists.
void keep_freed_memory();

// The recorded attention layer: median ms over `repeat` runs, GFLOP/s, and the memory of one
// recorded run (peak RSS growth against the bytes of every tensor the user can look at).
nlohmann::json bench_attention(const AttentionConfig& config, std::size_t repeat);

// ViT-B/16 on one 224x224 image (random weights, timm names), every step recorded; peak RSS.
nlohmann::json bench_vit_b(std::size_t repeat);

// A ViT checkpoint the user has (any family, any format): the time to load it (load_vit_model:
// read, convert, pack) against the time to read the file's bytes once, and its forward on one
// image of its size (random pixels), every step recorded.
nlohmann::json bench_vit_model(const std::string& path, std::size_t repeat);

// OpenBLAS sgemm GFLOP/s at the ViT-B qkv shape and at 1024^3, on 1 thread and on all.
nlohmann::json bench_sgemm();

// Opening a tensor file and listing its tensors (no values read).
nlohmann::json bench_open(const std::string& path, std::size_t repeat);

}  // namespace attnscope
