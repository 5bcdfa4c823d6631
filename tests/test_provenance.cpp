// Tests of core/teach/provenance: the index maps of every layout step against a brute-force search.
//
// Truth from outside the index arithmetic: the recorded pipeline itself (run_buggy_attention, the
// real ops) run with qkv (and context) replaced by unique ids 0..n-1; every element of a layout
// step then holds the id of the element it came from, and the maps must find exactly that one.
#include <doctest/doctest.h>

#include <chrono>

#include "bug_zoo.hpp"
#include "provenance.hpp"

using namespace attnscope;

namespace {

Shape unravel(std::size_t flat, const Shape& shape) {
    Shape index(shape.size());
    for (std::size_t d = shape.size(); d-- > 0; flat /= shape[d]) index[d] = flat % shape[d];
    return index;
}

// The pipeline with `start`'s tensor replaced by its own flat positions (ids).
Trace run_with_ids(const AttentionConfig& cfg, Bug bug, const std::string& start) {
    RunHooks hooks;
    hooks.edit = [start](const Trace&, Step& step) {
        if (step.name != start) return;
        Tensor ids = step.tensor();
        float id = 0.0f;
        for (float& v : ids.values) v = id++;
        step.set_tensor(std::move(ids));
    };
    std::string failure;
    return run_buggy_attention(cfg, default_weights(cfg), default_input(cfg), bug, &failure, hooks);
}

const Related* find_related(const std::vector<Related>& related, const std::string& step) {
    for (const Related& r : related)
        if (r.step == step) return &r;
    return nullptr;
}

// The positions of `step` holding `id` (brute force over the whole tensor).
std::vector<Shape> positions_of(const Step& step, float id) {
    std::vector<Shape> found;
    const Shape shape = step.shape();
    for (std::size_t i = 0; i < step.tensor().values.size(); ++i)
        if (step.tensor().values.data()[i] == id) found.push_back(unravel(i, shape));
    return found;
}

// For every element of every layout step: sources and feeds among `layout` steps are exactly the
// elements holding the same id. Returns how many elements were checked.
std::size_t check_layout_chain(const AttentionConfig& cfg, Bug bug, const std::string& start,
                               const std::vector<std::string>& layout) {
    const Trace t = run_with_ids(cfg, bug, start);
    const auto graph = attention_graph(cfg, bug);
    std::vector<std::string> chain = {start};
    chain.insert(chain.end(), layout.begin(), layout.end());
    std::size_t checked = 0;
    for (const std::string& name : chain) {
        const Step& step = t.at(name);
        const Shape shape = step.shape();
        for (std::size_t i = 0; i < step.tensor().values.size(); ++i) {
            const Shape index = unravel(i, shape);
            const float id = step.tensor().values.data()[i];
            const auto related = follow_element(graph, name, index);
            for (const std::string& other : chain) {
                if (other == name) continue;
                CAPTURE(name);
                CAPTURE(other);
                CAPTURE(i);
                const std::vector<Shape> truth = positions_of(t.at(other), id);
                const Related* r = find_related(related, other);
                if (truth.empty()) {  // e.g. q's element does not reach k
                    CHECK(r == nullptr);
                    continue;
                }
                REQUIRE(r != nullptr);
                CHECK(element_count(r->boxes) == truth.size());
                for (const Shape& p : truth) CHECK(contains(r->boxes, p));
            }
            ++checked;
        }
    }
    return checked;
}

AttentionConfig config(std::size_t B, std::size_t N, std::size_t C, std::size_t h) {
    AttentionConfig cfg;
    cfg.batch = B;
    cfg.tokens = N;
    cfg.dim = C;
    cfg.heads = h;
    cfg.seed = 5;
    return cfg;
}

}  // namespace

TEST_CASE("layout steps: every element maps to exactly the element the real ops moved it from") {
    const std::vector<std::string> heads = {"qkv_split", "qkv_heads", "q", "k", "v", "k_t"};
    const std::vector<std::string> merge = {"context_t", "merged"};
    for (const AttentionConfig& cfg : {config(2, 5, 24, 4), config(3, 7, 20, 5), config(1, 4, 8, 1)}) {
        CAPTURE(cfg.tokens);
        // qkv, qkv_split, qkv_heads [.., 3C] + q, k, v [.., C] + k_t: 13 B N C elements
        CHECK(check_layout_chain(cfg, Bug::None, "qkv", heads) == 13 * cfg.batch * cfg.tokens * cfg.dim);
        CHECK(check_layout_chain(cfg, Bug::None, "context", merge) == 3 * cfg.batch * cfg.tokens * cfg.dim);
        CHECK(check_layout_chain(cfg, Bug::ReshapeWithoutPermute, "qkv", heads) > 0);
        CHECK(check_layout_chain(cfg, Bug::SplitHC3, "qkv", heads) > 0);
        CHECK(check_layout_chain(cfg, Bug::MergeWithoutTranspose, "context", {"merged"}) > 0);
    }
}

TEST_CASE("reshape without permute: the same shape with another layout - the maps differ") {
    const AttentionConfig cfg = config(2, 5, 24, 4);
    const auto right = attention_graph(cfg), wrong = attention_graph(cfg, Bug::ReshapeWithoutPermute);
    std::size_t differing = 0, total = 0;
    for (std::size_t b = 0; b < 2; ++b)
        for (std::size_t head = 0; head < 4; ++head)
            for (std::size_t n = 0; n < 5; ++n) {
                const Shape idx{b, head, n, 0};
                const auto r_all = follow_element(right, "q", idx), w_all = follow_element(wrong, "q", idx);
                const Related* r = find_related(r_all, "qkv");
                const Related* w = find_related(w_all, "qkv");
                REQUIRE((r && w));
                differing += !(r->boxes == w->boxes);
                ++total;
            }
    CHECK(differing > total / 2);
    // q[0, 1, 0, 0] is q of token 0 in head 1 (qkv[0, 0, 6]), but the reshape takes flat position 30 of
    // [B, N, 3, h, c] = [2, 5, 3, 4, 6]: (b 0, n 0, three 1, h 1, c 0), a number of k, qkv[0, 0, 30].
    const auto r_all = follow_element(right, "q", {0, 1, 0, 0}), w_all = follow_element(wrong, "q", {0, 1, 0, 0});
    const Related* r = find_related(r_all, "qkv");
    const Related* w = find_related(w_all, "qkv");
    CHECK(r->boxes == Boxes{element_box({0, 0, 6})});
    CHECK(w->boxes == Boxes{element_box({0, 0, 30})});
}

TEST_CASE("a score reads a row of q and a column of k_t - a context element a row of attn and a column of v") {
    const AttentionConfig cfg = config(2, 5, 24, 4);  // c = 6
    const auto g = attention_graph(cfg);
    const auto score = follow_element(g, "scores", {1, 2, 3, 4});
    CHECK(find_related(score, "q")->boxes == Boxes{{{1, 2}, {2, 3}, {3, 4}, {0, 6}}});
    CHECK(find_related(score, "k_t")->boxes == Boxes{{{1, 2}, {2, 3}, {0, 6}, {4, 5}}});
    CHECK(find_related(score, "k")->boxes == Boxes{{{1, 2}, {2, 3}, {4, 5}, {0, 6}}});
    CHECK(find_related(score, "v") == nullptr);
    CHECK(find_related(score, "input")->boxes == Boxes{{{1, 2}, {3, 5}, {0, 24}}});  // tokens 3 and 4
    CHECK(find_related(score, "qkv")->boxes == Boxes{{{1, 2}, {3, 4}, {12, 18}}, {{1, 2}, {4, 5}, {36, 42}}});
    // feeds: the softmax row, the context row of that head, token 3 of the merge, every output of token 3
    CHECK(find_related(score, "attn")->boxes == Boxes{{{1, 2}, {2, 3}, {3, 4}, {0, 5}}});
    CHECK(find_related(score, "context")->boxes == Boxes{{{1, 2}, {2, 3}, {3, 4}, {0, 6}}});
    CHECK(find_related(score, "merged")->boxes == Boxes{{{1, 2}, {3, 4}, {12, 18}}});
    CHECK(find_related(score, "out")->boxes == Boxes{{{1, 2}, {3, 4}, {0, 24}}});
    CHECK(find_related(score, "q")->source);
    CHECK_FALSE(find_related(score, "attn")->source);

    const auto ctx = follow_element(g, "context", {0, 3, 1, 2});
    CHECK(find_related(ctx, "attn_drop")->boxes == Boxes{{{0, 1}, {3, 4}, {1, 2}, {0, 5}}});
    CHECK(find_related(ctx, "v")->boxes == Boxes{{{0, 1}, {3, 4}, {0, 5}, {2, 3}}});
    CHECK(find_related(ctx, "context_t")->boxes == Boxes{{{0, 1}, {1, 2}, {3, 4}, {2, 3}}});
    CHECK(find_related(ctx, "merged")->boxes == Boxes{{{0, 1}, {1, 2}, {20, 21}}});
}

TEST_CASE("the zoo's graphs leave out the steps the buggy code lacks") {
    const AttentionConfig cfg = config(2, 5, 24, 4);
    CHECK(attention_graph(cfg, Bug::KNotTransposed).back().step == "v");
    for (const GraphNode& n : attention_graph(cfg, Bug::MergeWithoutTranspose)) CHECK(n.step != "context_t");
    CHECK(attention_graph(cfg).size() == 17);
    CHECK_THROWS_AS(follow_element(attention_graph(cfg), "scores", {0, 0, 0, 5}), std::out_of_range);
    CHECK_THROWS_AS(follow_element(attention_graph(cfg), "nope", {0}), std::out_of_range);
}

TEST_CASE("ViT-B sizes stay cheap: an output element back to the input in a few boxes") {
    const AttentionConfig cfg = config(1, 197, 768, 12);
    const auto g = attention_graph(cfg);
    const auto t0 = std::chrono::steady_clock::now();
    const auto out = follow_element(g, "out", {0, 100, 5});
    const auto score = follow_element(g, "scores", {0, 3, 10, 20});
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    MESSAGE("follow_element out[0, 100, 5] and scores[0, 3, 10, 20] at ViT-B sizes: " << ms << " ms");
    for (const Related& r : out) CHECK(r.boxes.size() <= 4);
    CHECK(find_related(out, "input")->boxes == Boxes{{{0, 1}, {0, 197}, {0, 768}}});
    CHECK(find_related(score, "out")->boxes == Boxes{{{0, 1}, {10, 11}, {0, 768}}});
    CHECK(format_boxes(find_related(score, "q")->boxes, {1, 12, 197, 64}) == "[0, 3, 10, :]");  // B = 1: the index
}

TEST_CASE("ViT-B sizes with the (h c three) split: every third column of qkv stays exact and cheap") {
    const AttentionConfig cfg = config(1, 197, 768, 12);
    const auto t0 = std::chrono::steady_clock::now();
    const auto out = follow_element(attention_graph(cfg, Bug::SplitHC3), "out", {0, 100, 5});
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    MESSAGE("follow_element out[0, 100, 5] with the (h c three) split at ViT-B sizes: " << ms << " ms");
    // q of token 100 (columns 0 mod 3), k and v of every token (columns 1 and 2 mod 3).
    const Related* qkv = find_related(out, "qkv");
    REQUIRE(qkv);
    CHECK(element_count(qkv->boxes) == 768 + 197 * 768 * 2);
    CHECK(contains(qkv->boxes, {0, 100, 0}));
    CHECK_FALSE(contains(qkv->boxes, {0, 99, 0}));
    CHECK(contains(qkv->boxes, {0, 99, 1}));
}
