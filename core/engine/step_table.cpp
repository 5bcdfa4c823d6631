#include "step_table.hpp"

#include <algorithm>
#include <cctype>
#include <limits>
#include <stdexcept>
#include <string>

namespace attnscope {

Op op_named(std::string_view name) {
    for (const OpInfo& op : kOps)
        if (name == op.name) return op.op;
    return Op::count;
}

const std::vector<std::string_view>& forward_lines(Reference reference) {
    static const std::vector<std::string_view> mha = {
        "B, N, C = x.shape",
        "qkv = self.qkv_proj(x)",
        "qkv = qkv.reshape(B, N, 3, self.num_heads, self.head_dim)",
        "qkv = qkv.permute(2, 0, 3, 1, 4)",
        "q, k, v = qkv[0], qkv[1], qkv[2]",
        "attn = (q @ k.transpose(-2, -1)) * (self.head_dim ** -0.5)",
        "attn = attn.softmax(dim=-1)",
        "attn = self.dropout(attn)",
        "out = attn @ v",
        "out = out.transpose(1, 2)",
        "out = out.reshape(B, N, C)",
        "out = self.out_proj(out)",
        "return out",
    };
    // Hugging Face's ViTSelfAttention.forward and ViTSelfOutput.forward (transformers' eager
    // attention), called one after the other by ViTAttention; transpose_for_scores(x) is
    // x.view(x.size()[:-1] + (self.num_attention_heads, self.attention_head_size)).permute(0, 2, 1, 3).
    static const std::vector<std::string_view> hf = {
        "mixed_query_layer = self.query(hidden_states)",
        "key_layer = self.transpose_for_scores(self.key(hidden_states))",
        "value_layer = self.transpose_for_scores(self.value(hidden_states))",
        "query_layer = self.transpose_for_scores(mixed_query_layer)",
        "attention_scores = torch.matmul(query_layer, key_layer.transpose(-1, -2))",
        "attention_scores = attention_scores / math.sqrt(self.attention_head_size)",
        "attention_probs = nn.functional.softmax(attention_scores, dim=-1)",
        "attention_probs = self.dropout(attention_probs)",
        "context_layer = torch.matmul(attention_probs, value_layer)",
        "context_layer = context_layer.permute(0, 2, 1, 3).contiguous()",
        "new_context_layer_shape = context_layer.size()[:-2] + (self.all_head_size,)",
        "context_layer = context_layer.view(new_context_layer_shape)",
        "hidden_states = self.output.dense(context_layer)",
        "hidden_states = self.output.dropout(hidden_states)",
    };
    if (reference == Reference::mha) return mha;
    if (reference == Reference::hf) return hf;
    static const std::vector<std::string_view> lines = {
        "B, N, C = x.shape",
        "qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, C // self.num_heads)",
        "qkv = qkv.permute(2, 0, 3, 1, 4)",
        "q, k, v = qkv.unbind(0)",
        "attn = (q @ k.transpose(-2, -1)) * self.scale",
        "attn = attn.softmax(dim=-1)",
        "attn = self.attn_drop(attn)",
        "x = (attn @ v).transpose(1, 2).reshape(B, N, C)",
        "x = self.proj(x)",
        "x = self.proj_drop(x)",
        "return x",
    };
    return lines;
}

namespace {

// By StepId.
constexpr std::string_view kStepNames[] = {
    "input",  "qkv",  "qkv_split", "qkv_heads", "q",         "k",      "v",   "k_t",      "scores",
    "scaled", "masked", "attn",    "attn_drop", "context", "context_t", "merged", "out", "out_drop",
};
static_assert(std::size(kStepNames) == static_cast<std::size_t>(StepId::count), "one name per StepId");

}  // namespace

std::string_view step_name(StepId step) {
    return step < StepId::count ? kStepNames[static_cast<std::size_t>(step)] : std::string_view{};
}

StepId step_id(std::string_view name) {
    for (std::size_t i = 0; i < std::size(kStepNames); ++i)
        if (kStepNames[i] == name) return static_cast<StepId>(i);
    return kNoStep;
}

namespace {

// The table's rows with their names; each row must sit at the place of its StepId.
std::vector<StepInfo> named_in_place(std::vector<StepInfo> rows) {
    if (rows.size() != static_cast<std::size_t>(StepId::count))
        throw std::logic_error("step table: one row per StepId");
    for (std::size_t i = 0; i < rows.size(); ++i) {
        if (rows[i].id != static_cast<StepId>(i))
            throw std::logic_error("step table: row " + std::to_string(i) + " is not at the place of its StepId");
        rows[i].name = step_name(rows[i].id);
    }
    return rows;
}

const std::vector<StepInfo>& vit_attention_steps() {
    // clang-format off
    static const std::vector<StepInfo> steps = named_in_place({
        // name        op              code                                   pattern
        //             shape               line  inputs                                 dims              map    dist   masked  written as
        //             also called
        //             cost: params, FLOPs, bytes, [when the alternatives hold, params, FLOPs]
        {StepId::input,      Op::input,      "x",                                   "b n C",
                       "[B, N, C]",        0,    {},                                    {},               false, false, false, "x",
                       "x hidden_states inputs attn_input",
                       {"", "", "4 B N C"}},
        {StepId::qkv,        Op::linear,     "self.qkv(x)",                         "b n C, (three h c) C -> b n (three h c)",
                       "[B, N, 3*C]",      1,    {StepId::input},                       {},               false, false, false, "self.qkv(x)",
                       "mixed_qkv",
                       {"3C^2", "2 B N C 3C = 6 B N C^2", "4 B N 3C", CostAlt::qkv_bias, "3C^2 + 3C", "2 B N C 3C + B N 3C = 6 B N C^2 + 3 B N C"}},
        {StepId::qkv_split,  Op::reshape,    ".reshape(B, N, 3, self.num_heads, C // self.num_heads)",
                                                                              "b n (three h c) -> b n three h c",
                       "[B, N, 3, h, c]",  1,    {StepId::qkv},                         {},               false, false, false, "qkv",
                       "",
                       {"", "", "4 B N 3 h c = 4 B N 3C"}},
        {StepId::qkv_heads,  Op::permute,    ".permute(2, 0, 3, 1, 4)",             "b n three h c -> three b h n c",
                       "[3, B, h, N, c]",  2,    {StepId::qkv_split},                   {2, 0, 3, 1, 4},  false, false, false, "qkv",
                       "",
                       {"", "", "4 3 B h N c = 4 B N 3C"}},
        {StepId::q,          Op::unbind,     "q, k, v = qkv.unbind(0)",             "three b h n c -> b h n c  (three = 0)",
                       "[B, h, N, c]",     3,    {StepId::qkv_heads},                   {0},              false, false, false, "",
                       "query query_layer",
                       {"", "", "4 B h N c = 4 B N C"}},
        {StepId::k,          Op::unbind,     "q, k, v = qkv.unbind(0)",             "three b h n c -> b h n c  (three = 1)",
                       "[B, h, N, c]",     3,    {StepId::qkv_heads},                   {1},              false, false, false, "",
                       "key key_layer",
                       {"", "", "4 B h N c = 4 B N C"}},
        {StepId::v,          Op::unbind,     "q, k, v = qkv.unbind(0)",             "three b h n c -> b h n c  (three = 2)",
                       "[B, h, N, c]",     3,    {StepId::qkv_heads},                   {2},              false, false, false, "",
                       "value value_layer",
                       {"", "", "4 B h N c = 4 B N C"}},
        {StepId::k_t,        Op::transpose,  "k.transpose(-2, -1)",                 "b h n c -> b h c n",
                       "[B, h, c, N]",     4,    {StepId::k},                           {0, 1, 3, 2},     false, false, false, "",
                       "k_transposed",
                       {"", "", "4 B h c N = 4 B N C"}},
        {StepId::scores,     Op::matmul,     "q @ k.transpose(-2, -1)",             "b h n c, b h c m -> b h n m",
                       "[B, h, N, N]",     4,    {StepId::q, StepId::k_t},              {},               true,  false, false, "(q @ k.transpose(-2, -1))",
                       "attn_scores",
                       {"", "2 B h N N c = 2 B N^2 C  (any h)", "4 B h N^2"}},
        {StepId::scaled,     Op::scale,      "* self.scale",                        "b h n m -> b h n m  (x c^-0.5)",
                       "[B, h, N, N]",     4,    {StepId::scores},                      {},               true,  false, false, "attn",
                       "attention_scores",
                       {"", "B h N^2", "4 B h N^2"}},
        {StepId::masked,     Op::mask,       "attn = attn.masked_fill(~keep[:, None], float(\"-inf\"))",
                                                                              "b h n m -> b h n m  (-inf where the key is hidden)",
                       "[B, h, N, N]",     -1,   {StepId::scaled},                      {},               true,  false, true, "",
                       "",
                       {"", "", "4 B h N^2"}},
        {StepId::attn,       Op::softmax,    "attn.softmax(dim=-1)",                "b h n m -> b h n m  (softmax over m)",
                       "[B, h, N, N]",     5,    {StepId::scaled},                      {},               true,  true,  false, "",
                       "attn_weights attention_probs attn_probs attention_weights attn_map attention_map",
                       {"", "5 B h N^2", "4 B h N^2"}},
        {StepId::attn_drop,  Op::dropout,    "self.attn_drop(attn)",                "b h n m -> b h n m",
                       "[B, h, N, N]",     6,    {StepId::attn},                        {},               true,  true,  false, "attn",
                       "",
                       {"", "0 (eval: identity)", "4 B h N^2", CostAlt::dropping, "", "B h N^2"}},
        {StepId::context,    Op::matmul,     "attn @ v",                            "b h n m, b h m c -> b h n c",
                       "[B, h, N, c]",     7,    {StepId::attn_drop, StepId::v},        {},               false, false, false, "(attn @ v)",
                       "",
                       {"", "2 B h N N c = 2 B N^2 C  (any h)", "4 B h N c = 4 B N C"}},
        {StepId::context_t,  Op::transpose,  ".transpose(1, 2)",                    "b h n c -> b n h c",
                       "[B, N, h, c]",     7,    {StepId::context},                     {0, 2, 1, 3},     false, false, false, "(attn @ v).transpose(1, 2)",
                       "",
                       {"", "", "4 B N h c = 4 B N C"}},
        {StepId::merged,     Op::reshape,    ".reshape(B, N, C)",                   "b n h c -> b n (h c)",
                       "[B, N, C]",        7,    {StepId::context_t},                   {},               false, false, false, "x",
                       "",
                       {"", "0 (a copy)", "4 B N C"}},
        {StepId::out,        Op::linear,     "self.proj(x)",                        "b n C_in, C C_in -> b n C  (C_in = C)",
                       "[B, N, C]",        8,    {StepId::merged},                      {},               false, false, false, "x",
                       "attn_output attn_out proj",
                       {"C^2 + C", "2 B N C C + B N C = 2 B N C^2 + B N C", "4 B N C"}},
        {StepId::out_drop,   Op::dropout,    "self.proj_drop(x)",                   "b n C -> b n C",
                       "[B, N, C]",        9,    {StepId::out},                         {},               false, false, false, "",
                       "",
                       {"", "0 (eval: identity)", "4 B N C", CostAlt::dropping, "", "B N C"}},
    });
    // clang-format on
    return steps;
}

// Another reference's lines for ViTAttention's steps: name, op, code, line of its forward_lines().
struct ReferenceLine {
    StepId step;
    Op op;
    std::string_view code;
    int line;
};

// MultiHeadAttention: the same steps but out_drop.
const ReferenceLine kMhaLines[] = {
    {StepId::input, Op::input, "x", 0},
    {StepId::qkv, Op::linear, "self.qkv_proj(x)", 1},
    {StepId::qkv_split, Op::reshape, "qkv.reshape(B, N, 3, self.num_heads, self.head_dim)", 2},
    {StepId::qkv_heads, Op::permute, "qkv.permute(2, 0, 3, 1, 4)", 3},
    {StepId::q, Op::select, "qkv[0]", 4},
    {StepId::k, Op::select, "qkv[1]", 4},
    {StepId::v, Op::select, "qkv[2]", 4},
    {StepId::k_t, Op::transpose, "k.transpose(-2, -1)", 5},
    {StepId::scores, Op::matmul, "q @ k.transpose(-2, -1)", 5},
    {StepId::scaled, Op::scale, "* (self.head_dim ** -0.5)", 5},
    {StepId::masked, Op::mask, "attn = attn.masked_fill(~keep[:, None], float(\"-inf\"))", -1},
    {StepId::attn, Op::softmax, "attn.softmax(dim=-1)", 6},
    {StepId::attn_drop, Op::dropout, "self.dropout(attn)", 7},
    {StepId::context, Op::matmul, "attn @ v", 8},
    {StepId::context_t, Op::transpose, "out.transpose(1, 2)", 9},
    {StepId::merged, Op::reshape, "out.reshape(B, N, C)", 10},
    {StepId::out, Op::linear, "self.out_proj(out)", 11},
};

// Hugging Face's ViTSelfAttention + ViTSelfOutput. Its query, key and value are three nn.Linear,
// each put into heads by transpose_for_scores; the steps keep the three stacked ([B, N, 3*C], then
// [3, B, h, N, c]) so that q, k and v are the same views as ViTAttention's.
const ReferenceLine kHfLines[] = {
    {StepId::input, Op::input, "hidden_states", 0},
    {StepId::qkv, Op::linear, "self.query(hidden_states), self.key(hidden_states), self.value(hidden_states)", 0},
    {StepId::qkv_split, Op::reshape, "x.view(x.size()[:-1] + (self.num_attention_heads, self.attention_head_size))", 1},
    {StepId::qkv_heads, Op::permute, "x.permute(0, 2, 1, 3)", 1},
    {StepId::q, Op::select, "query_layer = self.transpose_for_scores(mixed_query_layer)", 3},
    {StepId::k, Op::select, "key_layer = self.transpose_for_scores(self.key(hidden_states))", 1},
    {StepId::v, Op::select, "value_layer = self.transpose_for_scores(self.value(hidden_states))", 2},
    {StepId::k_t, Op::transpose, "key_layer.transpose(-1, -2)", 4},
    {StepId::scores, Op::matmul, "torch.matmul(query_layer, key_layer.transpose(-1, -2))", 4},
    {StepId::scaled, Op::scale, "attention_scores / math.sqrt(self.attention_head_size)", 5},
    {StepId::masked, Op::mask, "attention_scores = attention_scores.masked_fill(~keep[:, None], float(\"-inf\"))", -1},
    {StepId::attn, Op::softmax, "nn.functional.softmax(attention_scores, dim=-1)", 6},
    {StepId::attn_drop, Op::dropout, "self.dropout(attention_probs)", 7},
    {StepId::context, Op::matmul, "torch.matmul(attention_probs, value_layer)", 8},
    {StepId::context_t, Op::transpose, "context_layer.permute(0, 2, 1, 3)", 9},
    {StepId::merged, Op::reshape, ".contiguous() ... context_layer.view(new_context_layer_shape)", 11},
    {StepId::out, Op::linear, "self.output.dense(context_layer)", 12},
    {StepId::out_drop, Op::dropout, "self.output.dropout(hidden_states)", 13},
};

// ViTAttention's rows with another reference's op, code and line.
template <std::size_t Count>
std::vector<StepInfo> rows_with_lines(const ReferenceLine (&lines)[Count]) {
    std::vector<StepInfo> rows;
    for (const ReferenceLine& line : lines) {
        StepInfo row = vit_attention_steps()[static_cast<std::size_t>(line.step)];
        row.op = line.op;
        row.code = line.code;
        row.line = line.line;
        rows.push_back(row);
    }
    return rows;
}

}  // namespace

const std::vector<StepInfo>& attention_steps(Reference reference) {
    static const std::vector<StepInfo> mha = rows_with_lines(kMhaLines), hf = rows_with_lines(kHfLines);
    switch (reference) {
        case Reference::mha: return mha;
        case Reference::hf: return hf;
        case Reference::vit: break;
    }
    return vit_attention_steps();
}

const StepInfo* step_info(StepId step, Reference reference) {
    for (const StepInfo& s : attention_steps(reference))
        if (s.id == step) return &s;
    return nullptr;
}

const StepInfo* step_info(std::string_view step, Reference reference) {
    const StepId id = step_id(step);
    return id == kNoStep ? nullptr : step_info(id, reference);
}

std::size_t attention_step_count(const AttentionConfig& config) {
    std::size_t n = 0;
    for (const StepInfo& s : attention_steps(config.reference)) n += !s.only_masked || config.masked();
    return n;
}

bool is_attention_map(std::string_view step) {
    const StepInfo* s = step_info(step);
    return s && s->attention_map;
}

namespace {

std::uint64_t saturating_mul(std::uint64_t a, std::uint64_t b) {
    constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
    return a != 0 && b > kMax / a ? kMax : a * b;
}

std::uint64_t symbol_value(std::string_view symbol, const AttentionConfig& cfg, std::string_view formula) {
    if (symbol == "B") return cfg.batch;
    if (symbol == "N") return cfg.tokens;
    if (symbol == "C") return cfg.dim;
    if (symbol == "h") return cfg.heads;
    if (symbol == "c") return cfg.head_dim();
    if (!symbol.empty() && std::isdigit(static_cast<unsigned char>(symbol.front())))
        return std::stoull(std::string(symbol));
    throw std::logic_error("step table: unknown size '" + std::string(symbol) + "' in " + std::string(formula));
}

}  // namespace

Shape step_shape(const StepInfo& step, const AttentionConfig& cfg) {
    // "[B, N, 3*C]": dimensions split at ", ", factors at "*".
    const std::string_view f = step.shape;
    Shape shape;
    std::uint64_t dim = 1;
    std::size_t begin = 1;
    for (std::size_t i = 1; i < f.size(); ++i) {
        if (f[i] != '*' && f[i] != ',' && f[i] != ']') continue;
        dim = saturating_mul(dim, symbol_value(f.substr(begin, i - begin), cfg, f));
        begin = i + 1;
        if (f[i] == '*') continue;
        shape.push_back(dim);
        dim = 1;
        if (f[i] == ',') begin = i + 2;  // ", "
    }
    return shape;
}

}  // namespace attnscope
