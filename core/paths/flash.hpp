// FlashAttention's forward (Dao et al. 2022): attention computed tile by tile with an online
// softmax, so the [N, N] score matrix is never stored. Declared in core/paths/beyond.hpp (run_flash);
// this header exposes the kernel for tests.
#pragma once

#include "beyond.hpp"

namespace attnscope {

// context [B, h, N, c] = softmax(mask(q k^T * scale)) v, computed in Br x Bc tiles:
// per query block, for each key block  S = Q_i K_j^T * scale (masked -> -inf),
//   m_new = max(m, rowmax S),  P = exp(S - m_new),  l = exp(m - m_new) l + rowsum P,
//   O = exp(m - m_new) O + P V_j,  m = m_new;  finally O / l.
// keep [B, N, N'] or null. When record is non-null, the tiles of (record->batch_item, record->head)
// are appended to it (m, l and the running O, the latter up to kFlashOutputBudget floats).
Array flash_attention(const Array& q, const Array& k, const Array& v, std::size_t tile_rows, std::size_t tile_cols,
                      const AttentionConfig& mask_config, FlashRecord* record,
                      const std::atomic<bool>* cancel = nullptr);

}  // namespace attnscope
