#include "engine_runner.hpp"

#include <chrono>

#include "pipeline.hpp"

namespace attnscope {

namespace {

EngineResult run(const AttentionConfig& config, const RunHooks& hooks, bool* cancelled) {
    EngineResult r;
    r.config = config;
    const auto t0 = std::chrono::steady_clock::now();
    try {
        r.trace = std::make_shared<const Trace>(run_attention(config, hooks));
    } catch (const Cancelled&) {
        if (cancelled) *cancelled = true;
    } catch (const std::exception& e) {
        r.error = e.what();
    } catch (...) {
        r.error = "unknown error";
    }
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return r;
}

}  // namespace

EngineRunner::~EngineRunner() {
    cancel_ = true;
    if (thread_.joinable()) thread_.join();
}

EngineResult EngineRunner::run_now(const AttentionConfig& config) { return run(config, {}, nullptr); }

void EngineRunner::start(const AttentionConfig& config) {
    if (running_) {
        pending_ = config;
        cancel_ = true;
        return;
    }
    launch(config);
}

void EngineRunner::launch(const AttentionConfig& config) {
    if (thread_.joinable()) thread_.join();
    cancel_ = false;
    done_ = false;
    progress_ = 0.0f;
    running_ = true;
    thread_ = std::thread([this, config] {
        RunHooks hooks;
        hooks.cancel = &cancel_;
        hooks.progress = [this](std::size_t done, std::size_t total) {
            progress_ = total ? static_cast<float>(done) / static_cast<float>(total) : 0.0f;
        };
        bool cancelled = false;
        EngineResult r = run(config, hooks, &cancelled);
        {
            std::lock_guard<std::mutex> lock(mutex_);
            result_ = std::move(r);
            cancelled_ = cancelled || cancel_.load();
        }
        done_ = true;
    });
}

std::optional<EngineResult> EngineRunner::poll() {
    if (!running_ || !done_) return std::nullopt;
    thread_.join();
    running_ = false;
    EngineResult r;
    bool cancelled;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        r = std::move(result_);
        cancelled = cancelled_;
    }
    if (pending_) {
        const AttentionConfig next = *pending_;
        pending_.reset();
        launch(next);
        return std::nullopt;  // superseded
    }
    if (cancelled) return std::nullopt;
    return r;
}

}  // namespace attnscope
