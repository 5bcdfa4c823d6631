// What one attention layer costs: parameters, FLOPs and memory, per step and for the layer, as
// formulas in B, N, C, h and as numbers for a config.
//
// Conventions: a multiply-add is 2 FLOPs (a matmul [n, k] @ [k, m] is 2 n k m); a bias add, a
// scale or a dropout mask 1 FLOP per element; softmax 5 FLOPs per element (max, subtract, exp,
// sum, divide). Memory is float32 (4 bytes per element); a view (reshape of a contiguous tensor,
// permute, unbind, transpose, eval-mode dropout) allocates nothing new.
//
// With C fixed the parameters do not depend on h: the heads split the same C columns of qkv and
// the same C rows of proj (4C^2 + 4C with both biases). QK^T costs 2 B h N^2 c = 2 B N^2 C FLOPs
// for any h, since h c = C.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config.hpp"

namespace attnscope {

struct StepCost {
    std::string step;            // pinned step name
    std::string params_formula;  // "3C^2 + 3C" ("" when none)
    std::uint64_t params = 0;
    std::string flops_formula;   // "2 B N C 3C = 6 B N C^2"
    std::uint64_t flops = 0;
    std::string bytes_formula;   // "4 B N 3C"
    std::uint64_t bytes = 0;     // the size of the step's tensor
    bool view = false;           // PyTorch allocates nothing here (bytes are not new memory)
    std::uint64_t new_bytes() const { return view ? 0 : bytes; }
};

struct CostTable {
    AttentionConfig config;
    std::vector<StepCost> steps;  // pipeline order
    std::uint64_t params = 0;     // the whole layer
    std::uint64_t flops = 0;
    std::uint64_t new_bytes = 0;  // memory the forward pass allocates (views excluded)
    std::uint64_t all_bytes = 0;  // every intermediate as if each were stored (what attnscope records)
    std::string params_formula;   // "4C^2 + 4C" / "4C^2 + C" without the qkv bias
    std::string flops_formula;    // the layer's FLOPs in B, N, C
    const StepCost* find(const std::string& step) const;
};

CostTable attention_cost(const AttentionConfig& config);

// The table as text (`attnscope cost`): one row per step, then the totals and the notes.
std::string format_cost_table(const CostTable& table);

std::string format_count(std::uint64_t n);  // "12.4 M", "1.21 G", "768"

}  // namespace attnscope
