// compare_steps: the user's steps against the reference, and the known bugs replayed.
//
// [SECTION] Closeness
// [SECTION] Known bugs, replayed through the reference's pipeline
// [SECTION] Explaining one step
// [SECTION] One tensor of a file
// [SECTION] Loading the user's steps, compare_steps
#include "diagnose.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <numeric>

#include "bug_zoo.hpp"
#include "checks.hpp"
#include "io.hpp"
#include "ops.hpp"
#include "run.hpp"

namespace attnscope {

const char* finding_name(Finding finding) {
    switch (finding) {
        case Finding::Match: return "ok";
        case Finding::Shape: return "shape mismatch";
        case Finding::AxisOrder: return "axis order";
        case Finding::Split: return "split of 3C";
        case Finding::SoftmaxAxis: return "softmax axis";
        case Finding::Scale: return "scale";
        case Finding::ScaleAfterSoftmax: return "scale after softmax";
        case Finding::MergeTranspose: return "merge transpose";
        case Finding::Values: return "values";
    }
    return "values";
}

namespace {

std::string number(double value) {
    char text[32];
    std::snprintf(text, sizeof text, "%.3g", value);
    return text;
}

// ============================================================================================
// [SECTION] Closeness
// ============================================================================================
// Relative to the reference's magnitude; half-precision dumps round far more than float32.
double tolerance_for(const std::string& dtype, const Array& reference) {
    const double relative = dtype == "BF16" ? 1.6e-2 : dtype == "F16" ? 2e-3 : 1e-4;
    double magnitude = 1.0;
    for (float r : reference) magnitude = std::max(magnitude, static_cast<double>(std::fabs(r)));
    return relative * magnitude;
}

// max |a - b| over arrays of equal size (NaN when either holds a NaN).
double max_abs_difference(const Array& a, const Array& b) {
    double worst = 0.0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        const double d = std::fabs(static_cast<double>(a.data()[i]) - b.data()[i]);
        if (!(d <= worst)) worst = d;  // keeps NaN once seen
    }
    return worst;
}

bool same_values(const Array& user, const Array& candidate, double tolerance) {
    return shape_of(user) == shape_of(candidate) && max_abs_difference(user, candidate) <= tolerance;
}

// The same numbers in the same row-major order, whatever the shapes.
bool same_flat_values(const Array& user, const Array& candidate, double tolerance) {
    return user.size() == candidate.size() && max_abs_difference(user, candidate) <= tolerance;
}

// ============================================================================================
// [SECTION] Known bugs, replayed through the reference's pipeline
// ============================================================================================
struct KnownBug {
    Finding finding;
    std::string diagnosis;
    std::map<std::string, Array> steps;  // the steps whose numbers the bug changes
};

// A known bug is a wrong line of the textbook forward in eval mode: it is replayed on that path (where
// every step it rewrites exists), without the reference's dropout or mask.
AttentionConfig replay_config(const AttentionConfig& reference) {
    AttentionConfig cfg = reference;
    cfg.path = AttentionPath::standard;
    cfg.training = false;
    cfg.causal = false;
    cfg.valid_tokens.clear();
    return cfg;
}

// run_attention on the reference's input and weights, hooks.edit rewriting steps as the buggy code
// computes them (the later steps compute from the rewritten values). The bug's steps: the run's from
// `first` on, but for those the buggy code does not have.
KnownBug replay(const Trace& ref, const AttentionConfig& cfg, const AttentionWeights& w, const RunHooks& hooks,
                StepId first, const std::vector<std::string>& missing, Finding finding,
                std::string diagnosis) {
    const Trace run = run_attention(cfg, w, ref.at(StepId::input).tensor(), hooks);
    KnownBug bug{finding, std::move(diagnosis), {}};
    const auto& names = attention_step_names();
    for (auto name = std::find(names.begin(), names.end(), step_name(first)); name != names.end(); ++name)
        if (std::find(missing.begin(), missing.end(), *name) == missing.end())
            bug.steps[*name] = run.at(*name).tensor().values;
    return bug;
}

// A bug of the zoo (core/teach/bug_zoo), its steps from `first` on.
KnownBug zoo_bug(const Trace& ref, const AttentionWeights& w, Bug bug, StepId first, Finding finding,
                 std::string diagnosis) {
    const AttentionConfig cfg = replay_config(ref.config);
    return replay(ref, cfg, w, bug_hooks(bug, cfg), first, steps_missing_in(bug), finding, std::move(diagnosis));
}

// Everything after q, k, v as the reference computes it but for one bug of the zoo.
KnownBug tail_bug(const Trace& ref, const AttentionWeights& w, Bug bug, Finding finding, std::string diagnosis) {
    return zoo_bug(ref, w, bug, StepId::k_t, finding, std::move(diagnosis));
}

// self.qkv(x).reshape(B, N, <order of three, h, c>), then permuted to [3, B, h, N, c] by name.
KnownBug split_bug(const Trace& ref, const AttentionWeights& w, const std::vector<std::string>& order) {
    const AttentionConfig cfg = replay_config(ref.config);
    const std::map<std::string, std::size_t> size{{"three", 3}, {"h", cfg.heads}, {"c", cfg.head_dim()}};
    const Shape split_shape{cfg.batch, cfg.tokens, size.at(order[0]), size.at(order[1]), size.at(order[2])};
    const Axes split_axes{"B", "N", order[0], order[1], order[2]};
    std::vector<std::size_t> dims;  // [B, N, ?, ?, ?] -> [three, B, h, N, c]
    for (const char* axis : {"three", "B", "h", "N", "c"})
        dims.push_back(std::find(split_axes.begin(), split_axes.end(), axis) - split_axes.begin());
    RunHooks hooks;
    hooks.edit = [split_shape, split_axes, dims](const Trace& so_far, Step& step) {
        if (step.name == StepId::qkv_split)  // [B, N, ?, ?, ?]
            step.set_tensor(reshape(so_far.at(StepId::qkv).tensor(), split_shape, split_axes));
        else if (step.name == StepId::qkv_heads)  // [three, B, h, N, c]
            step.set_tensor(permute(so_far.at(StepId::qkv_split).tensor(), dims));
    };
    return replay(ref, cfg, w, hooks, StepId::qkv_split, {}, Finding::Split,
                  "the same values under another split of 3C: (" + order[0] + " " + order[1] + " " + order[2] +
                      ") instead of (three h c); reshape self.qkv(x) to (B, N, 3, num_heads, C // num_heads)");
}

// qkv.reshape(3, B, h, N, c): the right numbers poured into the heads' shape without the permute.
KnownBug qkv_reshape_bug(const Trace& ref, const AttentionWeights& w) {
    return zoo_bug(ref, w, Bug::ReshapeWithoutPermute, StepId::qkv_heads, Finding::AxisOrder,
                   "the same values in another axis order: qkv reshaped to (3, B, h, N, c) without the permute; "
                   "use .reshape(B, N, 3, h, c).permute(2, 0, 3, 1, 4)");
}

// q.reshape(B, h, N, c) on a [B, N, h, c] tensor: heads and tokens mixed, without the transpose.
KnownBug heads_reshape_bug(const Trace& ref, const AttentionWeights& w) {
    RunHooks hooks;
    hooks.edit = [](const Trace&, Step& step) {
        if (step.name == StepId::q || step.name == StepId::k || step.name == StepId::v)  // [B, N, h, c] read as [B, h, N, c]
            step.set_tensor(reshape(transpose(step.tensor(), 1, 2), step.shape(), step.axes()));
    };
    return replay(ref, replay_config(ref.config), w, hooks, StepId::q, {}, Finding::AxisOrder,
                  "the same values in another axis order: q, k, v reshaped from [B, N, h, c] to [B, h, N, c] "
                  "without the permute; use .permute(0, 2, 1, 3) (or .transpose(1, 2))");
}

// Every known bug, built on first use (each replays the reference's pipeline).
class KnownBugs {
public:
    KnownBugs(const Trace& ref, const AttentionWeights& w) {
        const std::string root_c = "sqrt(c) = " + number(std::sqrt(static_cast<double>(ref.config.head_dim())));
        add([&ref, &w] { return qkv_reshape_bug(ref, w); });
        add([&ref, &w] { return heads_reshape_bug(ref, w); });
        std::vector<std::string> order{"c", "h", "three"};  // every order of (three h c) but its own
        do {
            if (order != std::vector<std::string>{"three", "h", "c"}) add([&ref, &w, order] { return split_bug(ref, w, order); });
        } while (std::next_permutation(order.begin(), order.end()));
        add([&ref, &w] {
            return tail_bug(ref, w, Bug::SoftmaxDim2, Finding::SoftmaxAxis,
                            "softmax over the wrong axis: columns sum to 1 instead of rows; use softmax(dim=-1)");
        });
        add([&ref, &w, root_c] {
            return tail_bug(
                ref, w, Bug::MissingScale, Finding::Scale,
                "scale missing: the scores are not multiplied by self.scale = c^-0.5 (ratio " + root_c + ")");
        });
        add([&ref, &w, root_c] {
            return tail_bug(ref, w, Bug::DoubleScale, Finding::Scale,
                            "scale applied twice: the scores are multiplied by c^-0.5 twice (ratio " + root_c +
                                "); multiply by self.scale once");
        });
        add([&ref, &w] {
            return tail_bug(ref, w, Bug::ScaleAfterSoftmax, Finding::ScaleAfterSoftmax,
                            "scale applied after softmax: softmax(q @ k^T) * scale; multiply the scores by self.scale "
                            "before the softmax");
        });
        add([&ref, &w] {
            return tail_bug(ref, w, Bug::MergeWithoutTranspose, Finding::MergeTranspose,
                            "merge without the transpose: (attn @ v).reshape(B, N, C) mixes heads and tokens; use "
                            "(attn @ v).transpose(1, 2).reshape(B, N, C)");
        });
    }

    // The first bug whose numbers at `step` are the user's.
    const KnownBug* explaining(const std::string& step, const Array& user, double tolerance) {
        for (std::size_t i = 0; i < makers_.size(); ++i) {
            if (!built_[i]) built_[i] = makers_[i]();
            const auto it = built_[i]->steps.find(step);
            if (it != built_[i]->steps.end() && same_values(user, it->second, tolerance)) return &*built_[i];
        }
        return nullptr;
    }

private:
    void add(std::function<KnownBug()> maker) {
        makers_.push_back(std::move(maker));
        built_.emplace_back();
    }
    std::vector<std::function<KnownBug()>> makers_;
    std::vector<std::optional<KnownBug>> built_;
};

// ============================================================================================
// [SECTION] Explaining one step
// ============================================================================================
std::string permute_text(const std::vector<std::size_t>& dims) {
    std::string text = ".permute(";
    for (std::size_t i = 0; i < dims.size(); ++i) text += (i ? ", " : "") + std::to_string(dims[i]);
    return text + ")";
}

// "[B, h, N, c] = [2, 4, 5, 6]"
std::string labelled_shape(const Tensor& t) { return format_axes(t.axes) + " = " + format_shape(shape_of(t.values)); }

// The reference's values under another axis order, or reshaped from another axis order.
std::optional<std::string> rearrangement(const Array& user, const Tensor& ref, double tolerance) {
    const std::size_t rank = ref.values.dimension();
    if (rank < 2 || rank > 6 || user.size() != ref.values.size()) return std::nullopt;
    std::vector<std::size_t> dims(rank);
    std::iota(dims.begin(), dims.end(), 0);
    const Shape user_shape = shape_of(user);
    while (std::next_permutation(dims.begin(), dims.end())) {  // skips the identity
        const Tensor p = permute(ref, dims);
        const std::string order = format_axes(p.axes);
        if (same_values(user, p.values, tolerance))
            return "the same values in axis order " + order + " instead of " + format_axes(ref.axes) + " (" +
                   permute_text(dims) + " of the reference); check the permute or transpose that makes this step";
        if (same_flat_values(user, p.values, tolerance))
            return "the same values laid out as " + order + " and reshaped to " + format_shape(user_shape) +
                   " without a permute; the reference's order is " + format_axes(ref.axes);
    }
    return std::nullopt;
}

// "columns sum to 1 instead of rows" for an attention map [..., N, N].
bool columns_sum_to_one(const Array& user) {
    const Shape s = shape_of(user);
    if (s.size() < 2 || s[s.size() - 1] != s[s.size() - 2]) return false;
    const Tensor t{user, Axes(s.size())};
    const Array rows = sum_last(t).values;
    const Array columns = sum_last(transpose(t, s.size() - 2, s.size() - 1)).values;
    auto all_one = [](const Array& sums) {
        return std::all_of(sums.begin(), sums.end(), [](float v) { return std::fabs(v - 1.0f) <= 1e-4f; });
    };
    return all_one(columns) && !all_one(rows);
}

// The user's values are the reference's times one number: name it against sqrt(c).
std::optional<std::string> ratio(const Array& user, const Array& ref, double tolerance, std::size_t head_dim) {
    double dot = 0.0, norm = 0.0;
    for (std::size_t i = 0; i < ref.size(); ++i) {
        dot += static_cast<double>(user.data()[i]) * ref.data()[i];
        norm += static_cast<double>(ref.data()[i]) * ref.data()[i];
    }
    if (norm == 0.0) return std::nullopt;
    const double r = dot / norm;
    if (!same_values(user, Array(ref * static_cast<float>(r)), tolerance)) return std::nullopt;
    const double root_c = std::sqrt(static_cast<double>(head_dim));
    if (std::fabs(r / root_c - 1.0) < 1e-3) return "scale missing: the values are the reference's x sqrt(c) = " + number(r);
    if (std::fabs(r * root_c - 1.0) < 1e-3)
        return "scale applied once too often: the values are the reference's x c^-0.5 = " + number(r);
    return "the values are the reference's x " + number(r);
}

std::string shape_mismatch(const Shape& actual, const Tensor& ref) {
    const Shape expected = shape_of(ref.values);
    std::string text = "shape mismatch: " + format_shape(actual) + ", expected " + labelled_shape(ref);
    if (actual.size() != expected.size())
        return text + " (" + std::to_string(actual.size()) + " axes instead of " + std::to_string(expected.size()) + ")";
    for (std::size_t i = 0; i < actual.size(); ++i)
        if (actual[i] != expected[i])
            return text + ": axis " + std::to_string(i) + " (" + ref.axes[i] + ") is " + std::to_string(actual[i]) +
                   ", expected " + std::to_string(expected[i]);
    return text;
}

// Where the largest difference is, for "values differ" ("at [0, 1, 2, 3]: yours 0.5, reference 0.25").
std::string worst_place(const Array& user, const Array& ref) {
    std::size_t worst = 0;
    double worst_d = -1.0;
    for (std::size_t i = 0; i < ref.size(); ++i) {
        const double d = std::fabs(static_cast<double>(user.data()[i]) - ref.data()[i]);
        if (std::isnan(d) || d > worst_d) {
            worst = i;
            worst_d = std::isnan(d) ? INFINITY : d;
        }
    }
    const Shape shape = shape_of(ref);
    Shape index(shape.size());
    for (std::size_t d = shape.size(), rest = worst; d-- > 0; rest /= shape[d]) index[d] = rest % shape[d];
    return "at " + format_shape(index) + ": yours " + number(user.data()[worst]) + ", reference " +
           number(ref.data()[worst]);
}

StepComparison compare_step(const UserStep& user, const Step& ref, KnownBugs& bugs, std::size_t head_dim) {
    StepComparison c;
    c.step = user.step;
    c.tensor_name = user.tensor_name;
    c.actual = shape_of(user.values);
    c.expected = ref.shape();
    c.tolerance = tolerance_for(user.dtype, ref.tensor().values);
    const bool same_shape = c.actual == c.expected;
    c.max_error = same_shape ? max_abs_difference(user.values, ref.tensor().values) : NAN;
    if (same_shape) c.difference = Array(user.values - ref.tensor().values);
    if (same_shape && c.max_error <= c.tolerance) {
        c.diagnosis = "ok (max error " + number(c.max_error) + ")";
        return c;
    }
    const Stats stats = compute_stats(user.values);
    if (stats.nan_count + stats.inf_count > 0) {
        c.finding = Finding::Values;
        c.diagnosis = "holds " + std::to_string(stats.nan_count) + " NaN and " + std::to_string(stats.inf_count) +
                      " Inf values; the reference's are all finite";
    } else if (const KnownBug* bug = bugs.explaining(user.step, user.values, c.tolerance)) {
        c.finding = bug->finding;
        c.diagnosis = bug->diagnosis;
    } else if (auto text = rearrangement(user.values, ref.tensor(), c.tolerance)) {
        c.finding = Finding::AxisOrder;
        c.diagnosis = *text;
    } else if (same_shape && (user.step == StepId::attn || user.step == StepId::attn_drop) && columns_sum_to_one(user.values)) {
        c.finding = Finding::SoftmaxAxis;
        c.diagnosis = "softmax over the wrong axis: columns sum to 1 instead of rows; use softmax(dim=-1)";
    } else if (auto text = same_shape ? ratio(user.values, ref.tensor().values, c.tolerance, head_dim) : std::nullopt) {
        c.finding = text->rfind("scale", 0) == 0 ? Finding::Scale : Finding::Values;
        c.diagnosis = *text;
    } else if (!same_shape) {
        c.finding = Finding::Shape;
        c.diagnosis = shape_mismatch(c.actual, ref.tensor());
    } else {
        c.finding = Finding::Values;
        c.diagnosis = "values differ: max error " + number(c.max_error) + " " + worst_place(user.values, ref.tensor().values) +
                      "; no known bug explains them";
    }
    return c;
}

std::size_t step_index(const std::string& step) {
    const auto& names = attention_step_names();
    return static_cast<std::size_t>(std::find(names.begin(), names.end(), step) - names.begin());
}

}  // namespace

// ============================================================================================
// [SECTION] One tensor of a file
// ============================================================================================
bool looks_like_attention_map(const Shape& shape, const Stats& stats) {
    return shape.size() >= 2 && shape[shape.size() - 1] == shape[shape.size() - 2] && stats.min >= 0.0f;
}

InspectedTensor inspect_tensor(const TensorSource& source, const TensorInfo& info) {
    InspectedTensor t{info, recognize_role(info.name, info.shape), std::nullopt, std::nullopt, ""};
    try {
        Step map;
        map.name = info.name;
        map.set_tensor(Tensor{source.load(info.name), {}});
        t.stats = compute_stats(map.tensor().values);
        if (t.role.kind != RoleKind::Weight && looks_like_attention_map(info.shape, *t.stats))
            t.row_sums = check_row_sums(map, false, 0.0f);
    } catch (const FileError& e) {
        t.error = e.what();
    }
    return t;
}

// ============================================================================================
// [SECTION] Loading the user's steps, compare_steps
// ============================================================================================
namespace {

// Every value >= 0 and finite, and every row (the last axis) sums to 1 within 1e-3.
bool rows_are_distributions(const Array& values) {
    const Shape shape = shape_of(values);
    const std::size_t n = shape.back();
    if (n == 0 || values.size() == 0) return false;
    const float* p = values.data();
    for (std::size_t row = 0; row < values.size() / n; ++row) {
        double sum = 0.0;
        for (std::size_t j = 0; j < n; ++j) {
            const float v = p[row * n + j];
            if (!(v >= 0.0f) || !std::isfinite(v)) return false;
            sum += v;
        }
        if (std::fabs(sum - 1.0) > 1e-3) return false;
    }
    return true;
}

}  // namespace

std::string capture_module(const std::string& tensor_name) {
    const std::size_t dot = tensor_name.rfind('.');
    const bool indexed = dot != std::string::npos && dot + 1 < tensor_name.size() &&
                         tensor_name.find_first_not_of("0123456789", dot + 1) == std::string::npos;
    return indexed ? tensor_name.substr(0, dot) : tensor_name;
}

std::vector<FileRole> file_roles(const TensorSource& source) {
    std::vector<FileRole> roles;
    bool named_step = false;
    for (const TensorInfo& t : source.tensors()) {
        FileRole r{&t, recognize_role(t.name, t.shape)};
        named_step |= r.role.kind == RoleKind::Step;
        roles.push_back(std::move(r));
    }
    if (named_step) return roles;
    std::vector<FileRole*> maps;
    for (FileRole& r : roles) {
        const TensorInfo& t = *r.tensor;
        if (r.role.kind != RoleKind::None || !t.problem.empty() || (t.shape.size() != 3 && t.shape.size() != 4)) continue;
        try {
            if (!rows_are_distributions(source.load(t.name))) continue;
        } catch (const FileError&) {  // not loadable (over the memory budget, unreadable): not taken for a map
            continue;
        }
        r.role = Role{RoleKind::Step, std::string(step_name(StepId::attn)), t.name, "", block_in_name(t.name), capture_module(t.name)};
        r.by_values = true;
        r.averaged = t.shape.size() == 3;
        maps.push_back(&r);
    }
    const bool numbered = std::all_of(maps.begin(), maps.end(), [](const FileRole* r) { return r->role.block.has_value(); });
    for (std::size_t i = 0; i < maps.size() && maps.size() > 1 && !numbered; ++i) maps[i]->role.block = i;
    return roles;
}

std::vector<UserStep> load_user_steps(const TensorSource& source, std::optional<std::size_t> block) {
    std::vector<UserStep> steps;
    for (const FileRole& r : file_roles(source)) {
        const TensorInfo& t = *r.tensor;
        if (r.role.kind != RoleKind::Step || !in_block(r.role, block)) continue;
        if (t.shape.empty() && t.problem.empty())
            throw FileError(Message(Msg::steps_scalar, {{"file", source.path()}, {"name", t.name}, {"step", r.role.name}}));
        Array values = source.load(t.name);
        if (r.averaged) {  // [B, N, N'] -> [B, 1, N, N']
            Array as4 = make_array({t.shape[0], 1, t.shape[1], t.shape[2]});
            std::copy(values.data(), values.data() + values.size(), as4.data());
            values = std::move(as4);
        }
        steps.push_back({r.role.name, t.name, t.dtype, std::move(values)});
    }
    return steps;
}

std::optional<std::size_t> infer_heads(const TensorSource& source, const std::vector<UserStep>& steps) {
    for (const char* key : {"num_heads", "heads"}) {
        const auto it = source.metadata().find(key);
        if (it != source.metadata().end() && !it->second.empty() && it->second.size() < 9 &&
            it->second.find_first_not_of("0123456789") == std::string::npos)
            return std::stoul(it->second);
    }
    for (StepId step : {StepId::attn, StepId::attn_drop, StepId::scaled, StepId::scores, StepId::q, StepId::k, StepId::v,
                        StepId::context})
        for (const UserStep& s : steps)
            if (s.step == step && s.values.dimension() == 4) return s.values.shape()[1];
    return std::nullopt;
}

CheckReport compare_steps(const Trace& reference, const AttentionWeights& weights, const std::vector<UserStep>& user) {
    std::vector<const UserStep*> ordered;
    for (const UserStep& u : user) ordered.push_back(&u);
    std::stable_sort(ordered.begin(), ordered.end(),
                     [](const UserStep* a, const UserStep* b) { return step_index(a->step) < step_index(b->step); });
    KnownBugs bugs(reference, weights);
    CheckReport report;
    for (const UserStep* u : ordered)
        report.steps.push_back(compare_step(*u, reference.at(u->step), bugs, reference.config.head_dim()));
    return report;
}

const StepComparison* CheckReport::first_divergence() const {
    for (const auto& s : steps)
        if (!s.ok()) return &s;
    return nullptr;
}

StepDifference to_step_difference(const StepComparison& c, const std::vector<std::string>& axes) {
    StepDifference d;
    d.step = c.step;
    d.finding = finding_name(c.finding);
    d.diagnosis = c.diagnosis;
    d.max_error = c.max_error;
    d.tolerance = c.tolerance;
    d.ok = c.ok();
    if (c.difference) d.difference = Tensor{*c.difference, axes};
    return d;
}

}  // namespace attnscope
