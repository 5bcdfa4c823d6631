#include "engine_runner.hpp"

#include <chrono>

#include "io.hpp"
#include "tensor_source.hpp"

namespace attnscope {

namespace {

// Runs a job, timing it; every exception becomes a one-line error (the session survives it).
EngineResult run(const EngineJob& job, const RunHooks& hooks, bool* cancelled) {
    EngineResult r;
    const auto t0 = std::chrono::steady_clock::now();
    try {
        r = job(hooks);
    } catch (const Cancelled&) {
        if (cancelled) *cancelled = true;
    } catch (const std::bad_alloc&) {
        r.error = "out of memory";
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

EngineJob EngineRunner::config_job(const AttentionConfig& config) {
    return [config](const RunHooks& hooks) {
        EngineResult r;
        r.config = config;
        r.trace = std::make_shared<const Trace>(run_attention(config, hooks));
        return r;
    };
}

EngineJob EngineRunner::file_job(const std::string& path, std::optional<std::size_t> block,
                                 std::optional<std::size_t> heads) {
    return [path, block, heads](const RunHooks&) {
        EngineResult r;
        auto file = std::make_shared<const FileTrace>(trace_from_file(TensorSource::open(path), block, heads));
        r.config = file->trace.config;
        r.trace = std::shared_ptr<const Trace>(file, &file->trace);  // shares ownership with the file
        r.file = std::move(file);
        return r;
    };
}

EngineResult EngineRunner::run_now(const AttentionConfig& config) { return run(config_job(config), {}, nullptr); }

void EngineRunner::start(EngineJob job) {
    if (running_) {
        pending_ = std::move(job);
        cancel_ = true;
        return;
    }
    launch(std::move(job));
}

void EngineRunner::launch(EngineJob job) {
    if (thread_.joinable()) thread_.join();
    cancel_ = false;
    done_ = false;
    progress_ = 0.0f;
    running_ = true;
    thread_ = std::thread([this, job = std::move(job)] {
        RunHooks hooks;
        hooks.cancel = &cancel_;
        hooks.progress = [this](std::size_t done, std::size_t total) {
            progress_ = total ? static_cast<float>(done) / static_cast<float>(total) : 0.0f;
        };
        bool cancelled = false;
        EngineResult r = run(job, hooks, &cancelled);
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
    if (thread_.joinable()) thread_.join();
    running_ = false;
    EngineResult r;
    bool cancelled;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        r = std::move(result_);
        cancelled = cancelled_;
    }
    if (pending_) {
        EngineJob next = std::move(pending_);
        pending_ = nullptr;
        launch(std::move(next));
        return std::nullopt;  // superseded
    }
    if (cancelled) return std::nullopt;
    return r;
}

std::optional<EngineResult> EngineRunner::wait() {
    while (running_) {
        if (thread_.joinable()) thread_.join();  // done_ is set before the thread ends
        if (auto r = poll()) return r;
    }
    return std::nullopt;
}

}  // namespace attnscope
