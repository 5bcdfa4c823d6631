// Runs the engine for the UI: synchronously for small configs, in one worker thread for large
// ones and for files. The result is an immutable snapshot (shared_ptr<const Trace>) the frame loop
// swaps in.
#pragma once

#include <array>
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "activations.hpp"
#include "bug_zoo.hpp"
#include "config.hpp"
#include "image.hpp"
#include "logic/drop_path_view.hpp"
#include "logic/position_view.hpp"
#include "pipeline.hpp"
#include "positions.hpp"
#include "trace.hpp"
#include "vit.hpp"
#include "vit_backward.hpp"

namespace attnscope {

// A ViT run on one picture (the Image panel's snapshot): the whole recorded trace, the picture as
// the model saw it, and what it needs to run again with a fresh model of another patch size.
struct VitSnapshot {
    VitTrace trace;
    RgbImage input;    // the model's input un-normalized: image_size x image_size, what the patches cover
    RgbImage source;   // the picture as read from image_path (a fresh model resizes it again)
    VitConfig trained_config;              // the config of the checkpoint (fresh models copy it)
    std::vector<std::string> labels;       // one per class
    std::array<float, 3> mean{}, std{};    // the checkpoint's normalization
    std::string model_path, image_path;
    std::size_t fresh_patch = 0;           // 0: the checkpoint's weights; else a fresh random model with this patch
    bool fresh_stem = false;               // ... whose patch embedding is a CNN stem (fresh_patch is its stride)
    Message heads_from;                    // where h came from (load_vit_model)
    VitPositionChoice positions;           // how trace ran (a fresh model: always the default)
    VitDropPathChoice drop_path;           // the drop-path rate, train/eval and seed trace ran with
    std::shared_ptr<const PositionExperiment> shuffled;  // the same model on the shuffled picture, with a seed
    RgbImage shuffled_input;                             // that picture un-normalized, like input
    std::optional<PositionAccuracy> accuracy;  // PyTorch's held-out table beside the checkpoint, when there is one
    std::string accuracy_error;                // why that table could not be read
    // The backward pass of each image's predicted class's logit (core/vit/vit_backward.hpp): none
    // without a classifier, or when the trace takes more than half the memory budget.
    std::optional<VitGradients> gradients;
};

// A file that does not say its head count (HeadsUnknown): the app asks, then runs it again.
struct HeadsQuestion {
    std::string path;     // the file (a checkpoint, or --model)
    std::string picture;  // the picture a whole ViT runs on; empty: none
    std::size_t dim = 0;  // h must divide it
};

struct EngineResult {
    AttentionConfig config;
    std::shared_ptr<const Trace> trace;     // null on error
    std::shared_ptr<const FileTrace> file;  // a file's trace (blocks, notes); trace points into it
    std::shared_ptr<const VitSnapshot> vit; // a ViT run; trace points at its last block's attention
    std::shared_ptr<const ZooRun> zoo;      // a bug-zoo run; trace points at its buggy trace
    std::string vit_family;                 // set with file: the file is a whole ViT of this family
    Message error;                          // what the engine or the file reader threw
    std::optional<HeadsQuestion> heads_unknown;  // set with error: the file does not say its head count
    double seconds = 0.0;
};

// A job for the worker: builds one result (sets trace or file; exceptions become .error).
using EngineJob = std::function<EngineResult(const RunHooks& hooks)>;

class EngineRunner {
public:
    EngineRunner() = default;
    ~EngineRunner();  // cancels a running worker and joins it (closing the window never crashes)
    EngineRunner(const EngineRunner&) = delete;
    EngineRunner& operator=(const EngineRunner&) = delete;

    // Configs whose trace is larger than this run in the worker.
    static constexpr std::uint64_t kWorkerThresholdBytes = 32ull << 20;

    static EngineResult run_now(const AttentionConfig& config);

    // The jobs: the engine on a config, or trace_from_file on a path. A file holding a whole ViT
    // runs on `picture` instead (vit_job) when there is one and no block was asked for; without a
    // picture the result names the ViT's family (vit_family), so a picture opened next runs it.
    static EngineJob config_job(const AttentionConfig& config);
    static EngineJob file_job(const std::string& path, std::optional<std::size_t> block,
                              std::optional<std::size_t> heads, const std::string& picture = {});
    // run_zoo: the correct and the buggy pipeline of one bug of the zoo on the config.
    static EngineJob zoo_job(const AttentionConfig& config, Bug bug);
    // load_vit_model + load_image + run_vit: the checkpoint on the picture.
    // heads: --heads when given, else the checkpoint's metadata or D / 64 (load_vit_model).
    // positions: without the position embeddings, and also on the shuffled picture (the experiment).
    // drop_path: timm's stochastic depth in the blocks (rate, train/eval, seed).
    static EngineJob vit_job(const std::string& model_path, const std::string& image_path,
                             std::optional<std::size_t> heads = std::nullopt, VitPositionChoice positions = {},
                             VitDropPathChoice drop_path = {});
    // The same picture through a fresh random model (fresh_vit_model) whose patch size is `patch`.
    static EngineJob fresh_vit_job(std::shared_ptr<const VitSnapshot> from, std::size_t patch, bool stem = false,
                                   VitDropPathChoice drop_path = {});

    // Starts the worker. If one is running it is cancelled and this job runs next.
    void start(const AttentionConfig& config) { start(config_job(config)); }
    void start(EngineJob job);
    bool busy() const { return running_; }
    float progress() const { return progress_.load(); }
    // A finished result, once (never a cancelled one).
    std::optional<EngineResult> poll();
    // Blocks until the running job (and any queued one) is done; its result (--screenshot).
    std::optional<EngineResult> wait();

private:
    void launch(EngineJob job);
    std::thread thread_;
    std::atomic<bool> cancel_{false};
    std::atomic<bool> done_{false};
    std::atomic<float> progress_{0.0f};
    bool running_ = false;  // UI thread only
    EngineJob pending_;
    std::mutex mutex_;
    EngineResult result_;  // guarded by mutex_, handed over when done_
    bool cancelled_ = false;
};

}  // namespace attnscope
