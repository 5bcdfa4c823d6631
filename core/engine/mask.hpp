// Masks, on every path: `causal` hides key j from query i when j > i; `valid_tokens[b]` hides the
// padding keys j >= valid_tokens[b] of batch item b (PyTorch's key_padding_mask). Hidden scores
// become -inf before softmax, in a `masked` step between `scaled` and `attn` (core/paths/beyond.hpp
// has the convention in full).
#pragma once

#include <string>

#include "config.hpp"
#include "tensor.hpp"

namespace attnscope {

// keep [B, N, N']: 1 where query i may see key j (causal and key padding), else 0.
Array attention_keep_mask(const AttentionConfig& config);
// The PyTorch line of the mask step and the note shown with it.
std::string mask_code(const AttentionConfig& config);
std::string mask_note(const AttentionConfig& config);
// "causal", "valid 12,16", "causal, valid 12,16" or "" (for titles and the CLI header).
std::string mask_summary(const AttentionConfig& config);

}  // namespace attnscope
