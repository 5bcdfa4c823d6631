// The step narratives. One row per step: its id, English title and text, Chinese title and text.
// Written for this project (not taken from the reference article); the Chinese uses the usual
// terms: 多头注意力, 缩放点积, 转置, 视图, 连续, 残差.
#include "logic/narrative.hpp"

#include <cstddef>

#include "step_table.hpp"
#include "vit.hpp"

namespace attnscope::ui {

namespace {

template <typename Id>
struct Row {
    Id step;
    const char* en_title;
    const char* en_text;
    const char* zh_title;
    const char* zh_text;
};
using AttentionRow = Row<StepId>;
using VitRow = Row<VitStep>;

// clang-format off
// ViTAttention.forward's steps, one row per StepId in its order.
constexpr AttentionRow kAttentionRows[] = {
    {StepId::input, "The input tokens",
     "x holds B samples, each a sequence of N tokens, and every token is a vector of C numbers (its embedding). "
     "Everything that follows lets these N tokens exchange information.",
     "输入的 token",
     "x 里有 B 个样本，每个样本是 N 个 token 组成的序列，每个 token 是一个 C 维的嵌入向量。"
     "后面的每一步，都是为了让这 N 个 token 彼此交换信息。"},
    {StepId::qkv, "Queries, keys and values in one matrix product",
     "A single linear layer computes q, k and v together: each token's C numbers are multiplied by a [3C, C] weight "
     "matrix, giving 3C numbers per token. The last axis now holds q, k and v of every head, packed side by side.",
     "一次矩阵乘法得到 q、k、v",
     "一个线性层同时算出查询 q、键 k 和值 v：每个 token 的 C 维向量乘以 [3C, C] 的权重矩阵，得到 3C 个数。"
     "最后一维里并排存放着所有头的 q、k、v。"},
    {StepId::qkv_split, "Split the last axis: 3 x heads x head size",
     "reshape cuts the long axis of 3C numbers into three axes: 3 (q, k or v), h heads and c = C / h numbers per head. "
     "Not a single number moves in memory; only the way we index them changes, so this is a view.",
     "拆分最后一维：3 × 头数 × 每头维度",
     "reshape 把长度为 3C 的最后一维拆成三个轴：3（q、k 或 v）、h 个头、每个头 c = C / h 维。"
     "内存中的数据一个也没有移动，只是换了索引方式，所以这是一个视图。"},
    {StepId::qkv_heads, "Move q/k/v and the heads to the front",
     "permute(2, 0, 3, 1, 4) brings the q/k/v axis to the front and puts the head axis before the token axis: "
     "[3, B, h, N, c]. Every head now owns an [N, c] matrix of its own. Only the strides are reordered, so the tensor "
     "is no longer contiguous.",
     "把 q/k/v 轴和头轴移到前面",
     "permute(2, 0, 3, 1, 4) 把 q/k/v 轴放到最前面，并把头轴放在 token 轴之前，得到 [3, B, h, N, c]。"
     "这样每个头都有一个属于自己的 [N, c] 矩阵。这里只重排了步长，张量因此不再连续。"},
    {StepId::q, "The queries",
     "unbind(0) takes slice 0 of the leading axis: the queries, one [N, c] matrix per sample and head. "
     "A query is a token asking: which other tokens matter to me?",
     "查询 q",
     "unbind(0) 取出第一维的第 0 片：查询 q，每个样本、每个头各一个 [N, c] 矩阵。"
     "查询可以理解为每个 token 在问：“哪些 token 和我有关？”"},
    {StepId::k, "The keys",
     "Slice 1: the keys. A key describes what a token has to offer, and every query is compared with every key. "
     "Its token axis is labelled N' because it counts the tokens being looked at.",
     "键 k",
     "第 1 片：键 k。键描述每个 token 能提供什么，每个查询都要和每个键做比较。"
     "它的 token 轴记作 N'，表示被关注的那些 token。"},
    {StepId::v, "The values",
     "Slice 2: the values, the content that is actually passed along. The attention weights will average these rows.",
     "值 v",
     "第 2 片：值 v，也就是真正被传递的内容。之后的注意力权重会对这些行做加权平均。"},
    {StepId::k_t, "Transpose the keys",
     "transpose(-2, -1) swaps the last two axes of k, so each [N', c] matrix becomes [c, N']. "
     "Then q @ k_t is an ordinary matrix product, [N, c] times [c, N']. Still a view: two strides trade places.",
     "转置键矩阵",
     "transpose(-2, -1) 交换 k 的最后两维（转置），每个 [N', c] 矩阵变成 [c, N']。"
     "这样 q @ k_t 就是普通的矩阵乘法：[N, c] 乘以 [c, N']。这仍然是视图，只是两个步长互换了位置。"},
    {StepId::scores, "Every query meets every key",
     "q @ k^T takes the dot product of every query with every key, separately for each sample and head. "
     "Entry (i, j) says how well token i's question matches token j's key. Each head gets an N x N' score matrix.",
     "每个查询与每个键相遇",
     "q @ k^T 计算每个查询与每个键的点积，每个样本、每个头分别计算。"
     "第 (i, j) 项表示 token i 的查询和 token j 的键有多匹配。每个头得到一个 N × N' 的分数矩阵。"},
    {StepId::scaled, "Scale by 1 / sqrt(c)",
     "The scores are multiplied by scale = c^-0.5. A dot product of c numbers grows roughly like sqrt(c); dividing by "
     "sqrt(c) keeps the scores at a moderate size so that the softmax does not saturate. This is the 'scaled' in "
     "scaled dot-product attention.",
     "乘以 1 / √c 进行缩放",
     "分数乘以 scale = c^-0.5。c 个数的点积大致按 √c 增长，除以 √c 能让分数保持在适中的范围，"
     "softmax 就不会过早饱和。这就是“缩放点积注意力”中“缩放”的含义。"},
    {StepId::masked, "Mask: hide the keys a query may not see",
     "masked_fill writes -inf where a query must not look: at later tokens under a causal mask, at padding tokens "
     "under a padding mask. The softmax turns -inf into a weight of exactly 0, so those keys get no attention and "
     "pass no gradient back. The shape stays the same.",
     "掩码：遮住查询不该看到的键",
     "masked_fill 在查询不能关注的位置写入 -inf：因果掩码下是后面的 token，填充掩码下是填充 token。"
     "softmax 把 -inf 变成恰好为 0 的权重，这些键既得不到注意力，也不会传回梯度。形状保持不变。"},
    {StepId::attn, "Softmax: scores become attention weights",
     "softmax over the last axis turns every row into weights that are positive and add up to 1: for each query token, "
     "the share of attention it gives to each key token. The shape stays the same.",
     "softmax：分数变成注意力权重",
     "在最后一维上做 softmax，每一行都变成非负且和为 1 的权重：表示每个查询 token 把多少注意力分给每个键 token。"
     "形状保持不变。"},
    {StepId::attn_drop, "Attention dropout",
     "In training, dropout zeroes some weights at random and multiplies the rest by 1 / (1 - p), so a row no longer "
     "sums to exactly 1. In eval mode, or with p = 0, the weights pass through unchanged.",
     "注意力 dropout",
     "训练时，dropout 随机把一部分权重置零，并把其余权重乘以 1 / (1 - p)，所以每一行的和不再恰好是 1。"
     "在推理模式下（或 p = 0 时），权重原样通过。"},
    {StepId::context, "Weighted average of the values",
     "attn @ v: the output of each query is the average of the value rows, weighted by its attention. "
     "[N, N'] times [N', c] gives [N, c] per head: every token now carries what it gathered from the tokens it "
     "attended to.",
     "对值做加权平均",
     "attn @ v：每个查询的输出，是按它的注意力权重对值向量做的加权平均。"
     "[N, N'] 乘以 [N', c] 得到每个头的 [N, c]：每个 token 都带上了从它所关注的 token 那里收集到的信息。"},
    {StepId::context_t, "Tokens before heads again",
     "transpose(1, 2) moves the token axis back in front of the head axis: [B, N, h, c]. The h heads of one token "
     "now sit next to each other, ready to be joined. A view, and not contiguous.",
     "token 轴重新回到头轴之前",
     "transpose(1, 2) 把 token 轴换回到头轴前面：[B, N, h, c]。同一个 token 的 h 个头现在挨在一起，准备拼接。"
     "这是一个视图，而且不连续。"},
    {StepId::merged, "Join the heads",
     "reshape(B, N, C) concatenates the h heads of each token into one vector of C = h x c numbers: the outputs of "
     "multi-head attention are merged. The input is not contiguous, so PyTorch has to copy here.",
     "拼接所有头",
     "reshape(B, N, C) 把每个 token 的 h 个头拼接成一个 C = h × c 维的向量，多头注意力的输出在这里合并。"
     "由于输入不连续，PyTorch 在这一步必须复制数据。"},
    {StepId::out, "Output projection",
     "A C -> C linear layer mixes the information coming from the different heads. The shape is back to the input's "
     "[B, N, C], so the result can be added to the residual stream.",
     "输出投影",
     "一个 C → C 的线性层把来自不同头的信息混合起来。形状回到与输入相同的 [B, N, C]，因此结果可以加回残差连接。"},
    {StepId::out_drop, "Output dropout",
     "proj_drop, active only in training. What comes out here is the return value of ViTAttention.forward.",
     "输出 dropout",
     "proj_drop，只在训练时起作用。这里得到的就是 ViTAttention.forward 的返回值。"},

};

// The ViT around it, one row per VitStep in its order. A hybrid's CNN stem rows serve every stage
// (stem<i>.conv, stem<i>.bn, stem<i>.relu).
constexpr VitRow kVitRows[] = {
    {VitStep::pixels, "The picture",
     "The normalized image, [B, 3, H, W]: three colour channels of H x W pixels.",
     "输入图片",
     "归一化后的图像 [B, 3, H, W]：三个颜色通道，每个通道 H × W 个像素。"},
    {VitStep::stem_conv, "Stem: a convolution with stride 2",
     "A small k x k convolution slides over the picture (or the last stage's feature map) in steps of 2: every "
     "filter reads a window of all input channels, so the grid halves and the channels grow. Its positions, not "
     "p x p patches, will become the tokens.",
     "主干：步长为 2 的卷积",
     "一个小的 k × k 卷积以步长 2 在图片（或上一阶段的特征图）上滑动：每个滤波器读取所有输入通道的一个窗口，"
     "于是网格减半、通道变多。之后变成 token 的是它的各个位置，而不是 p × p 的图块。"},
    {VitStep::stem_bn, "Stem: BatchNorm in eval mode",
     "BatchNorm2d in eval mode uses the running mean and variance saved during training, not the batch's own: one "
     "fixed scale and shift per channel.",
     "主干：评估模式下的 BatchNorm",
     "评估模式下的 BatchNorm2d 使用训练时保存的滑动均值和方差，而不是当前批次的统计量：每个通道一个固定的缩放和平移。"},
    {VitStep::stem_relu, "Stem: ReLU",
     "ReLU keeps the positive values and sets the negative ones to 0, so the stem is a non-linear feature extractor, "
     "not a single linear map like the patch embedding.",
     "主干：ReLU",
     "ReLU 保留正值、把负值置为 0，所以主干是一个非线性的特征提取器，而不像图块嵌入那样只是一个线性映射。"},
    {VitStep::patches, "Cut into patches",
     "The picture is cut into a grid of P square patches of p x p pixels; each patch will become one token. "
     "(In a hybrid ViT the CNN stem's feature map is read instead: one token per position.)",
     "切成图块",
     "图片被切成 P 个 p × p 像素的正方形图块（patch），每个图块会变成一个 token。"
     "（在混合 ViT 中读取的是 CNN 主干的特征图：每个位置一个 token。）"},
    {VitStep::patch_embed, "Patch embedding",
     "A convolution with stride p maps every patch to a D-dimensional vector; flatten and transpose give [B, P, D].",
     "图块嵌入",
     "步长为 p 的卷积把每个图块映射成 D 维向量，再经过 flatten 和转置得到 [B, P, D]。"},
    {VitStep::tokens, "Prepend the class token",
     "A learned class token is put in front of the patch tokens: N = 1 + P tokens. Its final state decides the class.",
     "在前面加上类别 token",
     "在图块 token 前面加上一个可学习的类别 token，共 N = 1 + P 个 token。它最后的状态决定分类结果。"},
    {VitStep::embed, "Add position embeddings",
     "A learned vector per position is added, so the model knows where each patch came from.",
     "加上位置编码",
     "为每个位置加上一个可学习的向量，模型由此知道每个图块来自图片的哪个位置。"},
    {VitStep::norm1, "LayerNorm before attention",
     "Each token is normalized to mean 0 and variance 1 over its C numbers, then scaled and shifted.",
     "注意力之前的 LayerNorm",
     "每个 token 在它的 C 个数上归一化为均值 0、方差 1，再进行缩放和平移。"},
    {VitStep::attn_out, "Multi-head self-attention",
     "The whole attention layer of the steps above: every token gathers information from all tokens.",
     "多头自注意力",
     "就是前面那些步骤组成的整个注意力层：每个 token 从所有 token 那里收集信息。"},
    {VitStep::ls1, "LayerScale of the attention branch",
     "self.ls1(x) = x * gamma: every channel of the attention's output is multiplied by a learned factor (timm "
     "init_values, DeiT III, CaiT), which starts small so a deep model begins close to the identity.",
     "注意力分支的 LayerScale",
     "self.ls1(x) = x * gamma：注意力输出的每个通道乘以一个可学习的系数（timm 的 init_values，DeiT III、CaiT），"
     "初始值很小，让很深的模型一开始接近恒等映射。"},
    {VitStep::drop_path1, "DropPath of the attention branch",
     "Stochastic depth: in training each sample keeps this whole branch with probability 1 - p (then scaled by "
     "1/(1-p)) or loses it; the residual still adds it to x, so a dropped sample just passes x on. In eval it is the "
     "identity.",
     "注意力分支的 DropPath",
     "随机深度：训练时每个样本以 1 - p 的概率保留整个分支（再乘以 1/(1-p)），否则整个分支被丢弃；残差仍把它加到 x 上，"
     "所以被丢弃的样本只是把 x 原样传下去。评估时它是恒等映射。"},
    {VitStep::residual1, "First residual connection",
     "The attention output is added to the block's input, so the block only has to learn a correction.",
     "第一个残差连接",
     "把注意力的输出加回到本块的输入上，这样每个块只需要学习一个修正量。"},
    {VitStep::norm2, "LayerNorm before the MLP",
     "The same normalization again, this time feeding the MLP.",
     "MLP 之前的 LayerNorm",
     "再做一次同样的归一化，这次的结果送入 MLP。"},
    {VitStep::fc1, "MLP: widen",
     "A linear layer widens each token from C to M numbers (usually M = 4C). Tokens are processed independently.",
     "MLP：升维",
     "一个线性层把每个 token 从 C 维扩展到 M 维（通常 M = 4C）。每个 token 各自独立处理。"},
    {VitStep::gelu, "GELU",
     "The non-linearity: small and negative values are damped, large positive values pass.",
     "GELU 激活",
     "非线性激活：较小和负的值被压低，较大的正值基本原样通过。"},
    {VitStep::fc2, "MLP: back to C",
     "A second linear layer brings each token back from M to C numbers.",
     "MLP：降回 C 维",
     "第二个线性层把每个 token 从 M 维变回 C 维。"},
    {VitStep::ls2, "LayerScale of the MLP branch",
     "self.ls2(x) = x * gamma: the MLP's output scaled per channel by its own learned gamma, like ls1.",
     "MLP 分支的 LayerScale",
     "self.ls2(x) = x * gamma：MLP 的输出按通道乘以它自己的可学习 gamma，和 ls1 一样。"},
    {VitStep::drop_path2, "DropPath of the MLP branch",
     "The same per-sample coin as drop_path1, drawn anew for the MLP branch: a dropped sample's residual2 equals "
     "residual1, and no gradient reaches the MLP from that sample.",
     "MLP 分支的 DropPath",
     "和 drop_path1 一样按样本抛硬币，为 MLP 分支重新抽取：被丢弃样本的 residual2 等于 residual1，"
     "这个样本也不会给 MLP 传回任何梯度。"},
    {VitStep::residual2, "Second residual connection",
     "The MLP output is added to the stream; this is the block's output and the next block's input.",
     "第二个残差连接",
     "把 MLP 的输出加回主干，得到本块的输出，也就是下一块的输入。"},
    {VitStep::norm, "Final LayerNorm",
     "After the last block every token is normalized once more.",
     "最后的 LayerNorm",
     "最后一个块之后，每个 token 再归一化一次。"},
    {VitStep::cls_out, "Take the class token",
     "x[:, 0] keeps only the class token: one C-dimensional vector per image.",
     "取出类别 token",
     "x[:, 0] 只保留类别 token：每张图片一个 C 维向量。"},
    {VitStep::logits, "Classification head",
     "A linear layer maps the class token to K scores, one per class.",
     "分类头",
     "一个线性层把类别 token 映射成 K 个分数，每个类别一个。"},
    {VitStep::probs, "Class probabilities",
     "softmax over the K classes turns the scores into probabilities that add up to 1.",
     "类别概率",
     "在 K 个类别上做 softmax，把分数变成和为 1 的概率。"},
};

// The steps whose line reads differently in the article's MultiHeadAttention; the others share
// ViTAttention's words.
const AttentionRow kMhaRows[] = {
    {StepId::qkv, "qkv_proj: queries, keys and values in one matrix product",
     "self.qkv_proj is one nn.Linear(C, 3C) with a bias: each token's C numbers become 3C numbers, q, k and v of "
     "every head side by side. The class keeps nn.Linear's own initialisation, and the bias is always there.",
     "qkv_proj：一次矩阵乘法得到 q、k、v",
     "self.qkv_proj 是一个带偏置的 nn.Linear(C, 3C)：每个 token 的 C 维向量变成 3C 个数，所有头的 q、k、v 并排存放。"
     "这个类保留 nn.Linear 自己的初始化，并且总是有偏置。"},
    {StepId::q, "The queries: qkv[0]",
     "Indexing the first axis, qkv[0] gives the queries, one [N, c] matrix per sample and head. It is the very view "
     "unbind(0) returns in ViTAttention: no copy, the same strides.",
     "查询 q：qkv[0]",
     "对第一维做索引，qkv[0] 得到查询 q，每个样本、每个头各一个 [N, c] 矩阵。"
     "它与 ViTAttention 中 unbind(0) 返回的视图完全相同：不复制，步长也一样。"},
    {StepId::k, "The keys: qkv[1]",
     "qkv[1]: the keys, what each token has to offer; every query is compared with every key. Its token axis is "
     "labelled N' because it counts the tokens being looked at.",
     "键 k：qkv[1]",
     "qkv[1]：键 k，描述每个 token 能提供什么，每个查询都要和每个键做比较。它的 token 轴记作 N'，表示被关注的那些 token。"},
    {StepId::v, "The values: qkv[2]",
     "qkv[2]: the values, what each token passes on once attention has decided how much of it to take.",
     "值 v：qkv[2]",
     "qkv[2]：值 v，注意力决定取多少之后，每个 token 传递出去的内容。"},
    {StepId::attn_drop, "The class's one dropout: self.dropout",
     "MultiHeadAttention has a single dropout (p = 0.1 by default), on the attention weights. In eval mode it is the "
     "identity; in training it zeroes weights and rescales the rest by 1/(1-p), so a row sums to 1 only on average. "
     "There is no dropout after out_proj.",
     "类中唯一的 dropout：self.dropout",
     "MultiHeadAttention 只有一个 dropout（默认 p = 0.1），作用在注意力权重上。评估模式下它什么也不做；"
     "训练模式下它把部分权重置零，其余乘以 1/(1-p)，所以每行之和只在平均意义上为 1。out_proj 之后没有 dropout。"},
    {StepId::out, "Output projection: out_proj",
     "self.out_proj, an nn.Linear(C, C) with a bias, mixes the heads' outputs of every token. The class returns it "
     "as it is: no output dropout.",
     "输出投影：out_proj",
     "self.out_proj 是一个带偏置的 nn.Linear(C, C)，把每个 token 各个头的输出混合起来。这个类直接返回它，没有输出 dropout。"},
};

// The steps whose line reads differently in Hugging Face's ViTSelfAttention and ViTSelfOutput.
const AttentionRow kHfRows[] = {
    {StepId::qkv, "query, key, value: three linear layers",
     "Hugging Face keeps self.query, self.key and self.value as three nn.Linear(C, C) with a bias. Shown side by side "
     "they are one [B, N, 3C] tensor: the same numbers as ViTAttention's single qkv layer with the three weights stacked.",
     "query、key、value：三个线性层",
     "Hugging Face 把 self.query、self.key、self.value 写成三个带偏置的 nn.Linear(C, C)。把它们并排放在一起，"
     "就是一个 [B, N, 3C] 张量：与 ViTAttention 中把三个权重叠在一起的单个 qkv 层数值相同。"},
    {StepId::qkv_heads, "transpose_for_scores: heads before tokens",
     "transpose_for_scores calls x.permute(0, 2, 1, 3) on each of query, key and value: [B, N, h, c] becomes "
     "[B, h, N, c]. With the three side by side that is permute(2, 0, 3, 1, 4), the picture drawn here. Only the "
     "strides change, so the tensor is no longer contiguous.",
     "transpose_for_scores：把头放到 token 前面",
     "transpose_for_scores 对 query、key、value 各做一次 x.permute(0, 2, 1, 3)：[B, N, h, c] 变成 [B, h, N, c]。"
     "三者并排时就是这里画出的 permute(2, 0, 3, 1, 4)。只改变步长，所以张量不再连续。"},
    {StepId::q, "The queries: query_layer",
     "query_layer, one [N, c] matrix per sample and head: the very view unbind(0) gives in ViTAttention, no copy. "
     "A query is a token asking: which other tokens matter to me?",
     "查询：query_layer",
     "query_layer：每个样本、每个头各一个 [N, c] 矩阵，与 ViTAttention 中 unbind(0) 给出的视图完全相同，不复制。"
     "查询可以理解为每个 token 在问：“哪些 token 和我有关？”"},
    {StepId::scaled, "Divide by sqrt(c)",
     "attention_scores / math.sqrt(self.attention_head_size): the same scaling as ViTAttention's * self.scale, "
     "written as a division. It keeps the scores at a moderate size so that the softmax does not saturate.",
     "除以 √c",
     "attention_scores / math.sqrt(self.attention_head_size)：与 ViTAttention 中的 * self.scale 是同一个缩放，"
     "只是写成了除法。它让分数保持在适中的范围，softmax 就不会过早饱和。"},
    {StepId::merged, "Join the heads: contiguous, then view",
     "permute(0, 2, 1, 3).contiguous() copies the heads of each token side by side, and .view(new_context_layer_shape) "
     "then joins them into C = h x c numbers. ViTAttention's reshape does the same copy in one call.",
     "拼接所有头：先 contiguous，再 view",
     "permute(0, 2, 1, 3).contiguous() 把每个 token 的各个头并排复制到一起，然后 .view(new_context_layer_shape) "
     "把它们合成 C = h × c 个数。ViTAttention 的 reshape 一次调用就完成了同样的复制。"},
    {StepId::out, "Output projection: self.output.dense",
     "ViTSelfOutput's dense layer, an nn.Linear(C, C), mixes the heads' outputs of every token; its dropout follows.",
     "输出投影：self.output.dense",
     "ViTSelfOutput 的 dense 层是一个 nn.Linear(C, C)，把每个 token 各个头的输出混合起来；后面接着它的 dropout。"},
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
    return language == Language::Chinese ? StepNarrative{r.zh_title, r.zh_text} : StepNarrative{r.en_title, r.en_text};
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
