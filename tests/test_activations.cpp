// trace_from_file on the committed fixtures (tests/data/activations): loaded vs computed steps,
// differences and their findings, attention-map-only files, blocks, checkpoints, bad files.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "activations.hpp"
#include "io.hpp"
#include "roles.hpp"

using namespace attnscope;

namespace {

const std::string kData = std::string(ATTNSCOPE_TEST_DATA) + "/activations/";

FileTrace open_trace(const std::string& name, std::optional<std::size_t> block = std::nullopt,
                     std::optional<std::size_t> heads = std::nullopt) {
    return trace_from_file(TensorSource::open(kData + name), block, heads);
}

std::vector<std::string> names(const Trace& t) {
    std::vector<std::string> n;
    for (const Step& s : t.steps) n.push_back(s.name);
    return n;
}

const StepDifference* first_divergence(const Trace& t) {
    for (const StepDifference& d : t.differences)
        if (!d.ok) return &d;
    return nullptr;
}

}  // namespace

TEST_CASE("a buggy dump: loaded steps, the rest computed, the first divergence as expected.json says") {
    std::ifstream in(kData + "expected.json");
    const nlohmann::json expected = nlohmann::json::parse(in);
    for (const auto& [file, e] : expected.items()) {
        if (!e["options"].empty()) continue;  // needs --weights from another file
        CAPTURE(file);
        const FileTrace ft = open_trace(file);
        const Trace& t = ft.trace;
        CHECK(t.source_path == kData + file);
        CHECK(t.steps.size() == attention_step_names().size());  // input + weights: every step is there
        const StepDifference* d = first_divergence(t);
        REQUIRE(d != nullptr);
        CHECK(d->step == e["first_divergence"].get<std::string>());
        CHECK(d->finding == e["finding"].get<std::string>());
        CHECK(d->diagnosis.find(e["phrase"].get<std::string>()) != std::string::npos);
        const Step& s = t.at(d->step);
        CHECK(s.origin == StepOrigin::Loaded);
        CHECK(s.origin_detail.find(kData + file + ": ") == 0);
        if (d->difference) CHECK(shape_of(d->difference->values) == s.shape());
        CHECK(d->max_error > d->tolerance);
        // Steps the file lacks are computed by the reference; their shapes are checked.
        bool any_computed = false;
        for (const Step& step : t.steps) any_computed |= step.origin == StepOrigin::Computed;
        CHECK(any_computed);
        CHECK(!t.checks.shapes.empty());
        CHECK(t.checks.shapes_ok());
        CHECK(t.checks.nonfinite.ok());
    }
}

TEST_CASE("loaded steps keep the pinned labels and the file's tensor name") {
    const FileTrace ft = open_trace("bug_split.npz");
    const Step& attn = ft.trace.at("attn");
    CHECK(attn.origin == StepOrigin::Loaded);
    CHECK(attn.origin_detail == kData + "bug_split.npz: attn_weights");
    CHECK(attn.axes() == Axes{"B", "h", "N", "N'"});
    CHECK(ft.trace.at("k_t").origin == StepOrigin::Computed);
    CHECK(ft.trace.config.heads == 4);
    CHECK(ft.trace.config.dim == 24);
    CHECK(ft.trace.checks.row_sum("attn") != nullptr);
    // input matches the reference exactly (it is the reference's input).
    const StepDifference* in = ft.trace.difference("input");
    REQUIRE(in != nullptr);
    CHECK(in->ok);
    CHECK(in->finding == "ok");
}

TEST_CASE("a file with only attention maps gives just those steps, block 0 first") {
    const FileTrace ft = open_trace("attn_maps.npz");
    CHECK(ft.attention_maps_only);
    CHECK(ft.blocks == std::vector<std::size_t>{0, 1});
    CHECK(ft.block == std::optional<std::size_t>(0));
    CHECK(names(ft.trace) == std::vector<std::string>{"attn"});
    CHECK(ft.trace.differences.empty());
    const RowSumCheck* rs = ft.trace.checks.row_sum("attn");
    REQUIRE(rs != nullptr);
    CHECK(rs->ok());
    CHECK(ft.trace.checks.shapes.empty());
    CHECK(ft.trace.config.heads == 4);
    const FileTrace b1 = open_trace("attn_maps.npz", 1);
    CHECK(b1.block == std::optional<std::size_t>(1));
    CHECK(b1.trace.at("attn").origin_detail == kData + "attn_maps.npz: blocks.1.attn.attn");
    CHECK_THROWS_WITH_AS(open_trace("attn_maps.npz", 7), doctest::Contains("has no block 7; its blocks are 0, 1"),
                         FileError);
}

TEST_CASE("a 3-D attention map [h, N, N'] gets the labels h, N, N' and per-head row sums") {
    std::filesystem::create_directories("/tmp/attnscope_test_attn3d");
    const std::string path = "/tmp/attnscope_test_attn3d/attn.npy";
    Array a = make_array({3, 4, 4});
    a.fill(0.25f);
    write_npy(path, a);
    const FileTrace ft = trace_from_file(TensorSource::open(path));
    REQUIRE(ft.trace.steps.size() == 1);
    CHECK(ft.trace.steps[0].name == "attn");
    CHECK(ft.trace.steps[0].axes() == Axes{"h", "N", "N'"});
    const RowSumCheck* rs = ft.trace.checks.row_sum("attn");
    REQUIRE(rs != nullptr);
    CHECK(rs->head_max_error.size() == 3);
    CHECK(rs->ok());
}

TEST_CASE("a multi-block export: each block its own trace, all steps match the reference") {
    for (std::size_t block : {0u, 1u}) {
        CAPTURE(block);
        const FileTrace ft = open_trace("timm_export.safetensors", block);
        CHECK(ft.block == std::optional<std::size_t>(block));
        CHECK(ft.blocks == std::vector<std::size_t>{0, 1});
        CHECK(ft.trace.steps.size() == attention_step_names().size());
        CHECK(!ft.trace.differences.empty());
        CHECK(first_divergence(ft.trace) == nullptr);
    }
    const FileTrace hf = open_trace("hf_export.safetensors", 1, 4);
    CHECK(first_divergence(hf.trace) == nullptr);
    CHECK(hf.trace.at("q").origin == StepOrigin::Loaded);
    CHECK(hf.trace.at("scores").origin == StepOrigin::Computed);
}

TEST_CASE("a checkpoint without activations runs the reference on a seeded input, with h given: its state dict does not say it") {
    const TensorSource timm = TensorSource::open(kData + "timm_model.safetensors");
    CHECK_THROWS_WITH_AS(trace_from_file(timm, 1), doctest::Contains("pass --heads H with H one of 1, 2, 3, 4, 6, 8, 12, 24"),
                         HeadsUnknown);
    const FileTrace ft = open_trace("timm_model.safetensors", 1, 4);
    CHECK(ft.block == std::optional<std::size_t>(1));
    CHECK(ft.trace.steps.size() == attention_step_names().size());
    for (const Step& s : ft.trace.steps) CHECK(s.origin == StepOrigin::Computed);
    CHECK(ft.trace.config.dim == 24);
    CHECK(ft.trace.config.tokens == 5);  // from pos_embed [1, 5, 24]
    const std::vector<std::string> notes = english(ft.notes);
    CHECK(std::find(notes.begin(), notes.end(), "heads h = 4 (chosen)") != notes.end());
    CHECK(open_trace("timm_model.safetensors", 0, 4).trace.config.heads == 4);
}

TEST_CASE("a folder of .npy without weights shows only its steps and says why") {
    const FileTrace ft = open_trace("bug_heads_reshape");
    for (const Step& s : ft.trace.steps) CHECK(s.origin == StepOrigin::Loaded);
    CHECK(names(ft.trace) == std::vector<std::string>{"input", "q", "k", "v", "attn", "out"});
    bool said = false;
    for (const std::string& n : english(ft.notes)) said |= n.find("no attention weights") != std::string::npos;
    CHECK(said);
}

TEST_CASE("bad files: a FileError naming the file, or a trace that flags the NaN") {
    const char* bad[] = {
        "axes33.npy", "bomb_declared.npz", "bomb_inflates.npz", "nan_input.npy",   "lying_header.npz",
        "scalar.npy", "scalar_attn.npz",   "truncated.npz",     "wrong_magic.npz", "wrong_magic.safetensors"};
    for (const std::string name : bad) {
        CAPTURE(name);
        const std::string path = kData + "bad/" + name;
        try {
            trace_from_file(TensorSource::open(path));
            FAIL("no error");
        } catch (const FileError& e) {
            CHECK(std::string(e.what()).find(path) == 0);
            CHECK(std::string(e.what()).find('\n') == std::string::npos);  // one line
        }
    }
    // An unsupported dtype in a tensor that is no step: skipped, with a note; the attention map shows.
    const FileTrace ints = open_trace("bad/int64.npz");
    CHECK(names(ints.trace) == std::vector<std::string>{"attn"});
    REQUIRE(!ints.notes.empty());
    CHECK(english(ints.notes.front()).find("skipped tensor 'labels'") == 0);
    const FileTrace nan = open_trace("bad/nan_attn.npz");
    CHECK(!nan.trace.checks.nonfinite.ok());
    CHECK(nan.trace.checks.nonfinite.first_step == "attn");
}

TEST_CASE("checked_input and reference_config say what is wrong") {
    CHECK_THROWS_WITH_AS(checked_input(make_array({2, 3}), "x.npy"),
                         doctest::Contains("x.npy: the input has shape [2, 3], expected [B, N, C]"), FileError);
    Array x = make_array({1, 2, 4});
    x.fill(std::numeric_limits<float>::quiet_NaN());
    CHECK_THROWS_WITH_AS(checked_input(x, "x.npy"), doctest::Contains("NaN"), FileError);
    x.fill(1.0f);
    AttentionConfig c;
    c.batch = 1, c.tokens = 2, c.dim = 4, c.heads = 2;
    const SourceWeights w{default_weights(c), kTimmConvention, std::nullopt};
    CHECK(reference_config(checked_input(x, "x"), w, 2).head_dim() == 2);
    CHECK_THROWS_WITH_AS(reference_config(checked_input(x, "x"), w, 3), doctest::Contains("not divisible"), FileError);
    CHECK(nonfinite_text(Stats{}).empty());
}
