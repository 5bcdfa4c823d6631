// follow_element: boxes of indices pushed backwards and forwards through the pipeline's graph.
//
// [SECTION] Boxes
// [SECTION] Reshape: a box as row-major runs, a run as boxes
// [SECTION] One edge
// [SECTION] The graph of run_attention (and of each zoo bug)
// [SECTION] follow_element
#include "provenance.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>

namespace attnscope {

// ============================================================================================
// [SECTION] Boxes
// ============================================================================================
Box element_box(const Shape& index) {
    Box b;
    for (std::size_t i : index) b.push_back({i, i + 1});
    return b;
}

std::size_t element_count(const Boxes& boxes) {
    std::size_t n = 0;
    for (const Box& b : boxes) {
        std::size_t k = 1;
        for (const Range& r : b) k *= r.end - r.begin;
        n += k;
    }
    return n;
}

bool contains(const Boxes& boxes, const Shape& index) {
    for (const Box& b : boxes) {
        bool in = b.size() == index.size();
        for (std::size_t i = 0; in && i < b.size(); ++i) in = index[i] >= b[i].begin && index[i] < b[i].end;
        if (in) return true;
    }
    return false;
}

std::string format_boxes(const Boxes& boxes, const Shape& shape, std::size_t max_boxes) {
    std::string text;
    for (std::size_t k = 0; k < boxes.size() && k < max_boxes; ++k) {
        const Box& b = boxes[k];
        text += k ? " " : "";
        text += "[";
        for (std::size_t i = 0; i < b.size(); ++i) {
            text += i ? ", " : "";
            // One index is written as the index even when it spans the axis (B = 1: "[0, ...]").
            if (b[i].end == b[i].begin + 1) text += std::to_string(b[i].begin);
            else if (b[i].begin == 0 && i < shape.size() && b[i].end == shape[i]) text += ":";
            else text += std::to_string(b[i].begin) + ":" + std::to_string(b[i].end);
        }
        text += "]";
    }
    if (boxes.size() > max_boxes) text += " + " + std::to_string(boxes.size() - max_boxes) + " more boxes";
    return text;
}

namespace {

bool box_empty(const Box& b) {
    for (const Range& r : b)
        if (r.end <= r.begin) return true;
    return false;
}

bool inside(const Box& a, const Box& b) {  // a within b
    for (std::size_t i = 0; i < a.size(); ++i)
        if (a[i].begin < b[i].begin || a[i].end > b[i].end) return false;
    return true;
}

// Joins boxes that differ in one axis where their ranges touch (sort and sweep, one axis at a time,
// so tens of thousands of boxes stay cheap), then drops boxes inside others when few are left.
Boxes simplify(Boxes boxes) {
    boxes.erase(std::remove_if(boxes.begin(), boxes.end(), box_empty), boxes.end());
    if (boxes.empty()) return boxes;
    const std::size_t rank = boxes.front().size();
    for (bool changed = true; changed;) {
        changed = false;
        for (std::size_t axis = 0; axis < rank; ++axis) {
            const auto others_less = [axis, rank](const Box& a, const Box& b) {
                for (std::size_t i = 0; i < rank; ++i) {
                    if (i == axis) continue;
                    if (a[i].begin != b[i].begin) return a[i].begin < b[i].begin;
                    if (a[i].end != b[i].end) return a[i].end < b[i].end;
                }
                return a[axis].begin < b[axis].begin;
            };
            std::sort(boxes.begin(), boxes.end(), others_less);
            Boxes joined;
            joined.reserve(boxes.size());
            for (Box& b : boxes) {
                if (!joined.empty()) {
                    Box& last = joined.back();
                    bool same_others = true;
                    for (std::size_t i = 0; same_others && i < rank; ++i) same_others = i == axis || last[i] == b[i];
                    if (same_others && last[axis].end >= b[axis].begin) {
                        last[axis].end = std::max(last[axis].end, b[axis].end);
                        continue;
                    }
                }
                joined.push_back(std::move(b));
            }
            changed |= joined.size() < boxes.size();
            boxes = std::move(joined);
        }
    }
    if (boxes.size() <= 256)
        for (std::size_t j = 0; j < boxes.size();) {
            bool covered = false;
            for (std::size_t i = 0; i < boxes.size() && !covered; ++i) covered = i != j && inside(boxes[j], boxes[i]);
            if (covered) boxes.erase(boxes.begin() + static_cast<std::ptrdiff_t>(j));
            else ++j;
        }
    std::sort(boxes.begin(), boxes.end(), [](const Box& a, const Box& b) {
        for (std::size_t i = 0; i < a.size(); ++i)
            if (a[i].begin != b[i].begin) return a[i].begin < b[i].begin;
        return false;
    });
    return boxes;
}

// ============================================================================================
// [SECTION] Reshape
// ============================================================================================
Shape row_major_strides(const Shape& shape) {
    Shape s(shape.size(), 1);
    for (std::size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * shape[i];
    return s;
}

// The box as runs [begin, end) of row-major flat positions (adjacent runs joined).
std::vector<Range> flat_runs(const Box& box, const Shape& shape) {
    const std::size_t rank = shape.size();
    if (rank == 0) return {{0, 1}};
    const Shape stride = row_major_strides(shape);
    // The axes after `run_axis` are covered fully: each combination of the outer indices is one run.
    std::size_t run_axis = rank - 1;
    while (run_axis > 0 && box[run_axis].begin == 0 && box[run_axis].end == shape[run_axis]) --run_axis;
    std::vector<Range> runs;
    Shape at(run_axis);
    for (std::size_t i = 0; i < run_axis; ++i) at[i] = box[i].begin;
    while (true) {
        std::size_t base = 0;
        for (std::size_t i = 0; i < run_axis; ++i) base += at[i] * stride[i];
        const Range r{base + box[run_axis].begin * stride[run_axis], base + box[run_axis].end * stride[run_axis]};
        if (!runs.empty() && runs.back().end == r.begin) runs.back().end = r.end;
        else runs.push_back(r);
        std::size_t i = run_axis;  // next combination of the outer indices
        while (i > 0) {
            --i;
            if (++at[i] < box[i].end) break;
            at[i] = box[i].begin;
            if (i == 0) return runs;
        }
        if (run_axis == 0) return runs;
    }
}

// The flat run [lo, hi) of the block under `prefix` (axes before `axis` fixed) as boxes.
void run_boxes(const Shape& shape, const Shape& stride, Box& prefix, std::size_t axis, std::size_t lo, std::size_t hi,
               Boxes& out) {
    if (lo >= hi) return;
    const std::size_t s = stride[axis];
    const std::size_t first = lo / s, last = (hi - 1) / s;
    auto emit = [&](std::size_t b, std::size_t e) {
        Box box = prefix;
        box.push_back({b, e});
        for (std::size_t i = axis + 1; i < shape.size(); ++i) box.push_back({0, shape[i]});
        out.push_back(std::move(box));
    };
    auto recurse = [&](std::size_t i, std::size_t sub_lo, std::size_t sub_hi) {
        prefix.push_back({i, i + 1});
        run_boxes(shape, stride, prefix, axis + 1, sub_lo, sub_hi, out);
        prefix.pop_back();
    };
    if (first == last && !(lo % s == 0 && hi - lo == s)) {
        recurse(first, lo - first * s, hi - first * s);
        return;
    }
    std::size_t full_begin = first, full_end = last + 1;
    if (lo % s != 0) {
        recurse(first, lo % s, s);
        full_begin = first + 1;
    }
    if (hi % s != 0) {
        full_end = last;
        recurse(last, 0, hi % s);
    }
    if (full_begin < full_end) emit(full_begin, full_end);
}

Boxes reshape_box(const Box& box, const Shape& from, const Shape& to) {
    Boxes out;
    const Shape stride = row_major_strides(to);
    for (const Range& r : flat_runs(box, from)) {
        Box prefix;
        if (to.empty()) out.push_back({});
        else run_boxes(to, stride, prefix, 0, r.begin, r.end, out);
    }
    return out;
}

}  // namespace

// ============================================================================================
// [SECTION] One edge
// ============================================================================================
Boxes sources_through(const Edge& e, const Shape& out_shape, const Shape& in_shape, const Box& o) {
    const std::size_t r = o.size();
    switch (e.kind) {
        case EdgeKind::Same: return {o};
        case EdgeKind::Reshape: return reshape_box(o, out_shape, in_shape);
        case EdgeKind::Permute: {
            Box in(r);
            for (std::size_t i = 0; i < r; ++i) in[e.dims[i]] = o[i];
            return {in};
        }
        case EdgeKind::Select: {
            Box in = o;
            in.insert(in.begin() + static_cast<std::ptrdiff_t>(e.axis), Range{e.index, e.index + 1});
            return {in};
        }
        case EdgeKind::Linear:
        case EdgeKind::MatmulLeft:
        case EdgeKind::SoftmaxLast: {
            Box in = o;
            in[r - 1] = {0, in_shape[r - 1]};
            return {in};
        }
        case EdgeKind::MatmulRight:
        case EdgeKind::SoftmaxColumns: {
            Box in = o;
            in[r - 2] = {0, in_shape[r - 2]};
            return {in};
        }
    }
    return {};
}

Boxes feeds_through(const Edge& e, const Shape& out_shape, const Shape& in_shape, const Box& in) {
    const std::size_t r = in.size();
    switch (e.kind) {
        case EdgeKind::Same: return {in};
        case EdgeKind::Reshape: return reshape_box(in, in_shape, out_shape);
        case EdgeKind::Permute: {
            Box o(r);
            for (std::size_t i = 0; i < r; ++i) o[i] = in[e.dims[i]];
            return {o};
        }
        case EdgeKind::Select: {
            if (in[e.axis].begin > e.index || in[e.axis].end <= e.index) return {};
            Box o = in;
            o.erase(o.begin() + static_cast<std::ptrdiff_t>(e.axis));
            return {o};
        }
        case EdgeKind::Linear:
        case EdgeKind::SoftmaxLast: {
            Box o = in;
            o[r - 1] = {0, out_shape[r - 1]};
            return {o};
        }
        case EdgeKind::MatmulLeft: {  // a [..., n, k] -> out [..., n, :]
            Box o = in;
            o[r - 1] = {0, out_shape[r - 1]};
            return {o};
        }
        case EdgeKind::MatmulRight: {  // b [..., k, m] -> out [..., :, m]
            Box o = in;
            o[r - 2] = {0, out_shape[r - 2]};
            return {o};
        }
        case EdgeKind::SoftmaxColumns: {
            Box o = in;
            o[r - 2] = {0, out_shape[r - 2]};
            return {o};
        }
    }
    return {};
}

// ============================================================================================
// [SECTION] The graph
// ============================================================================================
namespace {

// How a step of the table reads its inputs, from its op (rank: of the step's shape).
std::vector<Edge> edges_of(const StepInfo& step, std::size_t rank) {
    const std::string in0(step_name(step.inputs.first)), in1(step_name(step.inputs.second));
    auto edge = [](const std::string& input, EdgeKind kind) { return Edge{input, kind, {}, 0, 0}; };
    switch (step.op) {
        case Op::input: return {};
        case Op::linear: return {edge(in0, EdgeKind::Linear)};
        case Op::reshape: return {edge(in0, EdgeKind::Reshape)};
        case Op::permute:
        case Op::transpose:
            return {Edge{in0, EdgeKind::Permute, std::vector<std::size_t>(step.dims.begin(), step.dims.begin() + rank), 0, 0}};
        case Op::unbind:
        case Op::select: return {Edge{in0, EdgeKind::Select, {}, 0, step.dims[0]}};
        case Op::matmul: return {edge(in0, EdgeKind::MatmulLeft), edge(in1, EdgeKind::MatmulRight)};
        case Op::softmax: return {edge(in0, EdgeKind::SoftmaxLast)};
        default: return {edge(in0, EdgeKind::Same)};  // scale, mask, dropout: elementwise
    }
}

GraphNode& node(std::vector<GraphNode>& g, StepId step) {
    for (GraphNode& n : g)
        if (n.step == step_name(step)) return n;
    throw std::logic_error("attention graph: no step " + std::string(step_name(step)));
}

// Drops a step from the graph, or (from_on) the step and every step after it.
void erase(std::vector<GraphNode>& g, StepId step, bool from_on = false) {
    const auto at = std::find_if(g.begin(), g.end(), [step](const GraphNode& n) { return n.step == step_name(step); });
    if (at == g.end()) throw std::logic_error("attention graph: no step " + std::string(step_name(step)));
    g.erase(at, from_on ? g.end() : at + 1);
}

Edge edge_from(StepId input, EdgeKind kind, std::vector<std::size_t> dims = {}) {
    return Edge{std::string(step_name(input)), kind, std::move(dims), 0, 0};
}

}  // namespace

std::vector<GraphNode> attention_graph(const AttentionConfig& cfg, Bug bug) {
    const std::size_t B = cfg.batch, N = cfg.tokens, h = cfg.heads, c = cfg.head_dim();
    std::vector<GraphNode> g;
    for (const StepInfo& step : attention_steps(cfg.reference)) {
        if (step.only_masked) continue;  // the graph is the unmasked forward's
        Shape shape = step_shape(step, cfg);
        g.push_back({std::string(step.name), shape, edges_of(step, shape.size())});
    }

    // The buggy code's graph: what its lines read instead.
    switch (bug) {
        case Bug::SplitHC3:  // .reshape(B, N, h, c, 3), then .permute(4, 0, 2, 1, 3)
            node(g, StepId::qkv_split).shape = {B, N, h, c, 3};
            node(g, StepId::qkv_heads).inputs = {edge_from(StepId::qkv_split, EdgeKind::Permute, {4, 0, 2, 1, 3})};
            break;
        case Bug::ReshapeWithoutPermute:  // .reshape(3, B, h, N, c) in place of the permute
            node(g, StepId::qkv_heads).inputs = {edge_from(StepId::qkv_split, EdgeKind::Reshape)};
            break;
        case Bug::KNotTransposed:  // q @ k fails: nothing after v
            erase(g, StepId::k_t, true);
            break;
        case Bug::SoftmaxDim2: node(g, StepId::attn).inputs[0].kind = EdgeKind::SoftmaxColumns; break;
        case Bug::MergeWithoutTranspose:  // (attn @ v).reshape(B, N, C)
            node(g, StepId::merged).inputs = {edge_from(StepId::context, EdgeKind::Reshape)};
            erase(g, StepId::context_t);
            break;
        default: break;
    }
    return g;
}

// ============================================================================================
// [SECTION] follow_element
// ============================================================================================
std::vector<Related> follow_element(const std::vector<GraphNode>& g, const std::string& step, const Shape& index) {
    std::map<std::string, std::size_t> at;
    for (std::size_t i = 0; i < g.size(); ++i) at[g[i].step] = i;
    const auto it = at.find(step);
    if (it == at.end()) throw std::out_of_range("follow_element: no step named '" + step + "'");
    const std::size_t start = it->second;
    const Shape& shape = g[start].shape;
    if (index.size() != shape.size()) throw std::out_of_range("follow_element: index rank differs from " + step + "'s");
    for (std::size_t i = 0; i < index.size(); ++i)
        if (index[i] >= shape[i]) throw std::out_of_range("follow_element: index outside " + step + "'s shape");

    std::vector<Boxes> back(g.size()), fwd(g.size());
    back[start] = fwd[start] = {element_box(index)};
    for (std::size_t i = start + 1; i-- > 0;) {  // sources: earlier steps, latest first
        back[i] = simplify(std::move(back[i]));
        for (const Edge& e : g[i].inputs) {
            const std::size_t j = at.at(e.input);
            for (const Box& b : back[i])
                for (Box& s : sources_through(e, g[i].shape, g[j].shape, b)) back[j].push_back(std::move(s));
        }
    }
    for (std::size_t i = start + 1; i < g.size(); ++i) {  // feeds: later steps
        for (const Edge& e : g[i].inputs) {
            const std::size_t j = at.at(e.input);
            if (j < start || fwd[j].empty()) continue;
            for (const Box& b : fwd[j])
                for (Box& f : feeds_through(e, g[i].shape, g[j].shape, b)) fwd[i].push_back(std::move(f));
        }
        fwd[i] = simplify(std::move(fwd[i]));
    }
    std::vector<Related> related;
    for (std::size_t i = 0; i < g.size(); ++i) {
        if (i == start) continue;
        Boxes& boxes = i < start ? back[i] : fwd[i];
        if (!boxes.empty()) related.push_back({g[i].step, g[i].shape, std::move(boxes), i < start});
    }
    return related;
}

}  // namespace attnscope
