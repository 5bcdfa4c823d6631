// The memory budget every engine run and every file read is checked against before allocating:
// half the machine's RAM by default, --memory-budget 2G on the command line. A config or file over
// it is refused with a message that says how much it needs (never an OOM kill).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config.hpp"

namespace attnscope {

// The budget in force: the last set_memory_budget(), else default_memory_budget(). Thread-safe.
std::uint64_t memory_budget();
// 0 goes back to the default.
void set_memory_budget(std::uint64_t bytes);

// "2G", "512M", "1.5GiB", "300k", "1000000" (bytes); K/M/G/T are powers of 1024, with or without
// "iB"/"B". nullopt and *error ("--memory-budget 2X: ...") when the text is not a size.
std::optional<std::uint64_t> parse_byte_size(const std::string& text, Message* error);

// What one recorded step of the attention trace needs: its tensor's bytes.
struct StepBytes {
    std::string step;  // "scores", or "weights" for qkv/proj weights and biases
    std::uint64_t bytes = 0;
};
// Every step's bytes of the textbook path in pipeline order, then the weights.
std::vector<StepBytes> step_bytes(const AttentionConfig& config);
// Their sum: the bytes the recorded textbook trace needs. Saturates at UINT64_MAX instead of
// overflowing. core/run's trace_bytes gives any path's.
std::uint64_t textbook_trace_bytes(const AttentionConfig& config);

}  // namespace attnscope
