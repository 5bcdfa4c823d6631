// The trace as JSON (the schema of `attnscope trace --json` and DIR/trace.json) and as a dump
// folder of .npy files.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "trace.hpp"

namespace attnscope {

nlohmann::json config_to_json(const AttentionConfig& config);

// {"config": {...}, "steps": [{"name", "shape", "code", "formula", "op", "inputs", "axes",
//  "strides", "contiguous", "view", "note", "stats": {...}}, ...], "checks": {...}}.
// The attn and attn_drop steps also carry "row_sum_max_error" and "failing_rows".
nlohmann::json trace_to_json(const Trace& trace);

// Writes DIR/<step>.npy (float32, C order) for every step (on the flash path also flash_m.npy and
// flash_l.npy: the final row max and row sum of the online softmax, [B, h, N]), then DIR/trace.json
// last, each atomically; an old DIR/trace.json is removed first so a failed dump never leaves one behind.
void dump_trace(const Trace& trace, const std::string& dir);
inline constexpr const char* kFlashRowMaxFile = "flash_m.npy";
inline constexpr const char* kFlashRowSumFile = "flash_l.npy";

}  // namespace attnscope
