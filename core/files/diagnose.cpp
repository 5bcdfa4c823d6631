// compare_steps: the user's steps against the reference, and the known bugs replayed.
//
// [SECTION] Closeness
// [SECTION] Known bugs, replayed on the reference's tensors
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

#include "checks.hpp"
#include "io.hpp"
#include "ops.hpp"

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
// [SECTION] Known bugs
// ============================================================================================
struct KnownBug {
    Finding finding;
    std::string diagnosis;
    std::map<std::string, Array> steps;  // the steps whose numbers the bug changes
};

enum class TailBug { None, NoScale, DoubleScale, SoftmaxColumns, ScaleAfterSoftmax, MergeNoTranspose };

// softmax(dim=-2): each column sums to 1.
Tensor softmax_columns(const Tensor& x) { return transpose(softmax_last(transpose(x, 2, 3)), 2, 3); }

// Everything after q, k, v, as the reference computes it but for one bug (eval mode).
std::map<std::string, Array> replay_tail(const Trace& ref, const AttentionWeights& w, const Tensor& q,
                                         const Tensor& k, const Tensor& v, TailBug bug) {
    const AttentionConfig& cfg = ref.config;
    const float s = attention_scale(cfg);  // self.scale, or 1 with --no-scale
    const Tensor k_t = transpose(k, 2, 3);                                                  // [B, h, c, N']
    const Tensor scores = matmul(q, k_t, {"B", "h", "N", "N'"});                            // [B, h, N, N']
    const Tensor scaled = bug == TailBug::NoScale || bug == TailBug::ScaleAfterSoftmax ? scores
                          : bug == TailBug::DoubleScale ? scale(scale(scores, s), s)
                                                        : scale(scores, s);
    Tensor attn = bug == TailBug::SoftmaxColumns ? softmax_columns(scaled) : softmax_last(scaled);
    if (bug == TailBug::ScaleAfterSoftmax) attn = scale(attn, s);
    const Tensor context = matmul(attn, v, {"B", "h", "N", "c"});  // [B, h, N, c]
    const Tensor context_t = transpose(context, 1, 2);              // [B, N, h, c]
    const Shape bnc{cfg.batch, cfg.tokens, cfg.dim};
    const Tensor merged = reshape(bug == TailBug::MergeNoTranspose ? context : context_t, bnc, {"B", "N", "C"});
    const Tensor out = linear(merged, w.proj_weight, &w.proj_bias, "C");  // [B, N, C]
    return {{"k_t", k_t.values},         {"scores", scores.values},   {"scaled", scaled.values},
            {"attn", attn.values},       {"attn_drop", attn.values},  {"context", context.values},
            {"context_t", context_t.values}, {"merged", merged.values}, {"out", out.values},
            {"out_drop", out.values}};
}

KnownBug tail_bug(const Trace& ref, const AttentionWeights& w, TailBug bug, Finding finding, std::string diagnosis) {
    return {finding, std::move(diagnosis),
            replay_tail(ref, w, ref.at("q").tensor(), ref.at("k").tensor(), ref.at("v").tensor(), bug)};
}

// q, k, v from another head layout, and everything after them.
KnownBug head_bug(const Trace& ref, const AttentionWeights& w, Finding finding, std::string diagnosis,
                  std::map<std::string, Array> heads, const Tensor& q, const Tensor& k, const Tensor& v) {
    KnownBug bug{finding, std::move(diagnosis), replay_tail(ref, w, q, k, v, TailBug::None)};
    heads["q"] = q.values;
    heads["k"] = k.values;
    heads["v"] = v.values;
    for (auto& [step, values] : heads) bug.steps[step] = std::move(values);
    return bug;
}

// self.qkv(x).reshape(B, N, <order of three, h, c>), then permuted to [3, B, h, N, c] by name.
KnownBug split_bug(const Trace& ref, const AttentionWeights& w, const std::vector<std::string>& order) {
    const AttentionConfig& cfg = ref.config;
    const std::map<std::string, std::size_t> size{{"three", 3}, {"h", cfg.heads}, {"c", cfg.head_dim()}};
    const Axes split_axes{"B", "N", order[0], order[1], order[2]};
    const Tensor split = reshape(ref.at("qkv").tensor(),
                                 {cfg.batch, cfg.tokens, size.at(order[0]), size.at(order[1]), size.at(order[2])},
                                 split_axes);                     // [B, N, ?, ?, ?]
    std::vector<std::size_t> dims;                                // -> [three, B, h, N, c]
    for (const char* axis : {"three", "B", "h", "N", "c"})
        dims.push_back(std::find(split_axes.begin(), split_axes.end(), axis) - split_axes.begin());
    const Tensor heads = permute(split, dims);
    return head_bug(ref, w, Finding::Split,
                    "the same values under another split of 3C: (" + order[0] + " " + order[1] + " " + order[2] +
                        ") instead of (three h c); reshape self.qkv(x) to (B, N, 3, num_heads, C // num_heads)",
                    {{"qkv_split", split.values}, {"qkv_heads", heads.values}}, select(heads, 0, 0),
                    select(heads, 0, 1), select(heads, 0, 2));
}

// qkv.reshape(3, B, h, N, c): the right numbers poured into the heads' shape without the permute.
KnownBug qkv_reshape_bug(const Trace& ref, const AttentionWeights& w) {
    const AttentionConfig& cfg = ref.config;
    const Tensor heads = reshape(ref.at("qkv_split").tensor(), {3, cfg.batch, cfg.heads, cfg.tokens, cfg.head_dim()},
                                 {"3", "B", "h", "N", "c"});  // [3, B, h, N, c] in [B, N, 3, h, c] memory order
    return head_bug(ref, w, Finding::AxisOrder,
                    "the same values in another axis order: qkv reshaped to (3, B, h, N, c) without the permute; "
                    "use .reshape(B, N, 3, h, c).permute(2, 0, 3, 1, 4)",
                    {{"qkv_heads", heads.values}}, select(heads, 0, 0), select(heads, 0, 1), select(heads, 0, 2));
}

// q.reshape(B, h, N, c) on a [B, N, h, c] tensor: heads and tokens mixed, without the transpose.
KnownBug heads_reshape_bug(const Trace& ref, const AttentionWeights& w) {
    auto unpermuted = [&](const char* step) {
        const Tensor& t = ref.at(step).tensor();  // [B, h, N, c]
        return reshape(transpose(t, 1, 2), shape_of(t.values), t.axes);
    };
    return head_bug(ref, w, Finding::AxisOrder,
                    "the same values in another axis order: q, k, v reshaped from [B, N, h, c] to [B, h, N, c] "
                    "without the permute; use .permute(0, 2, 1, 3) (or .transpose(1, 2))",
                    {}, unpermuted("q"), unpermuted("k"), unpermuted("v"));
}

// Every known bug, built on first use (each replays the pipeline's tail).
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
            return tail_bug(ref, w, TailBug::SoftmaxColumns, Finding::SoftmaxAxis,
                            "softmax over the wrong axis: columns sum to 1 instead of rows; use softmax(dim=-1)");
        });
        add([&ref, &w, root_c] {
            return tail_bug(ref, w, TailBug::NoScale, Finding::Scale,
                            "scale missing: the scores are not multiplied by self.scale = c^-0.5 (ratio " + root_c + ")");
        });
        add([&ref, &w, root_c] {
            return tail_bug(ref, w, TailBug::DoubleScale, Finding::Scale,
                            "scale applied twice: the scores are multiplied by c^-0.5 twice (ratio " + root_c +
                                "); multiply by self.scale once");
        });
        add([&ref, &w] {
            return tail_bug(ref, w, TailBug::ScaleAfterSoftmax, Finding::ScaleAfterSoftmax,
                            "scale applied after softmax: softmax(q @ k^T) * scale; multiply the scores by self.scale "
                            "before the softmax");
        });
        add([&ref, &w] {
            return tail_bug(ref, w, TailBug::MergeNoTranspose, Finding::MergeTranspose,
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
    } else if (same_shape && (user.step == "attn" || user.step == "attn_drop") && columns_sum_to_one(user.values)) {
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
std::vector<UserStep> load_user_steps(const TensorSource& source, std::optional<std::size_t> block) {
    std::vector<UserStep> steps;
    for (const TensorInfo& t : source.tensors()) {
        const Role role = recognize_role(t.name, t.shape);
        if (role.kind != RoleKind::Step || !in_block(role, block)) continue;
        if (t.shape.empty() && t.problem.empty())
            throw FileError(source.path() + ": tensor '" + t.name + "' is a 0-d scalar; step " + role.name +
                            " needs at least one axis");
        steps.push_back({role.name, t.name, t.dtype, source.load(t.name)});
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
    for (const char* step : {"attn", "attn_drop", "scaled", "scores", "q", "k", "v", "context"})
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
