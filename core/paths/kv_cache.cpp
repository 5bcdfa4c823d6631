// run_kv_cache: autoregressive decoding with a KV cache. Tokens arrive one at a time; token t's
// key and value are appended to the cache [B, h, t + 1, c], its query attends over the whole cache
// (so attention is causal by construction), and its output row is final at once.
//
// The projections q, k, v are recorded for all tokens together (qkv .. v): nn.Linear acts on each
// token on its own, so row t of the recorded q, k, v is exactly what token t computes on arrival.
// attn [B, h, N, N'] and context .. out are the per-token rows stacked (attn is 0 after the token),
// so they can be compared with the causal standard path.
#include <algorithm>
#include <cmath>
#include <limits>

#include "beyond.hpp"
#include "checks.hpp"
#include "recorder.hpp"

namespace attnscope {

namespace {
constexpr std::size_t kKvAttnBudget = std::size_t(1) << 22;  // floats of per-token attention rows kept
}

Trace run_kv_cache(const AttentionConfig& cfg_in, const AttentionWeights& w, const Tensor& x, const RunHooks& hooks) {
    AttentionConfig cfg = cfg_in;
    cfg.causal = true;  // a decoder only ever sees the tokens that have arrived
    const std::size_t B = cfg.batch, N = cfg.tokens, C = cfg.dim, h = cfg.heads, c = cfg.head_dim();
    const float scale = attention_scale(cfg);  // self.scale (1 with --no-scale)
    Trace trace;
    trace.config = cfg;
    const auto names = path_step_names(cfg);
    Recorder rec(trace, hooks, names.size());

    // x, then qkv .. v                                                       [B, N, C] -> [B, h, N, c]
    const QkvSteps qkv = record_input_and_qkv(rec, cfg, w, x, "the input tensor: token t arrives at step t");
    const float* Q = qkv.q.tensor().values.data();  // [B, h, N, c]
    const float* K = qkv.k.tensor().values.data();
    const float* V = qkv.v.tensor().values.data();

    auto kv = std::make_shared<KvRecord>();
    Array attn = xt::zeros<float>({B, h, N, N});  // [B, h, N, N'] the per-token rows, stacked
    Array context = make_array({B, h, N, c});     // [B, h, N, c]
    std::vector<std::vector<float>> k_cache(B * h), v_cache(B * h);  // per (b, head): [t, c], growing
    for (auto& cache : k_cache) cache.reserve(N * c);
    for (auto& cache : v_cache) cache.reserve(N * c);
    std::vector<float> row(N);
    std::size_t kept = 0;
    const std::uint64_t Bu = B, Cu = C;
    for (std::size_t t = 0; t < N; ++t) {
        if (hooks.cancel && hooks.cancel->load()) throw Cancelled();
        KvToken token;
        token.t = t;
        token.cache_shape = {B, h, t + 1, c};
        const bool keep_row = kept + h * (t + 1) <= kKvAttnBudget;
        if (!keep_row) kv->attn_truncated = true;
        for (std::size_t b = 0; b < B; ++b) {
            const std::size_t valid = cfg.valid_tokens.empty() ? N : cfg.valid_tokens[b];
            for (std::size_t head = 0; head < h; ++head) {
                const std::size_t bh = b * h + head;
                const float* q_t = Q + (bh * N + t) * c;
                // append the new token's k and v:   cache [t, c] -> [t + 1, c]
                k_cache[bh].insert(k_cache[bh].end(), K + (bh * N + t) * c, K + (bh * N + t + 1) * c);
                v_cache[bh].insert(v_cache[bh].end(), V + (bh * N + t) * c, V + (bh * N + t + 1) * c);
                // scores of the one query over the cache, softmax      [t + 1]
                float row_max = -std::numeric_limits<float>::infinity();
                for (std::size_t j = 0; j <= t; ++j) {
                    float dot = 0.0f;
                    const float* k_j = k_cache[bh].data() + j * c;
                    for (std::size_t e = 0; e < c; ++e) dot += q_t[e] * k_j[e];
                    row[j] = j < valid ? dot * scale : -std::numeric_limits<float>::infinity();  // key padding
                    row_max = std::max(row_max, row[j]);
                }
                float sum = 0.0f;
                for (std::size_t j = 0; j <= t; ++j) sum += (row[j] = std::exp(row[j] - row_max));
                for (std::size_t j = 0; j <= t; ++j) row[j] /= sum;
                // output row: attn_row @ v_cache                         [c]
                float* out = context.data() + (bh * N + t) * c;
                std::fill(out, out + c, 0.0f);
                for (std::size_t j = 0; j <= t; ++j) {
                    const float* v_j = v_cache[bh].data() + j * c;
                    for (std::size_t e = 0; e < c; ++e) out[e] += row[j] * v_j[e];
                }
                std::copy(row.begin(), row.begin() + t + 1, attn.data() + (bh * N + t) * N);
                if (b == 0 && keep_row) token.attn.insert(token.attn.end(), row.begin(), row.begin() + t + 1);
            }
        }
        if (keep_row) kept += h * (t + 1);
        const std::uint64_t T = t + 1;
        // with the cache: this token's qkv and proj, and one query over T keys (q k^T and attn v)
        token.flops_cached = Bu * (2 * Cu * 3 * Cu + 2 * T * Cu + 2 * T * Cu + 2 * Cu * Cu);
        // without: the layer on all T tokens again (qkv, T x T scores, attn v, proj)
        token.flops_recompute = Bu * (2 * T * Cu * 3 * Cu + 2 * T * T * Cu + 2 * T * T * Cu + 2 * T * Cu * Cu);
        kv->flops_cached += token.flops_cached;
        kv->flops_recompute += token.flops_recompute;
        kv->tokens.push_back(std::move(token));
    }

    const TorchLayout nn_layout = TorchLayout::contiguous({B, h, N, N});
    const Step& attn_step = rec.add(
        {"attn", Op::kv_rows, "attn[:, :, t, :t + 1] = (q_t @ k_cache.transpose(-2, -1) * self.scale).softmax(-1)",
         "b h n m -> b h n m  (row t: token t over the cache of t + 1 keys)", {"q", "k"},
         "the per-token attention rows stacked for viewing (0 after the token): a decoder never holds this "
         "matrix, only one row [B, h, 1, t + 1] per step"},
        Tensor{std::move(attn), {"B", "h", "N", "N'"}}, nn_layout, false);
    const Step& ctx = rec.add(
        {"context", Op::kv_decode, "x_t = attn_t @ v_cache  # one row per arriving token",
         "b h 1 m, b h m c -> b h 1 c  (t = 0 .. N - 1, stacked)", {"attn", "v"},
         "new contiguous tensor: row t is token t's output, computed when it arrived from the cache [B, h, t + 1, c]; "
         "it never changes afterwards"},
        Tensor{std::move(context), {"B", "h", "N", "c"}}, TorchLayout::contiguous({B, h, N, c}), false);
    record_output_steps(rec, cfg, w, ctx);

    auto beyond = std::make_shared<BeyondRecord>();
    beyond->path = AttentionPath::kv_cache;
    beyond->kv = kv;
    trace.beyond = beyond;
    const auto* valid = cfg.valid_tokens.empty() ? nullptr : &cfg.valid_tokens;
    rec.finish(expected_attention_shapes(cfg, names), {check_row_sums(attn_step, false, 0.0f, 1e-5, valid)});
    return trace;
}

}  // namespace attnscope
