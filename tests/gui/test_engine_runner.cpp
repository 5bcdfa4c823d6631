// The GUI's engine worker without a window: jobs, cancel, replace, destroy while running, and the
// immutable snapshots it hands to the UI thread. `make check-tsan` runs this under ThreadSanitizer.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <stdexcept>
#include <thread>
#include <type_traits>
#include <vector>

#include "logic/engine_runner.hpp"
#include "run.hpp"

using namespace attnscope;

namespace {

AttentionConfig small_config(std::size_t tokens) {
    AttentionConfig c;
    c.batch = 1;
    c.tokens = tokens;
    c.dim = 16;
    c.heads = 2;
    return c;
}

// A job that runs until cancelled (or `limit` elapses), then returns a result tagged by `tokens`.
EngineJob slow_job(std::size_t tokens, std::atomic<int>* started,
                   std::chrono::milliseconds limit = std::chrono::seconds(20)) {
    return [=](const RunHooks& hooks) {
        if (started) ++*started;
        const auto end = std::chrono::steady_clock::now() + limit;
        while (std::chrono::steady_clock::now() < end) {
            if (hooks.cancel && hooks.cancel->load()) throw Cancelled();
            if (hooks.progress) hooks.progress(1, 2);
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        EngineResult r;
        r.config = small_config(tokens);
        r.trace = std::make_shared<const Trace>(run_attention(r.config));
        return r;
    };
}

// Polls like the frame loop until a result comes or the runner goes idle.
std::optional<EngineResult> poll_until_idle(EngineRunner& runner) {
    for (int i = 0; i < 20000; ++i) {
        if (auto r = runner.poll()) return r;
        if (!runner.busy()) return std::nullopt;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    FAIL("the worker never finished");
    return std::nullopt;
}

}  // namespace

TEST_CASE("engine runner: a config job runs in the worker and hands out an immutable trace") {
    EngineRunner runner;
    runner.start(small_config(5));
    CHECK(runner.busy());
    const std::optional<EngineResult> r = poll_until_idle(runner);
    REQUIRE(r);
    CHECK(r->error.empty());
    REQUIRE(r->trace);
    CHECK(r->trace->steps.size() == attention_step_names().size());
    CHECK(r->trace->at("attn").shape() == Shape{1, 2, 5, 5});
    CHECK_FALSE(runner.busy());
    CHECK_FALSE(runner.poll());  // a result is handed out once
    static_assert(std::is_same_v<decltype(EngineResult::trace), std::shared_ptr<const Trace>>);  // read-only for the UI
}

TEST_CASE("engine runner: a new job replaces the running one and only its result arrives") {
    EngineRunner runner;
    std::atomic<int> started{0};
    runner.start(slow_job(3, &started));
    while (started.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    runner.start(slow_job(4, &started, std::chrono::milliseconds(0)));  // cancels the first
    runner.start(slow_job(6, &started, std::chrono::milliseconds(0)));  // replaces the queued one
    const std::optional<EngineResult> r = poll_until_idle(runner);
    REQUIRE(r);
    REQUIRE(r->trace);
    CHECK(r->config.tokens == 6);
    CHECK(started.load() == 2);  // the replaced job never ran
}

TEST_CASE("engine runner: destroying it while a job runs cancels and joins the worker") {
    std::atomic<int> started{0};
    const auto t0 = std::chrono::steady_clock::now();
    {
        EngineRunner runner;
        runner.start(slow_job(3, &started));
        while (started.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }  // closing the window
    CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10));
    {
        EngineRunner runner;
        runner.start(slow_job(3, nullptr));
        runner.start(slow_job(4, nullptr));  // destroyed with a queued job too
    }
}

TEST_CASE("engine runner: errors come back as a message and the runner keeps working") {
    EngineRunner runner;
    runner.start(EngineRunner::file_job("/nonexistent/acts.npz", std::nullopt, std::nullopt));
    std::optional<EngineResult> r = poll_until_idle(runner);
    REQUIRE(r);
    CHECK_FALSE(r->trace);
    CHECK(english(r->error).find("/nonexistent/acts.npz") != std::string::npos);

    runner.start([](const RunHooks&) -> EngineResult { throw std::runtime_error("boom"); });
    r = poll_until_idle(runner);
    REQUIRE(r);
    CHECK(english(r->error) == "boom");

    runner.start(small_config(2));
    r = runner.wait();
    REQUIRE(r);
    CHECK(r->trace);
}

TEST_CASE("engine runner: a whole ViT opened as a file runs on the picture, else shows a block and names its family") {
    const std::string model = ATTNSCOPE_TEST_DATA "/vit_families/torchvision/model.pth";
    const std::string picture = ATTNSCOPE_TEST_DATA "/vit/resize/up.png";
    EngineRunner runner;

    runner.start(EngineRunner::file_job(model, std::nullopt, 4, picture));
    std::optional<EngineResult> r = runner.wait();
    REQUIRE(r);
    INFO(english(r->error));
    REQUIRE(r->vit);
    CHECK_FALSE(r->file);
    CHECK(r->vit->model_path == model);
    CHECK(r->vit->image_path == picture);
    CHECK(r->vit->trained_config.family == VitFamily::Torchvision);
    CHECK(r->vit->trace.blocks.size() == 2);
    CHECK(r->trace.get() == &r->vit->trace.blocks.back().attention);

    // No picture, or a block asked for: the block's attention on a seeded input, and the family.
    struct Open {
        std::optional<std::size_t> block;
        std::string picture;
    };
    for (const Open& open : {Open{std::nullopt, ""}, Open{1, picture}}) {
        runner.start(EngineRunner::file_job(model, open.block, 4, open.picture));
        r = runner.wait();
        REQUIRE(r);
        INFO(english(r->error));
        REQUIRE(r->file);
        CHECK_FALSE(r->vit);
        CHECK(r->vit_family == "torchvision");
        CHECK(r->file->block == open.block.value_or(0));
    }
    // h unknown (D = 48, 2 blocks, nothing in the file says): no trace, and the dim for the app's question.
    for (const std::string& with_picture : {picture, std::string()}) {
        runner.start(EngineRunner::file_job(model, std::nullopt, std::nullopt, with_picture));
        r = runner.wait();
        REQUIRE(r);
        CHECK_FALSE(r->trace);
        REQUIRE(r->heads_unknown);
        CHECK(r->heads_unknown->dim == 48);
        CHECK(r->heads_unknown->path == model);
        CHECK(r->heads_unknown->picture == with_picture);
        CHECK(english(r->error).find("pass --heads H with H one of 1, 2, 3, 4, 6, 8, 12, 16, 24, 48") != std::string::npos);
    }

    // One attention layer is not a whole ViT: a picture changes nothing.
    runner.start(EngineRunner::file_job(ATTNSCOPE_TEST_DATA "/conventions/reference_mha/weights.pt", std::nullopt,
                                        4, picture));
    r = runner.wait();
    REQUIRE(r);
    REQUIRE(r->file);
    CHECK(r->vit_family.empty());
}

TEST_CASE("engine runner: a snapshot stays valid and unchanged while later jobs run") {
    EngineRunner runner;
    runner.start(small_config(4));
    const std::optional<EngineResult> first = runner.wait();
    REQUIRE(first);
    const std::shared_ptr<const Trace> snapshot = first->trace;
    const float before = snapshot->at("attn").tensor().values(0, 0, 0, 0);
    // Readers on other threads (like panels drawing) while the worker builds the next traces.
    std::atomic<bool> stop{false};
    std::vector<std::thread> readers;
    for (int i = 0; i < 2; ++i)
        readers.emplace_back([&] {
            while (!stop) {
                double sum = 0;
                for (float v : snapshot->at("attn").tensor().values) sum += v;
                CHECK(std::abs(sum - 2 * 4) < 1e-3);  // B*h*N rows summing to 1
            }
        });
    for (std::size_t n = 2; n < 8; ++n) {
        runner.start(small_config(n));
        const auto r = runner.wait();
        REQUIRE(r);
        CHECK(r->trace->config.tokens == n);
    }
    stop = true;
    for (auto& t : readers) t.join();
    CHECK(snapshot->at("attn").tensor().values(0, 0, 0, 0) == before);
}

TEST_CASE("engine runner: configs over the memory budget never reach the worker") {
    AttentionConfig huge = small_config(1u << 20);
    huge.batch = 64;
    CHECK_FALSE(validate(huge, 1ull << 30).empty());
}

TEST_CASE("engine runner: the position experiment runs the checkpoint again and keeps both runs in the snapshot") {
    const std::string model = ATTNSCOPE_TEST_DATA "/../../assets/models/demo_vit.safetensors";
    const std::string picture = ATTNSCOPE_TEST_DATA "/../../assets/samples/06_triangle.png";
    EngineRunner runner;
    runner.start(EngineRunner::vit_job(model, picture));
    std::optional<EngineResult> r = runner.wait();
    REQUIRE(r);
    REQUIRE(r->vit);
    CHECK(r->vit->positions == VitPositionChoice{});
    CHECK_FALSE(r->vit->shuffled);
    REQUIRE(r->vit->accuracy);  // PyTorch's table beside the demo model
    CHECK(r->vit->accuracy->images == 160);

    runner.start(EngineRunner::vit_job(model, picture, std::nullopt, VitPositionChoice{false, 7}));
    r = runner.wait();
    REQUIRE(r);
    REQUIRE(r->vit);
    REQUIRE(r->vit->shuffled);
    const PositionExperiment& e = *r->vit->shuffled;
    CHECK_FALSE(e.pos_embed);
    CHECK(e.order.size() == 64);
    CHECK(e.difference.attn < 1e-5f);  // permutation-equivariant without position embeddings
    CHECK(r->vit->shuffled_input.width == 64);
    CHECK(r->vit->shuffled_input.pixels != r->vit->input.pixels);
    // The embed step of the run on screen added zeros: the tokens are unchanged by it.
    CHECK(r->vit->trace.at("embed").tensor().values == r->vit->trace.at("tokens").tensor().values);
}
