// The command line. Every command reads or runs the engine in core/ and prints what it recorded;
// errors in the user's options or files end in one line on stderr and exit status 2.
#include "cli.hpp"

#include <cblas.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <cstdlib>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "about.hpp"
#include "activations.hpp"
#include "backward.hpp"
#include "beyond.hpp"
#include "blas_kernels.hpp"
#include "cli_bench.hpp"
#include "config.hpp"
#include "memory_budget.hpp"
#include "gui.hpp"
#include "io.hpp"
#include "pipeline.hpp"
#include "roles.hpp"
#include "run.hpp"
#include "trace_json.hpp"
#include "weights.hpp"

namespace attnscope {

namespace {

// The config options every command shares, defaults = the reference's debug example.
struct ConfigOptions {
    AttentionConfig config;
    CLI::Option* batch = nullptr;
    CLI::Option* tokens = nullptr;
    CLI::Option* dim = nullptr;
    CLI::Option* heads = nullptr;
    CLI::Option* qkv_bias = nullptr;
    CLI::Option* reference = nullptr;
    BeyondOptions beyond;  // app/cli/cli_beyond.cpp
    std::vector<CLI::Option*> all;

    bool any_given() const {
        return std::any_of(all.begin(), all.end(), [](const CLI::Option* o) { return o->count() > 0; });
    }
};

}  // namespace

CLI::Validator whole_number(std::uint64_t max) {
    return CLI::Validator(
        [max](std::string& text) -> std::string {
            const bool digits = !text.empty() && text.size() <= 20 &&
                                std::all_of(text.begin(), text.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
            if (digits) {
                errno = 0;
                const unsigned long long value = std::strtoull(text.c_str(), nullptr, 10);
                if (errno == 0 && value <= max) return "";
            }
            return "'" + text + "' is not a whole number from 0 to " + std::to_string(max);
        },
        "UINT", "whole number");
}

namespace {

void add_config_options(CLI::App& app, ConfigOptions& o) {
    AttentionConfig& c = o.config;
    const CLI::Validator size = whole_number(std::uint64_t(1) << 40);  // larger ones fail the memory budget anyway
    o.batch = app.add_option("--batch,-B", c.batch, "batch size B")->check(size)->capture_default_str();
    o.tokens = app.add_option("--tokens,-N", c.tokens, "tokens N")->check(size)->capture_default_str();
    o.dim = app.add_option("--dim,-C", c.dim, "embedding dim C")->check(size)->capture_default_str();
    o.heads = app.add_option("--heads", c.heads, "heads h (C % h == 0)")->check(size)->capture_default_str();
    o.qkv_bias = app.add_flag("--qkv-bias", c.qkv_bias, "qkv Linear has a bias (zeros)");
    CLI::Option* attn_drop = app.add_option("--attn-drop", c.attn_drop, "attention dropout p")->capture_default_str();
    o.all = {o.batch, o.tokens, o.dim, o.heads, o.qkv_bias, attn_drop,
             app.add_option("--seed", c.seed, "seed of input, weights and dropout masks")
                 ->check(whole_number(UINT64_MAX))
                 ->capture_default_str(),
             app.add_flag("--training", c.training, "training mode: dropout active"),
             app.add_option("--proj-drop", c.proj_drop, "output dropout p")->capture_default_str(),
             app.add_flag("--no-scale{false}", c.scaled,
                          "switch self.scale off (x 1 instead of x c^-0.5): the softmax-saturation demo")};
    o.beyond = add_beyond_options(app, c);
    o.all.insert(o.all.end(), o.beyond.all.begin(), o.beyond.all.end());
    add_reference_option(app, c, attn_drop);
    o.reference = app.get_option("--reference");
    o.all.push_back(o.reference);
}

void require_valid(const AttentionConfig& config, const ConfigOptions* options = nullptr) {
    if (options) check_beyond_options(options->beyond);
    const auto problems = validate(config, memory_budget());
    if (!problems.empty()) throw UsageError(english(problems.front()));
}

// ---- trace ----------------------------------------------------------------------------------
std::string checks_summary(const Trace& trace) {
    const Checks& ch = trace.checks;
    std::size_t shapes_ok = 0;
    for (const auto& s : ch.shapes) shapes_ok += s.ok;
    std::string text = "checks: shapes " + std::to_string(shapes_ok) + "/" + std::to_string(ch.shapes.size()) + " ok";
    for (const auto& r : ch.row_sums) {
        char line[256];
        std::snprintf(line, sizeof line, "; %s rows: max |sum - 1| = %.3g, %zu of %zu over %.0e%s", r.step.c_str(),
                      r.max_error, r.failing_rows, r.rows, r.tolerance,
                      r.deviation_expected ? " (expected: training-mode dropout)" : "");
        text += line;
    }
    text += "; " + ch.nonfinite.message;
    return text;
}

// A shape as PyTorch prints it: torch.Size([2, 16, 768]).
std::string torch_size(const Shape& shape) {
    std::string text = "torch.Size([";
    for (std::size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
    return text + "])";
}

void print_trace(const Trace& trace) {
    const AttentionConfig& c = trace.config;
    std::printf("attention B=%zu N=%zu C=%zu h=%zu c=%zu qkv_bias=%s %s\n", c.batch, c.tokens, c.dim, c.heads,
                c.head_dim(), c.qkv_bias ? "on" : "off", c.training ? "training" : "eval");
    std::size_t name_width = 10, shape_width = 0, code_width = 0;  // names: at least the textbook's column
    for (const Step& s : trace.steps) {
        name_width = std::max(name_width, s.name.size());
        shape_width = std::max(shape_width, format_shape(s.shape()).size());
        code_width = std::max(code_width, s.code.size());
    }
    for (const Step& s : trace.steps)
        std::printf("%-*s %-*s  %-*s  %s\n", static_cast<int>(name_width), s.name.c_str(),
                    static_cast<int>(shape_width), format_shape(s.shape()).c_str(), static_cast<int>(code_width),
                    s.code.c_str(), s.note.c_str());
    std::printf("%s\n", checks_summary(trace).c_str());
    if (trace.beyond || c.masked()) std::printf("%s\n", beyond_summary(trace).c_str());  // core/paths/beyond.hpp
    if (c.reference == Reference::mha) {  // what the article's debug_attention() prints
        std::printf("Input shape: %s\n", torch_size(trace.steps.front().shape()).c_str());
        std::printf("Output shape: %s\n", torch_size(trace.steps.back().shape()).c_str());
    }
}

struct TraceArgs {
    ConfigOptions config;
    bool json = false;
};

int cmd_trace(const TraceArgs& args) {
    const ConfigOptions& o = args.config;
    require_valid(o.config, &o);
    const Trace trace = run_attention(o.config);
    if (args.json)
        std::cout << trace_to_json(trace).dump(2) << "\n";
    else
        print_trace(trace);
    return 0;
}

// ---- run ------------------------------------------------------------------------------------
// The first non-finite value of an array, as "[0, 2, 5]", or nothing.
std::optional<std::string> first_nonfinite(const Array& a, std::size_t* count) {
    *count = 0;
    std::optional<std::string> where;
    const Shape shape = shape_of(a);
    for (std::size_t i = 0; i < a.size(); ++i) {
        if (std::isfinite(a.data()[i])) continue;
        if (!(*count)++) {
            Shape index(shape.size());
            for (std::size_t d = shape.size(), rest = i; d-- > 0; rest /= shape[d]) index[d] = rest % shape[d];
            where = format_shape(index);
        }
    }
    return where;
}

void require_finite(const Array& a, const std::string& what) {
    std::size_t count = 0;
    if (auto where = first_nonfinite(a, &count))
        throw UsageError(what + " contains " + std::to_string(count) + " NaN/Inf value" + (count > 1 ? "s" : "") +
                         " (first at " + *where + "); attnscope needs finite numbers");
}

struct RunArgs {
    ConfigOptions config;
    std::string weights, input, dump, grad_output;
    std::optional<std::size_t> block;
    bool grad = false, force = false;
};

int cmd_run(RunArgs& args) {
    ConfigOptions& o = args.config;
    AttentionConfig& cfg = o.config;
    const std::string &weights_path = args.weights, &input_path = args.input, &dump_dir = args.dump,
                      &grad_output_path = args.grad_output;
    const std::optional<std::size_t> block = args.block;
    const bool grad = args.grad;
    std::vector<std::string> outputs = {dump_dir + "/trace.json"};
    for (const std::string& name : path_step_names(cfg)) {
        outputs.push_back(dump_dir + "/" + name + ".npy");
        outputs.push_back(dump_dir + "/grad_" + name + ".npy");
    }
    for (const char* param : {"qkv.weight", "qkv.bias", "proj.weight", "proj.bias"})
        outputs.push_back(dump_dir + "/grad_" + std::string(param) + ".npy");
    for (const char* file : {kFlashRowMaxFile, kFlashRowSumFile}) outputs.push_back(dump_dir + "/" + file);
    refuse_overwrite(outputs, args.force);
    std::optional<Tensor> input;
    if (!input_path.empty()) {
        Array x = read_npy(input_path);
        if (x.dimension() != 3)
            throw UsageError(input_path + ": has shape " + format_shape(shape_of(x)) + ", expected 3-D [B, N, C]");
        require_finite(x, input_path);
        const Shape xs = shape_of(x);
        const std::pair<CLI::Option*, std::size_t> given[] = {{o.batch, xs[0]}, {o.tokens, xs[1]}, {o.dim, xs[2]}};
        const std::size_t* fields[] = {&cfg.batch, &cfg.tokens, &cfg.dim};
        for (int i = 0; i < 3; ++i)
            if (given[i].first->count() && *fields[i] != given[i].second)
                throw UsageError(given[i].first->get_name() + " " + std::to_string(*fields[i]) + " disagrees with " +
                                 input_path + " of shape " + format_shape(xs) + "; B, N, C come from the input");
        cfg.batch = xs[0];
        cfg.tokens = xs[1];
        cfg.dim = xs[2];
        input = Tensor{std::move(x), {"B", "N", "C"}};
    }
    std::optional<AttentionWeights> weights;
    if (!weights_path.empty()) {
        const bool dim_known = input || o.dim->count();
        const TensorSource source = TensorSource::open(weights_path);
        SourceWeights found = load_attention_weights(source, block,
                                                     dim_known ? std::optional<std::size_t>(cfg.dim) : std::nullopt);
        weights = std::move(found.weights);
        cfg.dim = weights->proj_weight.shape()[0];
        // The weights do not tell h: the file's configuration must, or --heads (never the demo's 8).
        if (!o.heads->count()) {
            const HeadCount count = resolve_heads(source, {cfg.dim, 0, 0}, std::nullopt);
            cfg.heads = count.heads;
            std::printf("heads h = %zu from %s\n", count.heads, english(count.from).c_str());
        }
        // Hugging Face's names: the steps show ViTSelfAttention's lines unless --reference says otherwise.
        if (found.convention == kHuggingFaceConvention && !o.reference->count()) cfg.reference = Reference::hf;
        if (o.qkv_bias->count() && !weights->qkv_bias)
            throw UsageError("--qkv-bias was given but " + weights_path + " has no qkv.bias");
        cfg.qkv_bias = weights->qkv_bias.has_value();
        require_finite_weights(*weights, weights_path);
    } else if (block) {
        throw UsageError("--block needs --weights FILE");
    }
    require_valid(cfg, &o);  // before the default input or weights are allocated
    // The upstream gradient G on the output: loss = sum(out_drop * G) (core/engine/backward.hpp).
    if ((grad || !grad_output_path.empty()) && cfg.path != AttentionPath::standard)
        throw UsageError(std::string(grad ? "--grad" : "--grad-output") +
                         ": the backward pass follows the textbook path (masks included); drop --flash, --kv-cache "
                         "and --window");
    std::optional<Tensor> grad_output;
    if (!grad_output_path.empty()) {
        Array g = read_npy(grad_output_path);
        const Shape expected{cfg.batch, cfg.tokens, cfg.dim};
        if (shape_of(g) != expected)
            throw UsageError("--grad-output " + grad_output_path + ": has shape " + format_shape(shape_of(g)) +
                             ", expected out's shape [B, N, C] = " + format_shape(expected));
        require_finite(g, grad_output_path);
        grad_output = Tensor{std::move(g), {"B", "N", "C"}};
    }
    if (!weights) weights = default_weights(cfg);
    if (!input) input = default_input(cfg);
    Trace trace = run_attention(cfg, *weights, *input);
    if (grad_output || grad)
        trace.gradients = std::make_shared<const Gradients>(run_attention_backward(
            trace, *weights, grad_output ? *grad_output : default_grad_output(cfg),
            grad_output ? grad_output_path : "N(0, 1) from seed " + std::to_string(cfg.seed)));
    dump_trace(trace, dump_dir);
    const std::string extra = std::string(trace.gradients ? ", grad_<step>.npy, grad_<param>.npy" : "") +
                              (cfg.path == AttentionPath::flash ? ", flash_m.npy, flash_l.npy" : "");
    std::printf("wrote %zu steps to %s/ (<step>.npy%s and trace.json)\n%s\n", trace.steps.size(), dump_dir.c_str(),
                extra.c_str(), checks_summary(trace).c_str());
    if (const Gradients* g = trace.gradients.get())
        std::printf("gradients of sum(out_drop * G), G: %s; ||grad_input|| = %.4g, ||grad_scores|| = %.4g, "
                    "||grad_qkv.weight|| = %.4g, ||grad_proj.weight|| = %.4g\n",
                    g->grad_output_source.c_str(), g->find("input")->norm, g->find("scores")->norm,
                    g->param("qkv.weight")->norm, g->param("proj.weight")->norm);
    if (trace.beyond || cfg.masked()) std::printf("%s\n", beyond_summary(trace).c_str());
    return 0;
}

// ---- bench ----------------------------------------------------------------------------------
// What bench measures besides the default attention layer (app/cli/cli_bench.cpp).
struct BenchExtras {
    bool vit_b = false;
    bool sgemm = false;
    std::string open_path;
    std::string vit_model;
};

struct BenchArgs {
    ConfigOptions config;
    std::size_t repeat = 50;
    bool json = false;
    BenchExtras extras;
};

int cmd_bench(const BenchArgs& args) {
    const ConfigOptions& o = args.config;
    const std::size_t repeat = args.repeat;
    const BenchExtras& extra = args.extras;
    if (repeat < 1 || repeat > 100000) throw UsageError("--repeat " + std::to_string(repeat) + " must be in 1..100000");
    if (extra.sgemm) {
        std::cout << bench_sgemm().dump() << "\n";
        return 0;
    }
    if (!extra.open_path.empty()) {
        std::cout << bench_open(extra.open_path, repeat).dump() << "\n";
        return 0;
    }
    if (!extra.vit_model.empty()) {
        std::cout << bench_vit_model(extra.vit_model, repeat).dump() << "\n";
        return 0;
    }
    if (extra.vit_b) {
        std::cout << bench_vit_b(repeat).dump() << "\n";
        return 0;
    }
    const AttentionConfig& cfg = o.config;
    require_valid(cfg, &o);
    nlohmann::json j = bench_attention(cfg, repeat);
    const double median = j["median_ms"], gflops = j["gflops_per_s"];
    const int threads = j["blas_threads"];
    if (args.json) {
        j["config"] = config_to_json(cfg);
        std::cout << j.dump() << "\n";
    } else {
        std::printf("B=%zu N=%zu C=%zu h=%zu: median %.3f ms over %zu runs (min %.3f, max %.3f), %.1f GFLOP/s, "
                    "%d BLAS threads, every step recorded; memory %.2fx the recorded tensors\n",
                    cfg.batch, cfg.tokens, cfg.dim, cfg.heads, median, repeat, j["min_ms"].get<double>(),
                    j["max_ms"].get<double>(), gflops, threads, j["memory_ratio"].get<double>());
    }
    return 0;
}

// ---- the desktop app ------------------------------------------------------------------------
std::pair<int, int> parse_size(const std::string& text) {
    int w = 0, h = 0;
    char x = 0, rest = 0;
    if (std::sscanf(text.c_str(), "%d%c%d%c", &w, &x, &h, &rest) != 3 || (x != 'x' && x != 'X') || w < 64 ||
        h < 64 || w > 16384 || h > 16384)
        throw UsageError("--size " + text + ": expected WIDTHxHEIGHT with each side in 64..16384, e.g. 1600x1000");
    return {w, h};
}

// The app's options (no command): the demo config, what to open, the classroom and teaching options.
struct GuiArgs {
    ConfigOptions config;
    GuiOptions gui;
    std::string size = "1600x1000";
    ClassroomOptions classroom;
    bool demo_vit = false;  // --demo-vit: the installed demo ViT (about.hpp: demo_model_path)
    bool size_given = false;
};

int cmd_gui(GuiArgs& args, char** argv) {
    const ConfigOptions& o = args.config;
    GuiOptions& g = args.gui;
    g.language = args.classroom.language;
    g.presentation = args.classroom.presentation;
    g.quiz = args.classroom.quiz;
    g.config = o.config;
    g.config_from_user = o.any_given();
    g.tile_from_user = o.beyond.tile->count() > 0;
    if (o.heads->count()) g.heads = o.config.heads;
    std::tie(g.width, g.height) = parse_size(args.size);
    g.size_from_user = args.size_given;
    if (!g.layout_json_path.empty()) {
        if (g.screenshot_path.empty())
            throw UsageError("--layout-json " + g.layout_json_path + ": goes with --screenshot OUT.png (the layout of its last frame)");
        const std::filesystem::path folder = std::filesystem::path(g.layout_json_path).parent_path();
        if (!folder.empty() && !std::filesystem::is_directory(folder))
            throw UsageError("--layout-json " + g.layout_json_path + ": no folder " + folder.string());
    }
    apply_teach_gui_options(g);
    const auto names = path_step_names(g.config);  // core/paths/beyond.hpp: the steps of the chosen path
    if (!g.step.empty() && std::find(names.begin(), names.end(), g.step) == names.end()) {
        std::string list;
        for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
        throw UsageError("--step " + g.step + ": no such step; the steps are " + list);
    }
    require_valid(g.config, &o);
    if (args.demo_vit) {
        if (!g.model_path.empty())
            throw UsageError("--demo-vit opens the installed demo model; drop --model " + g.model_path + " or --demo-vit");
        g.model_path = demo_model_path();
        if (!std::filesystem::is_regular_file(g.model_path))
            throw UsageError("--demo-vit: the demo model is not installed: " + g.model_path + " is missing");
        if (g.image_path.empty()) g.image_path = demo_image_path();
    }
    if (g.model_path.empty() && g.drop_path > 0.0f)
        throw UsageError("--drop-path applies to a ViT: add --model FILE --image PICTURE");
    if (g.model_path.empty() && (g.no_pos_embed || g.shuffle_seed))
        throw UsageError(std::string(g.shuffle_seed ? "--shuffle-patches" : "--no-pos-embed") +
                         " applies to a ViT: add --model FILE --image PICTURE");
#ifdef ATTNSCOPE_HAS_GUI
    prefer_sleeping_workers(argv);  // core/kernels/blas_kernels.hpp: idle workers leave the cores to the rasterizer
    return run_gui(g);
#else
    (void)argv;
    if (!g.screenshot_path.empty() || !g.open_path.empty() || g.bench)
        throw UsageError("this attnscope was built without the desktop app (--screenshot, --bench-gui, FILE)");
    print_trace(run_attention(g.config));
    return 0;
#endif
}

void add_gui_options(CLI::App& app, GuiArgs& args) {
    GuiOptions& g = args.gui;
    add_config_options(app, args.config);
    add_classroom_options(app, args.classroom);  // --lang, --presentation, --quiz (app/cli/cli_handout.cpp)
    add_memory_budget_option(app);
    app.add_option("file", g.open_path, "open this file in the app (torch.save .pt/.pth/.bin/.ckpt, .npy, .npz, .safetensors or a folder)");
    app.add_option("--block", g.block, "the block of a multi-block file")->check(whole_number(1u << 20));
    app.add_option("--model", g.model_path, "a ViT checkpoint (timm, DeiT, torchvision or Hugging Face; torch.save, .safetensors or .npz) for the Image panel");
    app.add_option("--image", g.image_path, "the picture the ViT looks at (PNG or JPG)");
    app.add_flag("--demo-vit", args.demo_vit,
                 "open the demo ViT installed with attnscope (<bin>/../share/attnscope/models/demo_vit.safetensors) on "
                 "one of its sample pictures (or on --image)");
    app.add_flag("--no-pos-embed", g.no_pos_embed, "the ViT of --model runs with its position embeddings set to zeros");
    app.add_option("--shuffle-patches", g.shuffle_seed,
                   "the ViT of --model also runs on the picture with its patches shuffled (this seed's permutation)")
        ->check(whole_number(UINT64_MAX));
    app.add_option("--drop-path", g.drop_path,
                   "timm's drop_path_rate for the ViT of --model (block i: linspace(0, P, depth)[i]); with --training "
                   "the masks are drawn from --seed")
        ->check(CLI::Range(0.0, 0.99));
    app.add_option("--screenshot", g.screenshot_path, "render the app headless for a few frames, write this PNG, exit");
    app.add_option("--step", g.step, "step selected at start (e.g. attn)");
    app.add_option("--layout-json", g.layout_json_path,
                   "with --screenshot: also write where the last frame put each panel, and how much of it is in "
                   "sight, as JSON");
    app.add_option_function<std::string>(
           "--size",
           [&args](const std::string& size) {
               args.size = size;
               args.size_given = true;
           },
           "window or screenshot size WIDTHxHEIGHT (default: the screenshot 1600x1000, the window the desktop's work area)");
    add_teach_gui_options(app);
    app.add_flag("--gradients", g.show_gradients, "open the Gradients panel (backward pass, saturation demo)");
    app.add_flag("--bench-gui", g.bench, "time the app headless (first frame, step and head switches, idle frames), JSON");
}

void add_trace_command(CLI::App& app, CommandAction& action) {
    auto args = std::make_shared<TraceArgs>();
    CLI::App* trace = app.add_subcommand("trace", "print every step: name, shape, PyTorch line, contiguity note");
    add_config_options(*trace, args->config);
    add_memory_budget_option(*trace);
    trace->add_flag("--json", args->json, "print the trace as JSON");
    trace->callback([args, &action] { action = [args] { return cmd_trace(*args); }; });
}

void add_run_command(CLI::App& app, CommandAction& action) {
    auto args = std::make_shared<RunArgs>();
    CLI::App* run = app.add_subcommand("run", "run the layer and dump every step as DIR/<step>.npy + DIR/trace.json");
    add_config_options(*run, args->config);
    add_memory_budget_option(*run);
    run->add_flag("--force", args->force, "overwrite the files of an earlier dump in DIR");
    run->add_option("--weights", args->weights, "attention weights (torch.save, .safetensors, .npz) under timm's, the reference MultiHeadAttention's, nn.MultiheadAttention's or Hugging Face's names");
    run->add_option("--block", args->block, "read blocks.<I>.attn.* from a whole checkpoint")->check(whole_number(1u << 20));
    run->add_option("--input", args->input, "x as a .npy of shape [B, N, C] (sets B, N, C)");
    run->add_option("--dump", args->dump, "folder for the dump")->required();
    run->add_option("--grad-output", args->grad_output,
                    "G.npy [B, N, C]: the gradient on the output (loss = sum(out * G)); also dumps grad_<step>.npy");
    run->add_flag("--grad", args->grad, "also run the backward pass with G ~ N(0, 1) from --seed; dumps grad_<step>.npy");
    run->callback([args, &action] { action = [args] { return cmd_run(*args); }; });
}

void add_bench_command(CLI::App& app, CommandAction& action) {
    auto args = std::make_shared<BenchArgs>();
    CLI::App* bench = app.add_subcommand("bench", "median time of the full recorded forward");
    add_config_options(*bench, args->config);
    add_memory_budget_option(*bench);
    bench->add_option("--repeat", args->repeat, "timed runs")->check(whole_number(100000))->capture_default_str();
    bench->add_flag("--json", args->json, "print JSON");
    BenchExtras& extras = args->extras;
    bench->add_flag("--vit-b", extras.vit_b, "ViT-B/16 on a 224x224 image instead (random weights), JSON");
    bench->add_flag("--sgemm", extras.sgemm, "OpenBLAS sgemm GFLOP/s on 1 thread and on all, JSON");
    bench->add_option("--open", extras.open_path, "time opening FILE and listing its tensors, JSON");
    bench->add_option("--vit-model", extras.vit_model,
                      "time loading a ViT checkpoint (against reading the file once) and its forward, JSON");
    bench->callback([args, &action] { action = [args] { return cmd_bench(*args); }; });
}

}  // namespace

void add_reference_option(CLI::App& app, AttentionConfig& c, const CLI::Option* attn_drop) {
    app.add_option_function<std::string>(
           "--reference", [&c](const std::string& name) { c.reference = name == "mha" ? Reference::mha : Reference::vit; },
           "the reference code the steps follow: vit (ViTAttention, default) or mha (the article's "
           "MultiHeadAttention: qkv_proj with bias, qkv[0] indexing, dropout 0.1, no output dropout)")
        ->check(CLI::IsMember({"vit", "mha"}));
    app.parse_complete_callback([&c, attn_drop] {
        if (c.reference != Reference::mha) return;
        c.qkv_bias = true;  // qkv_proj = nn.Linear(embed_dim, embed_dim * 3): bias on
        if (!attn_drop->count()) c.attn_drop = 0.1f;  // MultiHeadAttention(..., dropout=0.1)
    });
}

int run_cli(int argc, char** argv) {
    keep_freed_memory();  // re-runs reuse the memory of the last one (app/cli/cli_bench.cpp)
    CLI::App app{"attnscope: step through multi-head attention one tensor at a time.\n"
                 "Without a command, opens the desktop app on the demo (x = torch.randn(2, 16, 768), 8 heads).",
                 "attnscope"};
    app.set_version_flag("--version", [] { return version_text(); },
                         "print the version, the OpenBLAS build and kernels, whether AVX-512 is used, and exit");
    app.require_subcommand(0, 1);
    GuiArgs gui;  // no command: the desktop app
    add_gui_options(app, gui);
    CommandAction action;  // a command's callback sets what to run
    add_trace_command(app, action);
    add_run_command(app, action);
    add_bench_command(app, action);
    add_file_commands(app, action);
    add_vit_command(app, action);
    add_teach_commands(app, action);
    add_handout_command(app, action);

    try {
        app.parse(argc, argv);
        return action ? action() : cmd_gui(gui, argv);
    } catch (const CLI::ParseError& e) {
        if (e.get_exit_code() == 0) return app.exit(e);  // --help
        std::fprintf(stderr, "attnscope: %s (see attnscope --help)\n", e.what());
        return 2;
    } catch (const UsageError& e) {
        std::fprintf(stderr, "attnscope: %s\n", e.what());
        return 2;
    } catch (const CoreError& e) {  // a file, a shape or a configuration attnscope refuses
        std::fprintf(stderr, "attnscope: %s\n", e.what());
        return 2;
    } catch (const std::bad_alloc&) {
        std::fprintf(stderr, "attnscope: out of memory; try a smaller --tokens or --batch\n");
        return 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "attnscope: internal error: %s\n", e.what());
        return 1;
    }
}

}  // namespace attnscope
