// run_flash: the recorded steps that still exist (input .. v, context .. out_drop) and, instead of
// k_t, scores, scaled, attn and attn_drop, the tiles of the online softmax.
//
// Loop order: row blocks outer, key blocks inner (as FlashAttention-2 schedules the same math), so
// each query block's output rows are final when its row of tiles is done; the numbers equal the
// 2022 algorithm's, whose outer loop runs over key blocks.
#include "flash.hpp"

#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>

#include "checks.hpp"
#include "recorder.hpp"
#include "serial_blas.hpp"
#include "vmath.hpp"

namespace attnscope {

Array flash_attention(const Array& q, const Array& k, const Array& v, std::size_t Br, std::size_t Bc,
                      const AttentionConfig& mc, FlashRecord* record, const std::atomic<bool>* cancel) {
    const Shape qs = shape_of(q);
    if (qs.size() != 4 || shape_of(k) != qs || shape_of(v) != qs)
        throw ShapeError(Message(Msg::flash_shapes, {{"q_shape", format_shape(qs)}, {"k_shape", format_shape(shape_of(k))},
                                                     {"v_shape", format_shape(shape_of(v))}}));
    if (Br == 0 || Bc == 0) throw ShapeError(Message(Msg::flash_tiles));
    const std::size_t B = qs[0], h = qs[1], N = qs[2], c = qs[3];
    const float scale = mc.scaled ? static_cast<float>(std::pow(static_cast<double>(c), -0.5)) : 1.0f;  // --no-scale
    const float minus_inf = -std::numeric_limits<float>::infinity();
    const std::size_t row_blocks = (N + Br - 1) / Br, col_blocks = (N + Bc - 1) / Bc;
    Array out = make_array(qs);  // [B, h, N, c]
    std::size_t o_kept = 0;      // the recorded head's kept O (one thread)
    if (record) {
        record->tile_rows = Br, record->tile_cols = Bc, record->tokens = N, record->head_dim = c;
        record->row_blocks = row_blocks, record->col_blocks = col_blocks;
        record->final_m.assign(N, 0.0f);
        record->final_l.assign(N, 0.0f);
        record->row_max.assign(B * h * N, 0.0f);  // [B, h, N]: 2 B h N floats, small next to q, k, v
        record->row_sum.assign(B * h * N, 0.0f);
    }
    // The (b, head) pairs share nothing but the record's counters: the threads take them as they
    // finish one (each the same numbers as alone), every sgemm on its own thread.
    std::size_t tiles_total = 0, tiles_skipped = 0;
    std::atomic<bool> cancelled{false};
    SerialBlas serial;
#pragma omp parallel reduction(+ : tiles_total, tiles_skipped) if (B * h > 1)
    {
        std::vector<float> S(Br * Bc), O(Br * c), m(Br), l(Br);  // this thread's tile scores and block state
#pragma omp for schedule(dynamic)
        for (std::size_t bh = 0; bh < B * h; ++bh) {
            if (cancelled.load() || (cancel && cancel->load())) {  // no exception may leave the parallel loop
                cancelled = true;
                continue;
            }
            const std::size_t b = bh / h, head = bh % h;
            const std::size_t valid = mc.valid_tokens.empty() ? N : mc.valid_tokens.at(b);
            const bool recorded = record && b == record->batch_item && head == record->head;
            const float* Q = q.data() + (b * h + head) * N * c;  // [N, c]
            const float* K = k.data() + (b * h + head) * N * c;  // [N', c]
            const float* V = v.data() + (b * h + head) * N * c;  // [N', c]
            float* Out = out.data() + (b * h + head) * N * c;
            for (std::size_t rb = 0; rb < row_blocks; ++rb) {
                const std::size_t r0 = rb * Br, rows = std::min(Br, N - r0);
                std::fill(m.begin(), m.end(), minus_inf);
                std::fill(l.begin(), l.end(), 0.0f);
                std::fill(O.begin(), O.end(), 0.0f);
                for (std::size_t cb = 0; cb < col_blocks; ++cb) {
                    const std::size_t c0 = cb * Bc, cols = std::min(Bc, N - c0);
                    ++tiles_total;
                    // Causal: every key of this tile comes after every query; padding: every key is padding.
                    const bool skipped = (mc.causal && c0 > r0 + rows - 1) || c0 >= valid;
                    if (!skipped) {
                        // S = Q_i K_j^T * scale                                          [rows, cols]
                        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(rows), int(cols), int(c), scale,
                                    Q + r0 * c, int(c), K + c0 * c, int(c), 0.0f, S.data(), int(cols));
                        for (std::size_t i = 0; i < rows; ++i) {
                            float* s = S.data() + i * cols;
                            for (std::size_t j = 0; j < cols; ++j)
                                if (c0 + j >= valid || (mc.causal && c0 + j > r0 + i)) s[j] = minus_inf;
                            float m_new = m[i];
                            for (std::size_t j = 0; j < cols; ++j) m_new = std::max(m_new, s[j]);
                            if (m_new == minus_inf) {  // nothing visible yet in this row: P = 0, state unchanged
                                std::fill(s, s + cols, 0.0f);
                                continue;
                            }
                            const float alpha = std::exp(m[i] - m_new);  // rescales the old l and O (0 at the start)
                            const float row_sum = vmath::exp_shifted(s, m_new, 1.0f, s, cols);  // P = exp(S - m_new)
                            l[i] = alpha * l[i] + row_sum;
                            for (std::size_t e = 0; e < c; ++e) O[i * c + e] *= alpha;
                            m[i] = m_new;
                        }
                        // O += P V_j                                                     [rows, c]
                        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(rows), int(c), int(cols), 1.0f,
                                    S.data(), int(cols), V + c0 * c, int(c), 1.0f, O.data(), int(c));
                    } else {
                        ++tiles_skipped;
                    }
                    if (recorded && record->tiles.size() == kFlashMaxTiles) record->tiles_truncated = true;
                    if (recorded && record->tiles.size() < kFlashMaxTiles) {
                        FlashTile t;
                        t.row_block = rb, t.col_block = cb, t.row0 = r0, t.rows = rows, t.col0 = c0, t.cols = cols;
                        t.skipped = skipped;
                        t.m.assign(m.begin(), m.begin() + rows);
                        t.l.assign(l.begin(), l.begin() + rows);
                        if (o_kept + rows * c <= kFlashOutputBudget) {
                            t.o.assign(O.begin(), O.begin() + rows * c);
                            o_kept += rows * c;
                        } else {
                            record->o_truncated = true;
                        }
                        record->tiles.push_back(std::move(t));
                    }
                }
                // the block's rows are final: O / l
                for (std::size_t i = 0; i < rows; ++i) {
                    const float inv = 1.0f / l[i];
                    for (std::size_t e = 0; e < c; ++e) Out[(r0 + i) * c + e] = O[i * c + e] * inv;
                    if (recorded) record->final_m[r0 + i] = m[i], record->final_l[r0 + i] = l[i];
                    if (record) {
                        record->row_max[(b * h + head) * N + r0 + i] = m[i];
                        record->row_sum[(b * h + head) * N + r0 + i] = l[i];
                    }
                }
            }
        }
    }
    if (cancelled) throw Cancelled();
    if (record) {
        record->tiles_total += tiles_total;
        record->tiles_skipped += tiles_skipped;
        record->largest_tensor_floats = std::max(out.size(), Br * Bc);
    }
    return out;
}

Trace run_flash(const AttentionConfig& cfg, const AttentionWeights& w, const Tensor& x, const RunHooks& hooks) {
    const std::size_t B = cfg.batch, N = cfg.tokens, h = cfg.heads, c = cfg.head_dim();
    Trace trace;
    trace.config = cfg;
    const auto names = path_step_names(cfg);
    Recorder rec(trace, hooks, names.size());

    // x, then qkv .. v                                                       [B, N, C] -> [B, h, N, c]
    const QkvSteps qkv = record_input_and_qkv(rec, cfg, w, x, "the input tensor, contiguous");

    // flash_attn(q, k, v): tiles of Br x Bc, online softmax                   [B, h, N, c]
    auto record = std::make_shared<FlashRecord>();
    Array context = flash_attention(qkv.q.tensor().values, qkv.k.tensor().values, qkv.v.tensor().values, cfg.tile_rows,
                                    cfg.tile_cols, cfg, record.get(), hooks.cancel);
    record->memory = attention_memory(cfg, N);
    std::vector<std::size_t> sizes = {N};
    for (std::size_t n = 64; n <= 4096; n *= 2) sizes.push_back(n);
    std::sort(sizes.begin(), sizes.end());
    sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
    for (std::size_t n : sizes) record->memory_vs_tokens.push_back(attention_memory(cfg, n));
    const std::string mask = mask_summary(cfg);
    char code[160];
    std::snprintf(code, sizeof code, "flash_attn(q, k, v%s)  # tiles of Br x Bc = %zu x %zu, online softmax",
                  cfg.causal ? ", causal=True" : "", cfg.tile_rows, cfg.tile_cols);
    const Step& ctx = rec.add(
        {"context", Op::flash_attention, code, "b h n c, b h m c, b h m c -> b h n c  (tile by tile)", {"q", "k", "v"},
         "new contiguous tensor: per block of Br query rows, the running max m, sum l and output O are updated "
         "tile by tile (rescaled by exp(m_old - m_new)) and O / l is written at the end; the [B, h, N, N] "
         "scores never exist, only one Br x Bc tile at a time" +
             (mask.empty() ? std::string() : " (" + mask + ": hidden keys get -inf inside each tile)")},
        Tensor{std::move(context), {"B", "h", "N", "c"}}, TorchLayout::contiguous({B, h, N, c}), false);
    record_output_steps(rec, cfg, w, ctx);

    auto beyond = std::make_shared<BeyondRecord>();
    beyond->path = AttentionPath::flash;
    beyond->flash = record;
    trace.beyond = beyond;
    rec.finish(expected_attention_shapes(cfg, names));
    return trace;
}

}  // namespace attnscope
