#include "mask.hpp"

namespace attnscope {

namespace {

std::string join(const std::vector<std::size_t>& values) {
    std::string text;
    for (std::size_t v : values) text += (text.empty() ? "" : ",") + std::to_string(v);
    return text;
}

}  // namespace

Array attention_keep_mask(const AttentionConfig& cfg) {
    const std::size_t B = cfg.batch, N = cfg.tokens;
    Array keep = make_array({B, N, N});  // [B, N, N']
    for (std::size_t b = 0; b < B; ++b) {
        const std::size_t valid = cfg.valid_tokens.empty() ? N : cfg.valid_tokens[b];
        for (std::size_t i = 0; i < N; ++i)
            for (std::size_t j = 0; j < N; ++j)
                keep(b, i, j) = (j < valid && (!cfg.causal || j <= i)) ? 1.0f : 0.0f;
    }
    return keep;
}

std::string mask_code(const AttentionConfig& cfg) {
    std::string keep;
    if (cfg.causal) keep = "causal";
    if (!cfg.valid_tokens.empty()) keep += std::string(keep.empty() ? "" : " & ") + "key_valid";
    return "attn = attn.masked_fill(~(" + keep + ")[:, None], float(\"-inf\"))";
}

std::string mask_note(const AttentionConfig& cfg) {
    std::string text = "new contiguous tensor: -inf where query i may not see key j (";
    if (cfg.causal) text += "causal: j > i";
    if (!cfg.valid_tokens.empty())
        text += std::string(cfg.causal ? "; " : "") + "padding: j >= valid_tokens[b] = " + join(cfg.valid_tokens);
    return text + "); softmax turns them into exact zeros. Padding queries still see the valid keys "
                  "(PyTorch's key_padding_mask), so no row is all -inf";
}

std::string mask_summary(const AttentionConfig& cfg) {
    std::string text = cfg.causal ? "causal" : "";
    if (!cfg.valid_tokens.empty()) text += (text.empty() ? "" : ", ") + std::string("valid ") + join(cfg.valid_tokens);
    return text;
}

}  // namespace attnscope
