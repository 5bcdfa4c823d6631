// Tests of app/gui/logic/run_result: what a finished run (the engine's own jobs, through the worker
// the app uses) does to the screen's trace and the UI state.
#include <doctest/doctest.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "logic/engine_runner.hpp"
#include "logic/run_result.hpp"
#include "ui_state.hpp"

using namespace attnscope;

namespace {

const std::string kData = ATTNSCOPE_TEST_DATA;

AttentionConfig small() {
    AttentionConfig c;
    c.batch = 1, c.tokens = 6, c.dim = 16, c.heads = 4;
    return c;
}

// The job run by the app's worker, as the frame loop receives it (errors in .error).
EngineResult run(EngineJob job) {
    EngineRunner runner;
    runner.start(std::move(job));
    std::optional<EngineResult> r = runner.wait();
    REQUIRE(r);
    return std::move(*r);
}

// What the frame loop keeps between runs: the UI state and the trace (and ViT) on screen.
struct Screen {
    UiState ui;
    std::shared_ptr<const Trace> trace;
    std::shared_ptr<const VitSnapshot> vit;
    bool accept(EngineJob job) { return AcceptResult(run(std::move(job)), trace, vit, ui); }
    const std::string& selected() const {
        return trace->steps[static_cast<std::size_t>(ui.selection.stepper.selected)].name;
    }
};

}  // namespace

TEST_CASE("run result: a config run replaces the trace and opens at the step on screen before") {
    Screen screen;
    UiState& ui = screen.ui;
    const std::shared_ptr<const Trace>& trace = screen.trace;
    ui.selection.step = "k_t";
    REQUIRE(screen.accept(EngineRunner::config_job(small())));
    REQUIRE(trace);
    CHECK(trace->steps.size() == 17);
    CHECK(screen.selected() == "k_t");
    CHECK(ui.zoo.bug == Bug::None);
    CHECK(!ui.inspector.show_difference);
    CHECK(ui.frame.trace_generation == 1);
}

TEST_CASE("run result: a failed run keeps the trace on screen and says why where it was asked") {
    Screen screen;
    UiState& ui = screen.ui;
    const std::shared_ptr<const Trace>& trace = screen.trace;
    REQUIRE(screen.accept(EngineRunner::config_job(small())));
    const auto before = trace;
    AttentionConfig bad = small();
    bad.heads = 7;  // does not divide 16
    CHECK_FALSE(screen.accept(EngineRunner::config_job(bad)));
    CHECK(trace == before);
    CHECK(english(ui.engine.error).find("--heads 7") != std::string::npos);
    CHECK(ui.file.error.empty());

    ui.file.loading = "/nonexistent/acts.npz";  // a file asked for: its error goes to the file's message
    CHECK_FALSE(screen.accept(EngineRunner::file_job(ui.file.loading, std::nullopt, std::nullopt)));
    CHECK(trace == before);
    CHECK(english(ui.file.error).find("/nonexistent/acts.npz") != std::string::npos);
    CHECK_FALSE(ui.file.error_shown);
    CHECK(ui.file.loading.empty());
}

TEST_CASE("run result: a checkpoint without a head count asks for it, prefilled, before any map") {
    Screen screen;
    UiState& ui = screen.ui;
    const std::shared_ptr<const Trace>& trace = screen.trace;
    REQUIRE(screen.accept(EngineRunner::config_job(small())));
    const auto before = trace;
    const std::string path = kData + "/heads/encoder/enc.pt";
    ui.file.loading = path;
    ui.file.open_block = 1;
    CHECK_FALSE(screen.accept(EngineRunner::file_job(path, 1, std::nullopt)));
    CHECK(trace == before);
    CHECK(ui.heads_question.path == path);
    CHECK(ui.heads_question.dim == 64);
    CHECK(ui.heads_question.choice == 1);  // 64 channels per head: the nearest to dim / 64
    CHECK(ui.heads_question.block == std::optional<std::size_t>(1));
    CHECK(ui.file.error.empty());
}

TEST_CASE("run result: a file's trace brings its notes and recent entry; a config run closes it") {
    Screen screen;
    UiState& ui = screen.ui;
    const std::shared_ptr<const Trace>& trace = screen.trace;
    const std::string path = kData + "/heads/encoder/enc.pt";
    ui.file.loading = path;
    REQUIRE(screen.accept(EngineRunner::file_job(path, 1, 4)));
    CHECK(ui.file.path == path);
    CHECK(!ui.file.notes.empty());
    REQUIRE(!ui.recent_files.empty());
    CHECK(ui.recent_files.front() == std::filesystem::absolute(path).lexically_normal().string());
    CHECK(trace->config.heads == 4);

    REQUIRE(screen.accept(EngineRunner::config_job(small())));
    CHECK(ui.file.path.empty());
    CHECK(ui.file.notes.empty());
    CHECK(!ui.file.open_heads);
}

TEST_CASE("run result: a bug of the zoo opens where it first shows, with its difference; the next run forgets it") {
    Screen screen;
    UiState& ui = screen.ui;
    const std::shared_ptr<const Trace>& trace = screen.trace;
    REQUIRE(screen.accept(EngineRunner::zoo_job(small(), Bug::MissingScale)));
    CHECK(ui.zoo.bug == Bug::MissingScale);
    REQUIRE(ui.zoo.run);
    CHECK(trace.get() == &ui.zoo.run->buggy);  // the buggy code's steps are on screen
    CHECK(screen.selected() == ui.zoo.run->first_step);
    CHECK(ui.inspector.show_difference);

    REQUIRE(screen.accept(EngineRunner::config_job(small())));
    CHECK(ui.zoo.bug == Bug::None);
    CHECK(!ui.zoo.run);
    CHECK(!ui.inspector.show_difference);
}

TEST_CASE("run result: the start steps") {
    const Trace t = *run(EngineRunner::config_job(small())).trace;
    CHECK(ConfigStartStep(t, "merged") == "merged");
    CHECK(ConfigStartStep(t, "no such step") == "attn");
    AttentionConfig flash = small();
    flash.path = AttentionPath::flash;
    const Trace f = *run(EngineRunner::config_job(flash)).trace;
    CHECK(ConfigStartStep(f, "") == "context");  // flash has no attn
    CHECK(FirstDivergence(t) == nullptr);
}
