// Follow an element: where one element of a step comes from, and what it feeds.
//
// Pure index arithmetic over the pipeline's graph (no tensor is read): a reshape keeps the
// row-major position, a permute moves the index's entries, unbind(0) fixes the first axis, a score
// (b, h, i, j) reads row i of q[b, h] and column j of k_t[b, h], a context element (b, h, i, d)
// row i of attn[b, h] and column d of v[b, h], a linear output row its input row, a softmax
// element its whole row. Sets of elements are unions of boxes (one [begin, end) range per axis),
// so a whole row of a ViT-B tensor is one box, not 768 indices.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "bug_zoo.hpp"
#include "config.hpp"
#include "tensor.hpp"

namespace attnscope {

struct Range {
    std::size_t begin = 0, end = 0;  // [begin, end)
    bool operator==(const Range& o) const { return begin == o.begin && end == o.end; }
};
using Box = std::vector<Range>;  // one range per axis
using Boxes = std::vector<Box>;

Box element_box(const Shape& index);            // the box holding one element
std::size_t element_count(const Boxes& boxes);  // (boxes may overlap only after union of sources: counts distinct)
bool contains(const Boxes& boxes, const Shape& index);
// "[0, 1, 2, :]" for a box over shape; "[0, 1, 0:3, 4] + 2 more boxes" for several.
std::string format_boxes(const Boxes& boxes, const Shape& shape, std::size_t max_boxes = 2);

// How a step reads one of its inputs.
enum class EdgeKind {
    Same,            // elementwise: scale, dropout, identity
    Reshape,         // row-major order kept
    Permute,         // out axis i is input axis dims[i] (transpose too)
    Select,          // unbind: input axis `axis` fixed at `index`
    Linear,          // out [..., o] reads the input row [..., :]
    MatmulLeft,      // out [..., n, m] reads a [..., n, :]
    MatmulRight,     // out [..., n, m] reads b [..., :, m]
    SoftmaxLast,     // out [..., n, m] reads its row [..., n, :]
    SoftmaxColumns,  // softmax(dim=-2): out [..., n, m] reads its column [..., :, m]
};

struct Edge {
    std::string input;
    EdgeKind kind = EdgeKind::Same;
    std::vector<std::size_t> dims;    // Permute
    std::size_t axis = 0, index = 0;  // Select
};

struct GraphNode {
    std::string step;
    Shape shape;
    std::vector<Edge> inputs;
};

// The steps of run_attention in order (those of the buggy code for a zoo bug: no k_t and nothing
// after v for KNotTransposed, no context_t for MergeWithoutTranspose).
std::vector<GraphNode> attention_graph(const AttentionConfig& config, Bug bug = Bug::None);

// The elements of one step that are related to the followed element.
struct Related {
    std::string step;
    Shape shape;
    Boxes boxes;
    bool source = false;  // an earlier step (where it comes from); false: a later step (what it feeds)
};

// For every other step of the graph: the elements the followed one comes from (earlier steps) or
// feeds (later steps), in pipeline order. Steps it is not related to are left out. Throws
// std::out_of_range for an unknown step or an index outside its shape.
std::vector<Related> follow_element(const std::vector<GraphNode>& graph, const std::string& step, const Shape& index);

// One edge, backwards and forwards (exposed for the tests).
Boxes sources_through(const Edge& edge, const Shape& out_shape, const Shape& in_shape, const Box& out_box);
Boxes feeds_through(const Edge& edge, const Shape& out_shape, const Shape& in_shape, const Box& in_box);

}  // namespace attnscope
