// trace_from_file: the user's steps where the file has them, the reference's elsewhere.
//
// [SECTION] Helpers shared with `attnscope check`
// [SECTION] Steps of the trace
// [SECTION] trace_from_file
#include "activations.hpp"

#include <algorithm>
#include <set>

#include "checks.hpp"
#include "diagnose.hpp"
#include "io.hpp"
#include "memory_budget.hpp"
#include "ops.hpp"
#include "roles.hpp"
#include "run.hpp"

namespace attnscope {

// ============================================================================================
// [SECTION] Helpers shared with `attnscope check`
// ============================================================================================
Message nonfinite_message(const Stats& s) {
    if (s.nan_count + s.inf_count == 0) return {};
    return Message(Msg::steps_not_finite, {{"nan", std::to_string(s.nan_count)}, {"inf", std::to_string(s.inf_count)}});
}

std::string nonfinite_text(const Stats& s) { return english(nonfinite_message(s)); }

std::vector<std::size_t> step_blocks(const TensorSource& source) {
    std::vector<Role> roles;
    for (FileRole& r : file_roles(source))
        if (r.role.kind == RoleKind::Step) roles.push_back(std::move(r.role));
    return blocks_of(roles);
}

Tensor checked_input(Array x, const std::string& from) {
    if (x.dimension() != 3)
        throw FileError(Message(Msg::steps_input_shape, {{"file", from}, {"shape", format_shape(shape_of(x))}}));
    const Message problem = nonfinite_message(compute_stats(x));
    if (!problem.empty()) throw FileError(Message(Msg::steps_input_not_finite, {{"file", from}}).with("problem", problem));
    return {std::move(x), {"B", "N", "C"}};
}

void require_finite_weights(const AttentionWeights& w, const std::string& path) {
    const std::pair<const char*, const Array*> arrays[] = {{"qkv.weight", &w.qkv_weight},
                                                           {"qkv.bias", w.qkv_bias ? &*w.qkv_bias : nullptr},
                                                           {"proj.weight", &w.proj_weight},
                                                           {"proj.bias", &w.proj_bias}};
    for (const auto& [name, array] : arrays) {
        const Message problem = array ? nonfinite_message(compute_stats(*array)) : Message();
        if (!problem.empty())
            throw FileError(Message(Msg::steps_weight_not_finite, {{"file", path}, {"name", name}}).with("problem", problem));
    }
}

AttentionConfig reference_config(const Tensor& x, const SourceWeights& w, std::size_t heads) {
    AttentionConfig cfg;
    cfg.batch = x.values.shape()[0];
    cfg.tokens = x.values.shape()[1];
    cfg.dim = x.values.shape()[2];
    cfg.qkv_bias = w.weights.qkv_bias.has_value();
    cfg.heads = heads;
    if (w.convention == kHuggingFaceConvention) cfg.reference = Reference::hf;
    const auto problems = validate(cfg, memory_budget());
    if (!problems.empty()) throw FileError(problems.front());
    return cfg;
}

namespace {

// ============================================================================================
// [SECTION] Steps of the trace
// ============================================================================================
// The pinned steps' PyTorch lines, formulas, inputs and axis labels, from a tiny reference run.
const Trace& step_templates() {
    static const Trace templates = [] {
        AttentionConfig tiny;
        tiny.batch = 1, tiny.tokens = 2, tiny.dim = 4, tiny.heads = 2;
        return run_attention(tiny);
    }();
    return templates;
}

// The pinned labels when the rank matches; fewer axes keep the trailing labels (a 3-D attention
// map [h, N, N']); more axes get d0, d1, ...
Axes labels_for(const Step& pinned, std::size_t rank) {
    const Axes& axes = pinned.axes();
    if (rank <= axes.size()) return Axes(axes.end() - static_cast<std::ptrdiff_t>(rank), axes.end());
    Axes generic;
    for (std::size_t i = 0; i < rank; ++i) generic.push_back("d" + std::to_string(i));
    return generic;
}

Step loaded_step(const UserStep& user, const Step& pinned, const Step* reference, const std::string& path) {
    // The reference's record when it ran (its formula names this file's sizes), else the template's
    // without the template's numbers ("x c^-0.5 = 2^-0.5 = 0.707" would be the tiny run's).
    const Step& record = reference ? *reference : pinned;
    Step s;
    s.name = user.step;
    s.op = record.op;
    s.code = record.code;
    s.formula = reference ? record.formula : record.formula.substr(0, record.formula.find(" = "));
    if (!reference && s.formula.size() < record.formula.size()) s.formula += ")";
    s.inputs = record.inputs;
    const Shape shape = shape_of(user.values);
    if (reference && reference->shape() == shape) s.operands = reference->operands;
    s.set_tensor(Tensor{user.values, reference && reference->shape() == shape ? reference->view().axes
                                                                              : labels_for(pinned, shape.size())});
    s.torch_strides = contiguous_strides(shape);
    s.contiguous = true;
    s.is_view = false;
    s.note = "loaded from the file: tensor '" + user.tensor_name + "' (" + user.dtype +
             "), saved contiguous; the reference computes it with " + pinned.code;
    s.stats = compute_stats(s.tensor().values);
    s.origin = StepOrigin::Loaded;
    s.origin_detail = path + ": " + user.tensor_name;
    return s;
}

// Softmax rows of a loaded map; a 3-D [h, N, N'] map is checked as [1, h, N, N'] so every head
// gets its own summary.
RowSumCheck loaded_row_sums(const Step& step) {
    if (step.shape().size() != 3) return check_row_sums(step, false, 0.0f);
    Step as4 = step;
    const Shape s = step.shape();
    as4.set_tensor(reshape(step.tensor(), {1, s[0], s[1], s[2]}, {"B", "h", "N", "N'"}));
    return check_row_sums(as4, false, 0.0f);
}

std::string block_list(const std::vector<std::size_t>& blocks) {
    std::string list;
    for (std::size_t b : blocks) list += (list.empty() ? "" : ", ") + std::to_string(b);
    return list;
}

// N of a checkpoint: pos_embed / pos_embedding / position_embeddings [1, N, C].
std::optional<std::size_t> checkpoint_tokens(const TensorSource& source, std::size_t dim) {
    // timm's pos_embed, torchvision's encoder.pos_embedding, Hugging Face's position_embeddings, under any prefix
    auto ends_with = [](const std::string& name, const std::string& suffix) {
        return name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
    };
    for (const TensorInfo& t : source.tensors()) {
        const bool named = ends_with(t.name, "pos_embed") || ends_with(t.name, "pos_embedding") ||
                           ends_with(t.name, "position_embeddings");
        if (named && t.shape.size() == 3 && t.shape[0] == 1 && t.shape[2] == dim) return t.shape[1];
    }
    return std::nullopt;
}

}  // namespace

// ============================================================================================
// [SECTION] trace_from_file
// ============================================================================================
FileTrace trace_from_file(const TensorSource& source, std::optional<std::size_t> block,
                          std::optional<std::size_t> heads, const CheckpointInput& checkpoint) {
    const std::string& path = source.path();
    FileTrace result;

    // Blocks: every block a step or a weight names.
    std::vector<Role> roles;
    bool any_weight = false;
    std::vector<FileRole> found_maps;  // attention maps no name says, found by their values
    for (FileRole& r : file_roles(source)) {
        any_weight |= r.role.kind == RoleKind::Weight;
        if (r.by_values) found_maps.push_back(r);
        if (r.role.kind != RoleKind::None) roles.push_back(std::move(r.role));
    }
    if (roles.empty())
        throw FileError(Message(Msg::steps_none_named, {{"file", path}}));
    for (const TensorInfo& t : source.tensors())  // not values that are no tensors (a checkpoint's epoch)
        if (!t.problem.empty() && !t.listed_only && recognize_role(t.name, t.shape).kind == RoleKind::None)
            result.notes.push_back(Message(Msg::note_skipped_tensor, {{"name", t.name}}).with("problem", t.problem));
    result.blocks = blocks_of(roles);
    if (block && !result.blocks.empty() &&
        std::find(result.blocks.begin(), result.blocks.end(), *block) == result.blocks.end())
        throw FileError(Message(Msg::steps_no_such_block,
                                {{"file", path}, {"block", std::to_string(*block)}, {"blocks", block_list(result.blocks)}}));
    if (!block && !result.blocks.empty()) block = result.blocks.front();
    result.block = block;
    if (result.blocks.size() > 1)
        result.notes.push_back(Message(Msg::note_block_of, {{"block", std::to_string(*block)},
                                                            {"count", std::to_string(result.blocks.size())},
                                                            {"blocks", block_list(result.blocks)}}));
    for (const FileRole& r : found_maps)
        if (in_block(r.role, block))
            result.notes.push_back(Message(r.averaged ? Msg::note_mean_map_by_values : Msg::note_map_by_values,
                                           {{"module", r.role.module}, {"name", r.tensor->name},
                                            {"shape", format_shape(r.tensor->shape)}}));

    // The user's steps of this block (the first tensor per step wins).
    std::vector<UserStep> user;
    std::set<std::string> seen;
    for (UserStep& u : load_user_steps(source, block))
        if (seen.insert(u.step).second) user.push_back(std::move(u));
    const UserStep* user_input = nullptr;
    for (const UserStep& u : user)
        if (u.step == "input") user_input = &u;

    // Input, weights, heads: what the reference needs.
    std::optional<Tensor> x;
    if (user_input) {
        try {
            x = checked_input(user_input->values, path);
            result.notes.push_back(Message(Msg::note_input_tensor, {{"shape", format_shape(shape_of(x->values))},
                                                                    {"name", user_input->tensor_name}}));
        } catch (const FileError& e) {
            result.notes.push_back(Message(Msg::note_steps_not_computed).with("problem", message_of(e)));
        }
    }
    std::optional<SourceWeights> weights;
    bool weights_for_block = false;
    for (const Role& r : roles) weights_for_block |= r.kind == RoleKind::Weight && in_block(r, block);
    if (weights_for_block && (x || user.empty())) {
        try {
            weights = load_attention_weights(source, block, x ? std::optional(x->values.shape()[2]) : std::nullopt);
            require_finite_weights(weights->weights, path);
            result.notes.push_back(weights->block ? Message(Msg::note_weights_of_block, {{"convention", weights->convention},
                                                                                         {"block", std::to_string(*weights->block)}})
                                                  : Message(Msg::note_weights, {{"convention", weights->convention}}));
        } catch (const FileError& e) {
            if (user.empty()) throw;  // a checkpoint whose weights cannot be used shows nothing
            weights.reset();
            result.notes.push_back(Message(Msg::note_steps_not_computed).with("problem", message_of(e)));
        }
    } else if (!user.empty() && !any_weight) {
        result.notes.push_back(Message(Msg::note_no_weights));
    }
    if (user.empty() && !weights)
        throw FileError(Message(Msg::steps_nothing_for_block, {{"file", path}, {"block", std::to_string(block.value_or(0))}}));
    if (!x && user.empty() && weights) {  // a checkpoint: a seeded input of the weights' size
        AttentionConfig demo;
        demo.batch = checkpoint.batch;
        demo.dim = weights->weights.qkv_weight.shape()[1];
        demo.tokens = checkpoint.tokens ? checkpoint.tokens : checkpoint_tokens(source, demo.dim).value_or(16);
        demo.seed = checkpoint.seed;
        x = default_input(demo);
        result.notes.push_back(Message(Msg::note_seeded_input, {{"batch", std::to_string(demo.batch)},
                                                                {"tokens", std::to_string(demo.tokens)},
                                                                {"dim", std::to_string(demo.dim)},
                                                                {"seed", std::to_string(demo.seed)}}));
    } else if (!x && weights && !user_input) {
        result.notes.push_back(Message(Msg::note_no_input));
        weights.reset();
    }
    if (x && !weights) x.reset();

    std::optional<std::size_t> h = heads ? heads : infer_heads(source, user);
    if (heads) result.notes.push_back(Message(Msg::note_heads_chosen, {{"heads", std::to_string(*heads)}}));
    else if (h) result.notes.push_back(Message(Msg::note_heads_from_file, {{"heads", std::to_string(*h)}}));
    if (!h && x) {  // the weights alone do not tell h: the file's configuration must, or the user
        const std::size_t dim = x->values.shape()[2];
        const std::optional<HeadCount> said = heads_from_file(source, {dim, result.blocks.size(), 0});
        if (!said) throw HeadsUnknown(path, dim);
        h = said->heads;
        result.notes.push_back(Message(Msg::note_heads_from, {{"heads", std::to_string(*h)}}).with("from", said->from));
    }

    // The reference run and the comparison.
    std::optional<Trace> reference;
    CheckReport report;
    if (x && weights) {
        AttentionConfig cfg;
        try {
            cfg = reference_config(*x, *weights, *h);
        } catch (const FileError& e) {
            throw FileError(Message(Msg::file_problem, {{"file", path}}).with("problem", e.message));
        }
        reference = run_attention(cfg, weights->weights, *x);
        report = compare_steps(*reference, weights->weights, user);
    }

    // The steps, in pipeline order.
    Trace& trace = result.trace;
    trace.source_path = path;
    Steps computed;
    bool only_maps = !user.empty();
    for (const std::string& name : attention_step_names()) {
        const Step* ref = reference ? reference->find(name) : nullptr;
        const auto u = std::find_if(user.begin(), user.end(), [&](const UserStep& s) { return s.step == name; });
        if (u != user.end()) {
            trace.steps.push_back(loaded_step(*u, step_templates().at(name), ref, path));
            only_maps &= is_attention_map(name);
        } else if (ref) {
            trace.steps.push_back(*ref);
            trace.steps.back().origin = StepOrigin::Computed;
            trace.steps.back().origin_detail = "computed by the reference";
            computed.push_back(*ref);
        }
    }
    result.attention_maps_only = only_maps && !reference;

    // Config: the reference's, else what the loaded tensors say.
    if (reference) {
        trace.config = reference->config;
    } else {
        trace.config = AttentionConfig{};
        trace.config.batch = trace.config.tokens = trace.config.dim = 0;  // 0: the file does not say
        for (const Step& s : trace.steps) {
            const Shape shape = s.shape();
            const Axes& axes = s.axes();
            for (std::size_t i = 0; i < shape.size() && i < axes.size(); ++i) {
                if (axes[i] == "B") trace.config.batch = shape[i];
                if (axes[i] == "N") trace.config.tokens = shape[i];
                if (axes[i] == "C") trace.config.dim = shape[i];
                if (axes[i] == "h") trace.config.heads = shape[i];
            }
        }
        if (h) trace.config.heads = *h;
        for (const Step& s : trace.steps)  // C = h * c from q, k, v or context [B, h, N, c]
            if (!trace.config.dim && s.axes().size() == 4 && s.axes()[3] == "c")
                trace.config.dim = s.shape()[1] * s.shape()[3];
    }

    // Differences, checks.
    for (const StepComparison& c : report.steps) {
        const Step* s = trace.find(c.step);
        StepDifference d = to_step_difference(c, s ? s->axes() : std::vector<std::string>{});
        if (!s) d.difference.reset();  // no step to lay it over
        trace.differences.push_back(std::move(d));
    }
    if (reference) {
        std::set<std::string> names;
        for (const Step& s : computed) names.insert(s.name);
        for (ShapeCheck& c : check_shapes(computed, expected_attention_shapes(trace.config)))
            if (names.count(c.step)) trace.checks.shapes.push_back(std::move(c));
    }
    for (const Step& s : trace.steps) {
        const StepInfo* info = step_info(s.name);
        if (!info || !info->distribution) continue;  // attn, attn_drop: rows that sum to 1
        if (s.origin == StepOrigin::Loaded && s.shape().size() >= 2) trace.checks.row_sums.push_back(loaded_row_sums(s));
        else if (s.origin == StepOrigin::Computed)
            if (const RowSumCheck* rs = reference->checks.row_sum(s.name)) trace.checks.row_sums.push_back(*rs);
    }
    trace.checks.nonfinite = find_first_nonfinite(trace.steps);
    return result;
}

}  // namespace attnscope
