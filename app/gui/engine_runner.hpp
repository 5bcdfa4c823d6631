// Runs the engine for the UI: synchronously for small configs, in one worker thread for large
// ones. The result is an immutable snapshot (shared_ptr<const Trace>) the frame loop swaps in.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "config.hpp"
#include "trace.hpp"

namespace attnscope {

struct EngineResult {
    AttentionConfig config;
    std::shared_ptr<const Trace> trace;  // null on error
    std::string error;                   // what the engine threw
    double seconds = 0.0;
};

class EngineRunner {
public:
    EngineRunner() = default;
    ~EngineRunner();  // cancels a running worker and joins it (closing the window never crashes)
    EngineRunner(const EngineRunner&) = delete;
    EngineRunner& operator=(const EngineRunner&) = delete;

    // Configs whose trace is larger than this run in the worker.
    static constexpr std::uint64_t kWorkerThresholdBytes = 32ull << 20;

    static EngineResult run_now(const AttentionConfig& config);

    // Starts the worker. If one is running it is cancelled and this config runs next.
    void start(const AttentionConfig& config);
    bool busy() const { return running_; }
    float progress() const { return progress_.load(); }
    // A finished result, once (never a cancelled one).
    std::optional<EngineResult> poll();

private:
    void launch(const AttentionConfig& config);
    std::thread thread_;
    std::atomic<bool> cancel_{false};
    std::atomic<bool> done_{false};
    std::atomic<float> progress_{0.0f};
    bool running_ = false;  // UI thread only
    std::optional<AttentionConfig> pending_;
    std::mutex mutex_;
    EngineResult result_;  // guarded by mutex_, handed over when done_
    bool cancelled_ = false;
};

}  // namespace attnscope
