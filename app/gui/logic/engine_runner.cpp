#include "logic/engine_runner.hpp"

#include <chrono>

#include "attention_maps.hpp"
#include "backward.hpp"
#include "io.hpp"
#include "memory_budget.hpp"
#include "run.hpp"
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
        r.error = Message(Msg::run_out_of_memory);
    } catch (const std::exception& e) {
        r.error = message_of(e);
    } catch (...) {
        r.error = Message(Msg::run_unknown_error);
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
        // The backward pass doubles the memory: only when that still fits half the budget.
        const bool with_gradients = trace_bytes(config) <= default_memory_budget() / 2;
        r.trace = std::make_shared<const Trace>(with_gradients ? run_attention_with_gradients(config, hooks)
                                                               : run_attention(config, hooks));
        return r;
    };
}

EngineJob EngineRunner::zoo_job(const AttentionConfig& config, Bug bug) {
    return [config, bug](const RunHooks& hooks) {
        EngineResult r;
        r.config = config;
        auto zoo = std::make_shared<const ZooRun>(run_zoo(config, bug, hooks));
        r.trace = std::shared_ptr<const Trace>(zoo, &zoo->buggy);  // shares ownership with the zoo run
        r.zoo = std::move(zoo);
        return r;
    };
}

namespace {

// Runs the model on the picture (and on its shuffled patches when snap->positions asks); the result
// shows the last block's attention.
EngineResult run_vit_on(VitModel model, std::shared_ptr<VitSnapshot> snap, const RunHooks& hooks) {
    snap->drop_path.apply(model.config);
    const std::vector<Message> problems = validate(model.config, 1, memory_budget());
    if (!problems.empty()) throw ConfigError(problems.front());
    const Tensor pixels = image_to_pixels(snap->source, model.config.image_size, model.mean, model.std);
    snap->trace = run_vit(model, pixels, hooks);
    // The backward pass about doubles the memory: only when that still fits half the budget.
    if (snap->trace.has_head() && vit_trace_bytes(model.config, 1) <= memory_budget() / 2)
        snap->gradients = run_vit_backward(model, snap->trace, std::nullopt, hooks);
    if (const auto seed = snap->positions.shuffle_seed) {
        auto e = std::make_shared<const PositionExperiment>(
            run_shuffled(model, pixels, snap->trace, snap->positions.pos_embed, *seed, hooks));
        snap->shuffled_input = pixels_to_image(e->shuffled_pixels.values, 0, model.mean, model.std);
        snap->shuffled = std::move(e);
    }
    snap->input = pixels_to_image(pixels.values, 0, model.mean, model.std);
    snap->labels = model.labels;
    snap->mean = model.mean;
    snap->std = model.std;
    if (snap->trace.blocks.empty()) throw CoreError(Message(Msg::vit_no_blocks));
    EngineResult r;
    std::shared_ptr<const VitSnapshot> vit = std::move(snap);
    const Trace& last = vit->trace.blocks.back().attention;
    r.config = last.config;
    r.trace = std::shared_ptr<const Trace>(vit, &last);  // shares ownership with the snapshot
    r.vit = std::move(vit);
    return r;
}

// The checkpoint read from model_path on the picture at image_path.
EngineResult run_vit_file(VitModel model, const std::string& model_path, const std::string& image_path,
                          const RunHooks& hooks, const VitPositionChoice& positions = {},
                          const VitDropPathChoice& drop_path = {}) {
    auto snap = std::make_shared<VitSnapshot>();
    snap->positions = positions;
    snap->drop_path = drop_path;
    try {
        snap->accuracy = read_position_accuracy(model_path);
    } catch (const FileError& e) {
        snap->accuracy_error = e.what();
    }
    snap->source = load_image(image_path, memory_budget());
    snap->trained_config = model.config;
    snap->model_path = model_path;
    snap->image_path = image_path;
    snap->heads_from = model.heads_from;
    return run_vit_on(positions.pos_embed ? std::move(model) : without_pos_embed(model), std::move(snap), hooks);
}

// The result that asks for h: the file and picture to run again once it is chosen.
EngineResult heads_question(const HeadsUnknown& e, const std::string& path, const std::string& picture) {
    EngineResult r;
    r.error = message_of(e);
    r.heads_unknown = HeadsQuestion{path, picture, e.dim};
    return r;
}

}  // namespace

EngineJob EngineRunner::file_job(const std::string& path, std::optional<std::size_t> block,
                                 std::optional<std::size_t> heads, const std::string& picture) {
    return [path, block, heads, picture](const RunHooks& hooks) {
        const TensorSource source = TensorSource::open(path);
        const std::optional<VitFamily> family = whole_vit_family(source);
        std::shared_ptr<const FileTrace> file;
        try {
            if (family && !block && !picture.empty())
                return run_vit_file(load_vit_model(source, heads, memory_budget()), path, picture, hooks);
            file = std::make_shared<const FileTrace>(trace_from_file(source, block, heads));
        } catch (const HeadsUnknown& e) {
            return heads_question(e, path, picture);
        }
        EngineResult r;
        if (family) r.vit_family = vit_family_name(*family);
        r.config = file->trace.config;
        r.trace = std::shared_ptr<const Trace>(file, &file->trace);  // shares ownership with the file
        r.file = std::move(file);
        return r;
    };
}

EngineJob EngineRunner::vit_job(const std::string& model_path, const std::string& image_path,
                                std::optional<std::size_t> heads, VitPositionChoice positions,
                                VitDropPathChoice drop_path) {
    return [model_path, image_path, heads, positions, drop_path](const RunHooks& hooks) {
        std::optional<VitModel> model;
        try {
            model = load_vit_model(model_path, heads, memory_budget());
        } catch (const HeadsUnknown& e) {
            return heads_question(e, model_path, image_path);
        }
        return run_vit_file(std::move(*model), model_path, image_path, hooks, positions, drop_path);
    };
}

EngineJob EngineRunner::fresh_vit_job(std::shared_ptr<const VitSnapshot> from, std::size_t patch, bool stem,
                                      VitDropPathChoice drop_path) {
    return [from = std::move(from), patch, stem, drop_path](const RunHooks& hooks) {
        VitConfig config = from->trained_config;
        config.stem_channels.clear();
        config.patch_size = patch;
        if (stem) config = with_cnn_stem(config);
        const std::vector<Message> problems = validate(config, 1, memory_budget());
        if (!problems.empty())
            throw ConfigError(stem ? Message(Msg::vit_config_fresh_stem).with("problem", problems.front())
                                   : Message(Msg::vit_config_fresh_patch, {{"patch", std::to_string(patch)}})
                                         .with("problem", problems.front()));
        VitModel model = fresh_vit_model(config, 0);
        model.mean = from->mean;
        model.std = from->std;
        auto snap = std::make_shared<VitSnapshot>();
        snap->source = from->source;
        snap->trained_config = from->trained_config;
        snap->model_path = from->model_path;
        snap->image_path = from->image_path;
        snap->fresh_patch = config.patch_size;
        snap->fresh_stem = stem;
        snap->heads_from = model.heads_from;
        snap->drop_path = drop_path;
        return run_vit_on(std::move(model), std::move(snap), hooks);
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
