// The step narratives. One row per step: its id, its title and its text, in English; the Chinese is
// in po/zh_CN.po like every text of the app. Written for this project (not taken from the reference
// article); the Chinese uses the usual terms: 多头注意力, 缩放点积, 转置, 视图, 连续, 残差.
#include "logic/narrative.hpp"

#include <cstddef>

#include "step_table.hpp"
#include "vit.hpp"

namespace attnscope::ui {

namespace {

template <typename Id>
struct Row {
    Id step;
    const char* title;
    const char* text;
};
using AttentionRow = Row<StepId>;
using VitRow = Row<VitStep>;

// clang-format off
// ViTAttention.forward's steps, one row per StepId in its order.
constexpr AttentionRow kAttentionRows[] = {
    {StepId::input, N_("The input tokens"),
     N_("x holds B samples, each a sequence of N tokens, and every token is a vector of C numbers (its embedding). "
     "Everything that follows lets these N tokens exchange information.")},
    {StepId::qkv, N_("Queries, keys and values in one matrix product"),
     N_("A single linear layer computes q, k and v together: each token's C numbers are multiplied by a [3C, C] weight "
     "matrix, giving 3C numbers per token. The last axis now holds q, k and v of every head, packed side by side.")},
    {StepId::qkv_split, N_("Split the last axis: 3 x heads x head size"),
     N_("reshape cuts the long axis of 3C numbers into three axes: 3 (q, k or v), h heads and c = C / h numbers per head. "
     "Not a single number moves in memory; only the way we index them changes, so this is a view.")},
    {StepId::qkv_heads, N_("Move q/k/v and the heads to the front"),
     N_("permute(2, 0, 3, 1, 4) brings the q/k/v axis to the front and puts the head axis before the token axis: "
     "[3, B, h, N, c]. Every head now owns an [N, c] matrix of its own. Only the strides are reordered, so the tensor "
     "is no longer contiguous.")},
    {StepId::q, N_("The queries"),
     N_("unbind(0) takes slice 0 of the leading axis: the queries, one [N, c] matrix per sample and head. "
     "A query is a token asking: which other tokens matter to me?")},
    {StepId::k, N_("The keys"),
     N_("Slice 1: the keys. A key describes what a token has to offer, and every query is compared with every key. "
     "Its token axis is labelled N' because it counts the tokens being looked at.")},
    {StepId::v, N_("The values"),
     N_("Slice 2: the values, the content that is actually passed along. The attention weights will average these rows.")},
    {StepId::k_t, N_("Transpose the keys"),
     N_("transpose(-2, -1) swaps the last two axes of k, so each [N', c] matrix becomes [c, N']. "
     "Then q @ k_t is an ordinary matrix product, [N, c] times [c, N']. Still a view: two strides trade places.")},
    {StepId::scores, N_("Every query meets every key"),
     N_("q @ k^T takes the dot product of every query with every key, separately for each sample and head. "
     "Entry (i, j) says how well token i's question matches token j's key. Each head gets an N x N' score matrix.")},
    {StepId::scaled, N_("Scale by 1 / sqrt(c)"),
     N_("The scores are multiplied by scale = c^-0.5. A dot product of c numbers grows roughly like sqrt(c); dividing by "
     "sqrt(c) keeps the scores at a moderate size so that the softmax does not saturate. This is the 'scaled' in "
     "scaled dot-product attention.")},
    {StepId::masked, N_("Mask: hide the keys a query may not see"),
     N_("masked_fill writes -inf where a query must not look: at later tokens under a causal mask, at padding tokens "
     "under a padding mask. The softmax turns -inf into a weight of exactly 0, so those keys get no attention and "
     "pass no gradient back. The shape stays the same.")},
    {StepId::attn, N_("Softmax: scores become attention weights"),
     N_("softmax over the last axis turns every row into weights that are positive and add up to 1: for each query token, "
     "the share of attention it gives to each key token. The shape stays the same.")},
    {StepId::attn_drop, N_("Attention dropout"),
     N_("In training, dropout zeroes some weights at random and multiplies the rest by 1 / (1 - p), so a row no longer "
     "sums to exactly 1. In eval mode, or with p = 0, the weights pass through unchanged.")},
    {StepId::context, N_("Weighted average of the values"),
     N_("attn @ v: the output of each query is the average of the value rows, weighted by its attention. "
     "[N, N'] times [N', c] gives [N, c] per head: every token now carries what it gathered from the tokens it "
     "attended to.")},
    {StepId::context_t, N_("Tokens before heads again"),
     N_("transpose(1, 2) moves the token axis back in front of the head axis: [B, N, h, c]. The h heads of one token "
     "now sit next to each other, ready to be joined. A view, and not contiguous.")},
    {StepId::merged, N_("Join the heads"),
     N_("reshape(B, N, C) concatenates the h heads of each token into one vector of C = h x c numbers: the outputs of "
     "multi-head attention are merged. The input is not contiguous, so PyTorch has to copy here.")},
    {StepId::out, N_("Output projection"),
     N_("A C -> C linear layer mixes the information coming from the different heads. The shape is back to the input's "
     "[B, N, C], so the result can be added to the residual stream.")},
    {StepId::out_drop, N_("Output dropout"),
     N_("proj_drop, active only in training. What comes out here is the return value of ViTAttention.forward.")},

};

// The ViT around it, one row per VitStep in its order. A hybrid's CNN stem rows serve every stage
// (stem<i>.conv, stem<i>.bn, stem<i>.relu).
constexpr VitRow kVitRows[] = {
    {VitStep::pixels, N_("The picture"),
     N_("The normalized image, [B, 3, H, W]: three colour channels of H x W pixels.")},
    {VitStep::stem_conv, N_("Stem: a convolution with stride 2"),
     N_("A small k x k convolution slides over the picture (or the last stage's feature map) in steps of 2: every "
     "filter reads a window of all input channels, so the grid halves and the channels grow. Its positions, not "
     "p x p patches, will become the tokens.")},
    {VitStep::stem_bn, N_("Stem: BatchNorm in eval mode"),
     N_("BatchNorm2d in eval mode uses the running mean and variance saved during training, not the batch's own: one "
     "fixed scale and shift per channel.")},
    {VitStep::stem_relu, N_("Stem: ReLU"),
     N_("ReLU keeps the positive values and sets the negative ones to 0, so the stem is a non-linear feature extractor, "
     "not a single linear map like the patch embedding.")},
    {VitStep::patches, N_("Cut into patches"),
     N_("The picture is cut into a grid of P square patches of p x p pixels; each patch will become one token. "
     "(In a hybrid ViT the CNN stem's feature map is read instead: one token per position.)")},
    {VitStep::patch_embed, N_("Patch embedding"),
     N_("A convolution with stride p maps every patch to a D-dimensional vector; flatten and transpose give [B, P, D].")},
    {VitStep::tokens, N_("Prepend the class token"),
     N_("A learned class token is put in front of the patch tokens: N = 1 + P tokens. Its final state decides the class.")},
    {VitStep::embed, N_("Add position embeddings"),
     N_("A learned vector per position is added, so the model knows where each patch came from.")},
    {VitStep::norm1, N_("LayerNorm before attention"),
     N_("Each token is normalized to mean 0 and variance 1 over its C numbers, then scaled and shifted.")},
    {VitStep::attn_out, N_("Multi-head self-attention"),
     N_("The whole attention layer of the steps above: every token gathers information from all tokens.")},
    {VitStep::ls1, N_("LayerScale of the attention branch"),
     N_("self.ls1(x) = x * gamma: every channel of the attention's output is multiplied by a learned factor (timm "
     "init_values, DeiT III, CaiT), which starts small so a deep model begins close to the identity.")},
    {VitStep::drop_path1, N_("DropPath of the attention branch"),
     N_("Stochastic depth: in training each sample keeps this whole branch with probability 1 - p (then scaled by "
     "1/(1-p)) or loses it; the residual still adds it to x, so a dropped sample just passes x on. In eval it is the "
     "identity.")},
    {VitStep::residual1, N_("First residual connection"),
     N_("The attention output is added to the block's input, so the block only has to learn a correction.")},
    {VitStep::norm2, N_("LayerNorm before the MLP"),
     N_("The same normalization again, this time feeding the MLP.")},
    {VitStep::fc1, N_("MLP: widen"),
     N_("A linear layer widens each token from C to M numbers (usually M = 4C). Tokens are processed independently.")},
    {VitStep::gelu, N_("GELU"),
     N_("The non-linearity: small and negative values are damped, large positive values pass.")},
    {VitStep::fc2, N_("MLP: back to C"),
     N_("A second linear layer brings each token back from M to C numbers.")},
    {VitStep::ls2, N_("LayerScale of the MLP branch"),
     N_("self.ls2(x) = x * gamma: the MLP's output scaled per channel by its own learned gamma, like ls1.")},
    {VitStep::drop_path2, N_("DropPath of the MLP branch"),
     N_("The same per-sample coin as drop_path1, drawn anew for the MLP branch: a dropped sample's residual2 equals "
     "residual1, and no gradient reaches the MLP from that sample.")},
    {VitStep::residual2, N_("Second residual connection"),
     N_("The MLP output is added to the stream; this is the block's output and the next block's input.")},
    {VitStep::norm, N_("Final LayerNorm"),
     N_("After the last block every token is normalized once more.")},
    {VitStep::cls_out, N_("Take the class token"),
     N_("x[:, 0] keeps only the class token: one C-dimensional vector per image.")},
    {VitStep::logits, N_("Classification head"),
     N_("A linear layer maps the class token to K scores, one per class.")},
    {VitStep::probs, N_("Class probabilities"),
     N_("softmax over the K classes turns the scores into probabilities that add up to 1.")},
};

// The steps whose line reads differently in the article's MultiHeadAttention; the others share
// ViTAttention's words.
const AttentionRow kMhaRows[] = {
    {StepId::qkv, N_("qkv_proj: queries, keys and values in one matrix product"),
     N_("self.qkv_proj is one nn.Linear(C, 3C) with a bias: each token's C numbers become 3C numbers, q, k and v of "
     "every head side by side. The class keeps nn.Linear's own initialisation, and the bias is always there.")},
    {StepId::q, N_("The queries: qkv[0]"),
     N_("Indexing the first axis, qkv[0] gives the queries, one [N, c] matrix per sample and head. It is the very view "
     "unbind(0) returns in ViTAttention: no copy, the same strides.")},
    {StepId::k, N_("The keys: qkv[1]"),
     N_("qkv[1]: the keys, what each token has to offer; every query is compared with every key. Its token axis is "
     "labelled N' because it counts the tokens being looked at.")},
    {StepId::v, N_("The values: qkv[2]"),
     N_("qkv[2]: the values, what each token passes on once attention has decided how much of it to take.")},
    {StepId::attn_drop, N_("The class's one dropout: self.dropout"),
     N_("MultiHeadAttention has a single dropout (p = 0.1 by default), on the attention weights. In eval mode it is the "
     "identity; in training it zeroes weights and rescales the rest by 1/(1-p), so a row sums to 1 only on average. "
     "There is no dropout after out_proj.")},
    {StepId::out, N_("Output projection: out_proj"),
     N_("self.out_proj, an nn.Linear(C, C) with a bias, mixes the heads' outputs of every token. The class returns it "
     "as it is: no output dropout.")},
};

// The steps whose line reads differently in Hugging Face's ViTSelfAttention and ViTSelfOutput.
const AttentionRow kHfRows[] = {
    {StepId::qkv, N_("query, key, value: three linear layers"),
     N_("Hugging Face keeps self.query, self.key and self.value as three nn.Linear(C, C) with a bias. Shown side by side "
     "they are one [B, N, 3C] tensor: the same numbers as ViTAttention's single qkv layer with the three weights stacked.")},
    {StepId::qkv_heads, N_("transpose_for_scores: heads before tokens"),
     N_("transpose_for_scores calls x.permute(0, 2, 1, 3) on each of query, key and value: [B, N, h, c] becomes "
     "[B, h, N, c]. With the three side by side that is permute(2, 0, 3, 1, 4), the picture drawn here. Only the "
     "strides change, so the tensor is no longer contiguous.")},
    {StepId::q, N_("The queries: query_layer"),
     N_("query_layer, one [N, c] matrix per sample and head: the very view unbind(0) gives in ViTAttention, no copy. "
     "A query is a token asking: which other tokens matter to me?")},
    {StepId::scaled, N_("Divide by sqrt(c)"),
     N_("attention_scores / math.sqrt(self.attention_head_size): the same scaling as ViTAttention's * self.scale, "
     "written as a division. It keeps the scores at a moderate size so that the softmax does not saturate.")},
    {StepId::merged, N_("Join the heads: contiguous, then view"),
     N_("permute(0, 2, 1, 3).contiguous() copies the heads of each token side by side, and .view(new_context_layer_shape) "
     "then joins them into C = h x c numbers. ViTAttention's reshape does the same copy in one call.")},
    {StepId::out, N_("Output projection: self.output.dense"),
     N_("ViTSelfOutput's dense layer, an nn.Linear(C, C), mixes the heads' outputs of every token; its dropout follows.")},
};
// clang-format on

// Every row at the place of its id: a table with a row missing or out of order does not build.
template <typename Id, std::size_t Count>
constexpr bool in_place(const Row<Id> (&rows)[Count]) {
    if (Count != static_cast<std::size_t>(Id::count)) return false;
    for (std::size_t i = 0; i < Count; ++i)
        if (rows[i].step != static_cast<Id>(i)) return false;
    return true;
}
static_assert(in_place(kAttentionRows), "kAttentionRows: one row per StepId, in its order");
static_assert(in_place(kVitRows), "kVitRows: one row per VitStep, in its order");

template <typename Id>
StepNarrative narrative_of(const Row<Id>& r, Language language) {
    return StepNarrative{tr_in(language, r.title), tr_in(language, r.text)};
}

// A reference's own words for a step, or nullptr where it shares ViTAttention's.
template <std::size_t Count>
const AttentionRow* override_of(const AttentionRow (&rows)[Count], StepId step) {
    for (const AttentionRow& r : rows)
        if (r.step == step) return &r;
    return nullptr;
}

}  // namespace

StepNarrative step_narrative(const std::string& step_name, Language language, Reference reference) {
    if (const StepId step = step_id(step_name); step != kNoStep) {
        const AttentionRow* own = reference == Reference::mha  ? override_of(kMhaRows, step)
                                  : reference == Reference::hf ? override_of(kHfRows, step)
                                                               : nullptr;
        return narrative_of(own ? *own : kAttentionRows[static_cast<std::size_t>(step)], language);
    }
    if (const VitStep step = vit_step_of(step_name); step != VitStep::count)
        return narrative_of(kVitRows[static_cast<std::size_t>(step)], language);
    return {};
}

const std::vector<std::string>& narrated_steps() {
    static const std::vector<std::string> names = [] {
        std::vector<std::string> v;
        for (const AttentionRow& r : kAttentionRows) v.emplace_back(step_name(r.step));
        for (const VitRow& r : kVitRows) v.emplace_back(vit_step_info(r.step).name);
        return v;
    }();
    return names;
}

std::string narrative_lead(const std::string& text, std::size_t sentences) {
    std::size_t found = 0;
    for (std::size_t i = 0; i < text.size() && sentences > 0; ++i) {
        std::size_t end = std::string::npos;  // one past the sentence's last byte
        const char ch = text[i];
        if ((ch == '.' || ch == '!' || ch == '?') && i + 1 < text.size() && text[i + 1] == ' ') end = i + 1;
        // 。！？ in UTF-8: E3 80 82, EF BC 81, EF BC 9F
        if (text.compare(i, 3, "\xE3\x80\x82") == 0 || text.compare(i, 3, "\xEF\xBC\x81") == 0 ||
            text.compare(i, 3, "\xEF\xBC\x9F") == 0)
            end = i + 3;
        if (end != std::string::npos && ++found == sentences) return text.substr(0, end);
    }
    return text;
}

}  // namespace attnscope::ui
