// The attention configuration (the arguments of the reference's ViTAttention plus the input size).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "message.hpp"

namespace attnscope {

// How the attention itself is computed (core/paths/beyond.hpp): the textbook path records the N x N
// matrices; flash never materializes them (tiles, online softmax); kv_cache decodes token by
// token (causal); windowed attends within Swin windows of the token grid.
enum class AttentionPath { standard, flash, kv_cache, windowed };
const char* path_name(AttentionPath path);  // "standard", "flash", "kv-cache", "windowed"

// Which class of the reference article the steps follow. vit: ViTAttention (its section 6, timm's
// names). mha: the article's first class, MultiHeadAttention (sections 1-4): qkv_proj always with a
// bias, q, k, v = qkv[0], qkv[1], qkv[2], (self.head_dim ** -0.5), one self.dropout on the weights,
// the merge in two lines, out_proj, and no output dropout. Both compute the same numbers.
// hf: Hugging Face's ViTSelfAttention and ViTSelfOutput, the lines of its ViT models' blocks (separate
// query, key, value layers, / math.sqrt(head size), permute(0, 2, 1, 3) back); same numbers again.
enum class Reference { vit, mha, hf };

struct AttentionConfig {
    std::size_t batch = 2;    // B
    std::size_t tokens = 16;  // N
    std::size_t dim = 768;    // C
    std::size_t heads = 8;    // h; head_dim c = C / h
    bool qkv_bias = false;
    std::uint64_t seed = 0;
    bool training = false;  // dropout is the identity unless training
    float attn_drop = 0.0f;
    float proj_drop = 0.0f;
    Reference reference = Reference::vit;
    bool scaled = true;  // false: the `scaled` step multiplies by 1 (--no-scale, the softmax-saturation demo)
    // ---- beyond the textbook (masks, FlashAttention, KV cache, windows; see core/paths/beyond.hpp)
    bool causal = false;                    // query i sees keys 0..i
    std::vector<std::size_t> valid_tokens;  // per batch item, keys >= valid are padding; empty = all N
    AttentionPath path = AttentionPath::standard;
    std::size_t tile_rows = 16, tile_cols = 16;  // flash: Br x Bc
    std::size_t window = 0;                      // windowed: window size M (tokens form an H x H grid)
    bool shift = false;                          // windowed: Swin's shifted windows (roll by -M/2)
    bool patch_merge = false;  // windowed: Swin's PatchMerging after the block, then a second stage on the merged grid

    bool masked() const { return causal || !valid_tokens.empty(); }
    std::size_t head_dim() const { return heads ? dim / heads : 0; }
};

// Half the machine's physical memory.
std::uint64_t default_memory_budget();

// A configuration validate() refuses: its first problem.
struct ConfigError : CoreError {
    using CoreError::CoreError;
};

// Readable problems with the config's sizes, dropout and reference, whatever its path; names the
// option at fault, e.g. "--dim 100 is not divisible by --heads 8 (head_dim c = C / h must be a whole
// number)". core/run's validate adds the path's problems and the memory budget.
std::vector<Message> validate_layer(const AttentionConfig& config);

// The line for a config whose trace needs `need` bytes, more than the budget: what takes them and
// which options would fit.
Message over_budget_problem(const AttentionConfig& config, std::uint64_t need, std::uint64_t memory_budget_bytes);

std::string format_bytes(std::uint64_t bytes);  // "1.5 GiB"

}  // namespace attnscope
