// `attnscope vit`: a whole Vision Transformer forward on an image.
//
//   vit --model FILE (--image PNG/JPG | --pixels X.npy) [--heads H] [--json] [--top K] [--dump DIR]
//       [--overlay OUT.png [--block I] [--head H|mean] [--query cls|ROW,COL]]
//       [--rollout OUT.png [--fusion mean|max|min]] [--no-pos-embed] [--shuffle-patches SEED]
//       [--drop-path P [--training] [--seed S]] [--class K]
//
// Prints the prediction (or {"family", "logits", "top"} as JSON), dumps logits.npy, norm.npy and block<I>_attn.npy,
// and writes the attention on the picture as PNG heat overlays. --no-pos-embed runs the model with its
// position embeddings set to zeros; --shuffle-patches runs it on the picture with its patches shuffled
// (core/vit/positions.hpp) and measures how far that run is from the one on the picture itself.
// --drop-path gives the blocks timm's stochastic depth (rates 0 .. P over the blocks); with --training
// each drop_path step drops whole samples' branches (masks from --seed), and --dump adds every
// block's ls<k>/drop_path<k> steps and masks. With --json (and a classifier) the backward pass of the
// class's logit (--class K, else each image's prediction; core/vit/vit_backward.hpp) runs too, and
// "gradients" holds every block's gradient flow: the norms entering (at the output) and leaving (at
// the input) its attention and MLP branches and along its residual stream; --class also prints them.
// --pixels may hold a batch [B, 3, H, W]. Bad options and files: one line on
// stderr and exit status 2 (UsageError, FileError, ShapeError, reported by run_cli).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "attention_maps.hpp"
#include "cli.hpp"
#include "config.hpp"
#include "memory_budget.hpp"
#include "image.hpp"
#include "io.hpp"
#include "positions.hpp"
#include "vit.hpp"
#include "vit_backward.hpp"

namespace attnscope {

namespace {

constexpr std::size_t kMinOverlaySide = 256;  // small images are enlarged (nearest) to at least this

struct VitOptions {
    std::string model, image, pixels, dump, overlay, rollout;
    std::optional<std::size_t> heads, block;
    std::string head = "mean", query = "cls", fusion = "mean";
    std::size_t top = 5;
    bool json = false;
    bool force = false;  // overwrite existing --dump/--overlay/--rollout outputs
    bool no_pos_embed = false;                  // pos_embed set to zeros
    std::optional<std::uint64_t> shuffle_seed;  // run on the picture with its patches shuffled by this seed
    float drop_path = 0.0f;                     // timm's drop_path_rate
    bool training = false;                      // model.train(): DropPath draws its masks
    std::uint64_t seed = 0;                     // ... from this seed
    std::optional<std::size_t> target_class;    // --class: whose logit the backward differentiates
    std::vector<CLI::Option*> overlay_only, rollout_only;
};

// The model's input and the picture the heat is drawn on.
struct Input {
    Tensor pixels;    // [1, 3, S, S], normalized
    RgbImage picture;  // the image as given (or the un-normalized pixels)
};

Input read_input(const VitOptions& o, const VitModel& model) {
    const std::size_t S = model.config.image_size;
    if (!o.image.empty()) {
        RgbImage picture = load_image(o.image, memory_budget());
        Tensor pixels = image_to_pixels(picture, S, model.mean, model.std);
        return {std::move(pixels), std::move(picture)};
    }
    Array x = read_npy(o.pixels);
    const Shape xs = shape_of(x);
    if (xs.size() != 4 || xs[0] == 0 || xs[1] != 3 || xs[2] != S || xs[3] != S)
        throw UsageError(o.pixels + ": has shape " + format_shape(xs) + ", expected [1, 3, H, W] = " +
                         format_shape({1, 3, S, S}) + " for " + o.model +
                         " (already normalized float32; a batch [B, 3, H, W] runs too)");
    if (!std::all_of(x.begin(), x.end(), [](float v) { return std::isfinite(v); }))
        throw UsageError(o.pixels + ": contains NaN or Inf; attnscope needs finite pixels");
    RgbImage picture = pixels_to_image(x, 0, model.mean, model.std);
    return {Tensor{std::move(x), {"B", "3", "H", "W"}}, std::move(picture)};
}

// "cls" -> token 0; "ROW,COL" -> that patch's token.
std::size_t parse_query(const std::string& text, const PatchGrid& grid) {
    if (text == "cls") return 0;
    std::size_t row = 0, col = 0;
    char comma = 0, rest = 0;
    const bool digits = !text.empty() && text.find_first_not_of("0123456789,") == std::string::npos;
    if (!digits || std::sscanf(text.c_str(), "%zu%c%zu%c", &row, &comma, &col, &rest) != 3 || comma != ',')
        throw UsageError("--query " + text + ": expected cls or ROW,COL of a patch, e.g. 3,4");
    if (row >= grid.rows || col >= grid.cols)
        throw UsageError("--query " + text + " is outside the " + std::to_string(grid.rows) + " x " +
                         std::to_string(grid.cols) + " patch grid (ROW in 0.." + std::to_string(grid.rows - 1) +
                         ", COL in 0.." + std::to_string(grid.cols - 1) + ")");
    return grid.token(row, col);
}

// The picture enlarged so that a 64 x 64 image is not a thumbnail.
RgbImage display_picture(const RgbImage& picture) {
    const std::size_t side = std::min(picture.width, picture.height);
    return side >= kMinOverlaySide ? picture : upscale_nearest(picture, (kMinOverlaySide + side - 1) / side);
}

// --overlay: one block's attention of one query token over the image, one head or their mean.
std::string write_overlay(const VitOptions& o, const VitTrace& trace, const RgbImage& picture) {
    const std::size_t depth = trace.blocks.size();
    const std::size_t block = o.block.value_or(depth - 1);
    if (block >= depth)
        throw UsageError("--block " + std::to_string(block) + " is out of range: the model has " +
                         std::to_string(depth) + " blocks (0.." + std::to_string(depth - 1) + ")");
    const std::size_t heads = trace.config.heads;
    const Array& attn = trace.blocks[block].attn();  // [1, h, N, N']
    Array matrix;                                     // [N, N']
    if (o.head == "mean") {
        matrix = fuse_heads(attn, 0, HeadFusion::mean);
    } else {
        const bool digits = !o.head.empty() && o.head.size() < 10 && o.head.find_first_not_of("0123456789") == std::string::npos;
        if (!digits || std::stoul(o.head) >= heads)
            throw UsageError("--head " + o.head + ": expected mean or a head from 0 to " + std::to_string(heads - 1));
        matrix = head_attention(attn, 0, std::stoul(o.head));
    }
    const std::size_t query = parse_query(o.query, trace.grid);
    write_png(o.overlay, heat_overlay(display_picture(picture), token_map(matrix, query, trace.grid)));
    return "wrote " + o.overlay + ": block " + std::to_string(block) + ", head " + o.head + ", query " + o.query +
           " over the " + std::to_string(trace.grid.rows) + " x " + std::to_string(trace.grid.cols) + " patches";
}

// --rollout: the class token's row of the attention rollout over all blocks.
std::string write_rollout(const VitOptions& o, const VitTrace& trace, const RgbImage& picture) {
    const HeadFusion fusion = parse_head_fusion(o.fusion);
    std::vector<const Array*> attns;
    for (const VitBlockTrace& b : trace.blocks) attns.push_back(&b.attn());
    const Array rollout = attention_rollout(attns, 0, fusion);  // [N, N]
    write_png(o.rollout, heat_overlay(display_picture(picture), token_map(rollout, 0, trace.grid)));
    return "wrote " + o.rollout + ": class-token attention rollout over " + std::to_string(attns.size()) +
           " blocks, heads fused by " + head_fusion_name(fusion);
}

// The files --dump writes for one block's LayerScale and DropPath (none without them): the steps
// block<I>_<step>.npy, and the masks block<I>_drop_path<k>_mask.npy [B, 1, 1].
std::vector<std::string> branch_end_files(const VitConfig& c, std::size_t block) {
    std::vector<std::string> files;
    const std::string prefix = "block" + std::to_string(block) + "_";
    for (const std::string& step : vit_block_step_names(c)) {
        const auto& optional = vit_optional_block_step_names();
        if (std::find(optional.begin(), optional.end(), step) == optional.end()) continue;
        files.push_back(prefix + step + ".npy");
        if (step.rfind("drop_path", 0) == 0) files.push_back(prefix + step + "_mask.npy");
    }
    return files;
}

void dump(const std::string& dir, const VitTrace& trace) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec || !std::filesystem::is_directory(dir))
        throw FileError(dir + ": cannot create the dump folder (" + ec.message() + ")");
    write_npy(dir + "/norm.npy", trace.at(VitStep::norm).tensor().values);  // the encoder's output, every token
    if (trace.has_head()) write_npy(dir + "/logits.npy", trace.logits());
    for (std::size_t i = 0; i < trace.blocks.size(); ++i) {
        const VitBlockTrace& b = trace.blocks[i];
        const std::string prefix = dir + "/block" + std::to_string(i) + "_";
        write_npy(prefix + "attn.npy", b.attn());
        for (const std::string& step : vit_optional_block_step_names())
            for (const Step& s : b.steps)
                if (s.name == step) write_npy(prefix + step + ".npy", s.tensor().values);
        for (const DropPathRecord& r : b.drop_paths) write_npy(prefix + r.step + "_mask.npy", r.mask);
    }
}

// --drop-path: per block, which samples lost which branch.
void print_drop_paths(const VitTrace& trace) {
    const VitConfig& c = trace.config;
    std::printf("drop path (stochastic depth): rate %g over %zu blocks, %s\n", static_cast<double>(c.drop_path_rate),
                c.depth,
                c.training ? "training mode: each drop_path step keeps a sample's branch with probability 1 - p "
                             "and scales it by 1/(1-p)"
                           : "eval mode: every drop_path step is the identity (add --training to draw the masks)");
    for (std::size_t i = 0; i < trace.blocks.size(); ++i)
        for (const DropPathRecord& r : trace.blocks[i].drop_paths) {
            std::string dropped;
            for (std::size_t b = 0; b < r.mask.size(); ++b)
                if (r.dropped(b)) dropped += (dropped.empty() ? "" : ", ") + std::to_string(b);
            std::printf("  block %zu %s (p = %.4g): %s\n", i, r.step.c_str(), static_cast<double>(r.rate),
                        !r.active       ? "identity"
                        : dropped.empty() ? "every sample keeps its branch"
                                          : ("dropped for sample(s) " + dropped +
                                             ": the residual carries x alone (max |residual - x| = " +
                                             std::to_string(r.dropped_residual_vs_x) + ")")
                                                .c_str());
        }
}

// --shuffle-patches: the permutation, one line.
void print_order(const PositionExperiment& e) {
    std::printf("patches shuffled with seed %llu: shuffled patch i shows original patch order[i] =",
                static_cast<unsigned long long>(e.seed));
    for (std::size_t i : e.order) std::printf(" %zu", i);
    std::printf("\n");
}

// --shuffle-patches: the run on the picture itself, and how far the shuffled run is from it.
void print_difference(const PositionExperiment& e, const VitTrace& as_is, const std::vector<std::string>& labels) {
    if (as_is.has_head()) {
        const ClassProb best = ranked_classes(as_is.probs(), 0, 1, labels).front();
        std::printf("on the picture as is: %s (p = %.4f)\n", best.label.c_str(), best.prob);
    }
    const ShuffleDifference& d = e.difference;
    std::printf(
        "max |attn_shuffled[t, u] - attn[o(t), o(u)]| over %zu blocks: %.3g (block %zu); class token output: "
        "%.3g; probs: %.3g\n",
        as_is.blocks.size(), d.attn, d.attn_block, d.cls, d.probs);
    std::printf(e.pos_embed ? "with position embeddings each patch is added the embedding of the place it lands on: "
                              "the model sees another picture\n"
                            : "without position embeddings self-attention is permutation-equivariant: the same maps "
                              "with rows and columns permuted, the same class token (up to float rounding)\n");
}

// "gradients": the classes whose logits were differentiated and every block's gradient flow.
nlohmann::json gradients_json(const VitGradients& g) {
    nlohmann::json blocks = nlohmann::json::array();
    for (std::size_t i = 0; i < g.blocks.size(); ++i) {
        const VitBlockFlow& f = g.blocks[i].flow;
        blocks.push_back({{"block", i},
                          {"residual", {{"out", f.residual_out}, {"mid", f.residual_mid}, {"in", f.residual_in}}},
                          {"attention", {{"out", f.attn_out}, {"in", f.attn_in}}},
                          {"mlp", {{"out", f.mlp_out}, {"in", f.mlp_in}}}});
    }
    return {{"classes", g.classes}, {"predicted", g.predicted}, {"blocks", blocks}};
}

// The gradient flow as a table, one line per block, from the head down.
void print_gradient_flow(const VitGradients& g, const std::vector<std::string>& labels) {
    const std::size_t k = g.classes.front();
    const std::string label = k < labels.size() && labels[k] != "class " + std::to_string(k) ? " (" + labels[k] + ")" : "";
    std::printf("gradient of the logit of class %zu%s%s, ||grad|| per block from the head down:\n", k, label.c_str(),
                g.classes.size() > 1 ? " of every image" : "");
    std::printf("  block  residual out  mlp out   mlp in  residual mid  attn out  attn in  residual in\n");
    for (std::size_t i = g.blocks.size(); i-- > 0;) {
        const VitBlockFlow& f = g.blocks[i].flow;
        std::printf("  %5zu  %12.4g  %7.4g  %7.4g  %12.4g  %8.4g  %7.4g  %11.4g\n", i, f.residual_out, f.mlp_out,
                    f.mlp_in, f.residual_mid, f.attn_out, f.attn_in, f.residual_in);
    }
}

nlohmann::json shuffle_json(const PositionExperiment& e, const VitTrace& as_is) {
    nlohmann::json j{{"seed", e.seed},
                     {"order", e.order},
                     {"max_attn_difference", e.difference.attn},
                     {"max_cls_difference", e.difference.cls},
                     {"max_probs_difference", e.difference.probs}};
    if (as_is.has_head()) j["unshuffled_logits"] = std::vector<float>(as_is.logits().begin(), as_is.logits().end());
    return j;
}

int run_vit_command(const VitOptions& o) {
    if (o.image.empty() == o.pixels.empty()) throw UsageError("vit: give exactly one of --image PNG/JPG or --pixels X.npy");
    for (const CLI::Option* opt : o.overlay_only)
        if (opt->count() && o.overlay.empty()) throw UsageError(opt->get_name() + " applies to --overlay OUT.png; add it");
    for (const CLI::Option* opt : o.rollout_only)
        if (opt->count() && o.rollout.empty()) throw UsageError(opt->get_name() + " applies to --rollout OUT.png; add it");
    if (o.top == 0) throw UsageError("--top must be at least 1");

    if (o.training && o.drop_path == 0.0f)
        throw UsageError("--training needs --drop-path P: without a drop-path rate the ViT has nothing that trains "
                         "differently");
    VitModel model = o.no_pos_embed ? without_pos_embed(load_vit_model(o.model, o.heads, memory_budget()))
                                    : load_vit_model(o.model, o.heads, memory_budget());
    model.config.drop_path_rate = o.drop_path;
    model.config.training = o.training;
    model.config.seed = o.seed;
    const VitConfig& c = model.config;
    if (const auto problems = validate(c, 1, memory_budget()); !problems.empty())
        throw UsageError("--drop-path: " + english(problems.front()));
    std::vector<std::string> outputs;
    if (!o.overlay.empty()) outputs.push_back(o.overlay);
    if (!o.rollout.empty()) outputs.push_back(o.rollout);
    if (!o.dump.empty()) {
        outputs.push_back(o.dump + "/norm.npy");
        if (c.classes) outputs.push_back(o.dump + "/logits.npy");
        for (std::size_t i = 0; i < c.depth; ++i) {
            outputs.push_back(o.dump + "/block" + std::to_string(i) + "_attn.npy");
            for (const std::string& f : branch_end_files(c, i)) outputs.push_back(o.dump + "/" + f);
        }
    }
    refuse_overwrite(outputs, o.force);
    const Input input = read_input(o, model);
    if (o.shuffle_seed && input.pixels.values.shape()[0] != 1)
        throw UsageError("--shuffle-patches runs one picture; " + o.pixels + " holds a batch of " +
                         std::to_string(input.pixels.values.shape()[0]));
    const VitTrace as_is = run_vit(model, input.pixels);
    // With --shuffle-patches every output is of the shuffled run, drawn on the shuffled picture.
    const std::optional<PositionExperiment> shuffled =
        o.shuffle_seed ? std::optional<PositionExperiment>(
                             run_shuffled(model, input.pixels, as_is, !o.no_pos_embed, *o.shuffle_seed))
                       : std::nullopt;
    const VitTrace& trace = shuffled ? shuffled->shuffled : as_is;
    const RgbImage picture =
        shuffled ? pixels_to_image(shuffled->shuffled_pixels.values, 0, model.mean, model.std) : input.picture;

    // The backward pass: for --class (refused without a classifier), and for --json when the model has
    // one and its trace takes at most half the memory budget (the backward about doubles it, as the
    // app's rule is); otherwise "gradients" is null.
    std::optional<VitGradients> grads;
    const bool backward_fits = vit_trace_bytes(c, trace.batch) <= memory_budget() / 2;
    if (o.target_class || (o.json && trace.has_head() && backward_fits))
        grads = run_vit_backward(model, trace, o.target_class);

    std::vector<std::string> wrote;
    if (!o.overlay.empty()) wrote.push_back(write_overlay(o, trace, picture));
    if (!o.rollout.empty()) wrote.push_back(write_rollout(o, trace, picture));
    if (!o.dump.empty()) {
        dump(o.dump, trace);
        wrote.push_back("wrote " + o.dump + (c.classes ? "/logits.npy, " : "/") + "norm.npy and block<I>_attn.npy [B, h, N, N] for " +
                        std::to_string(c.depth) + " blocks");
        if (const auto files = branch_end_files(c, 0); !files.empty()) {
            std::string names;
            for (const std::string& f : files) names += (names.empty() ? "" : ", ") + f.substr(f.find('_') + 1);
            wrote.push_back("wrote block<I>_{" + names + "} for every block");
        }
    }

    const std::vector<ClassProb> top = trace.has_head() ? ranked_classes(trace.probs(), 0, o.top, model.labels)
                                                        : std::vector<ClassProb>{};
    if (o.json) {
        const std::vector<float> logits =
            trace.has_head() ? std::vector<float>(trace.logits().begin(), trace.logits().end()) : std::vector<float>{};
        nlohmann::json j{{"family", vit_family_name(c.family)}, {"logits", logits}, {"top", nlohmann::json::array()}};
        for (const ClassProb& t : top) j["top"].push_back({{"index", t.index}, {"label", t.label}, {"prob", t.prob}});
        if (o.no_pos_embed) j["pos_embed"] = false;
        if (c.records_drop_path()) {
            nlohmann::json dp = nlohmann::json::array();
            for (const VitBlockTrace& b : trace.blocks)
                for (const DropPathRecord& r : b.drop_paths) {
                    std::vector<std::size_t> dropped;
                    for (std::size_t s = 0; s < r.mask.size(); ++s)
                        if (r.dropped(s)) dropped.push_back(s);
                    dp.push_back({{"step", r.step}, {"rate", r.rate}, {"active", r.active}, {"dropped", dropped}});
                }
            j["drop_path"] = {{"rate", c.drop_path_rate}, {"training", c.training}, {"seed", c.seed}, {"steps", dp}};
        }
        if (shuffled) j["shuffle"] = shuffle_json(*shuffled, as_is);
        j["gradients"] = grads ? gradients_json(*grads) : nlohmann::json(nullptr);
        std::cout << j.dump() << "\n";
        return 0;
    }
    std::string embedding = "patch " + std::to_string(c.patch_size);
    if (c.has_stem()) {  // "CNN stem 3->8->16 (3x3 stride 2 each, stride 4)"
        embedding = "CNN stem 3";
        for (const std::size_t ch : c.stem_channels) embedding += "->" + std::to_string(ch);
        embedding += " (" + std::to_string(c.stem_kernel) + "x" + std::to_string(c.stem_kernel) +
                     " stride 2 each, stride " + std::to_string(c.patch_size) + ")";
    }
    std::printf("%s: %s ViT %zux%zu, %s (%zux%zu grid + %s = %zu tokens), D=%zu, %zu blocks, "
                "%zu heads (%s), MLP %zu, %zu classes\n",
                o.model.c_str(), vit_family_name(c.family), c.image_size, c.image_size, embedding.c_str(), c.grid(), c.grid(),
                c.prefix_tokens() == 2 ? "class and distillation tokens" : "class token", c.tokens(), c.dim, c.depth,
                c.heads, english(model.heads_from).c_str(), c.mlp_hidden, c.classes);
    if (o.no_pos_embed) std::printf("position embeddings: off (pos_embed set to zeros)\n");
    if (c.layer_scale) std::printf("LayerScale: ls1.gamma and ls2.gamma in every block (recorded as ls1, ls2)\n");
    if (c.records_drop_path()) print_drop_paths(trace);
    if (shuffled) print_order(*shuffled);
    if (top.empty())
        std::printf("no classifier (the encoder alone, as a Hugging Face ViTModel): no prediction; --dump writes the "
                    "encoder's output norm.npy\n");
    else if (trace.batch > 1)
        std::printf("prediction for image 0 of the %zu (--json and --dump have them all): %s (p = %.4f)\n", trace.batch,
                    top[0].label.c_str(), top[0].prob);
    else
        std::printf(shuffled ? "prediction on the shuffled picture: %s (p = %.4f)\n" : "prediction: %s (p = %.4f)\n",
                    top[0].label.c_str(), top[0].prob);
    for (const ClassProb& t : top) std::printf("  %.4f  %s\n", t.prob, t.label.c_str());
    if (shuffled) print_difference(*shuffled, as_is, model.labels);
    if (grads && o.target_class) print_gradient_flow(*grads, model.labels);
    if (!trace.nonfinite.ok()) std::printf("%s\n", trace.nonfinite.message.c_str());
    for (const auto& line : wrote) std::printf("%s\n", line.c_str());
    return 0;
}

}  // namespace

void add_vit_command(CLI::App& app, CommandAction& action) {
    auto o = std::make_shared<VitOptions>();
    CLI::App* vit = app.add_subcommand("vit", "run a whole Vision Transformer (timm, DeiT, torchvision, Hugging Face) on an image");
    vit->add_option("--model", o->model, "ViT checkpoint (.safetensors, torch.save .pt/.pth/.bin, .npz)")->required();
    vit->add_option("--image", o->image, "PNG/JPG/...: resized bilinearly (align_corners=False, no antialias) "
                                          "to the model's size, normalized with its mean/std");
    vit->add_option("--pixels", o->pixels, "already normalized float32 .npy [1, 3, H, W]");
    vit->add_option("--heads", o->heads, "heads (else the file's metadata num_heads, its checkpoint config or config.json, or a published ViT's sizes)")->check(CLI::Range(1, 1 << 16));
    vit->add_flag("--json", o->json, "print {\"logits\": [...], \"top\": [{\"index\", \"label\", \"prob\"}, ...], "
                                     "\"gradients\": {\"classes\", \"predicted\", \"blocks\"}} (the backward's gradient flow)");
    vit->add_option("--top", o->top, "how many classes to list")->check(CLI::Range(1, 1 << 20))->capture_default_str();
    add_memory_budget_option(*vit);
    vit->add_flag("--force", o->force, "overwrite existing --dump, --overlay and --rollout files");
    vit->add_option("--dump", o->dump, "folder for logits.npy, norm.npy and block<I>_attn.npy");
    vit->add_option("--overlay", o->overlay, "PNG of one block's attention of one query over the image");
    o->overlay_only = {
        vit->add_option("--block", o->block, "block of --overlay (default: the last)")->check(CLI::Range(0, 1 << 20)),
        vit->add_option("--head", o->head, "head of --overlay: a number or mean")->capture_default_str(),
        vit->add_option("--query", o->query, "query token of --overlay: cls or ROW,COL of a patch")->capture_default_str()};
    vit->add_flag("--no-pos-embed", o->no_pos_embed, "run the model with its position embeddings set to zeros");
    vit->add_option("--shuffle-patches", o->shuffle_seed,
                    "run on the picture with its patches shuffled (this seed's permutation) and compare with the "
                    "run on the picture itself")
        ->check(whole_number(UINT64_MAX));
    vit->add_option("--drop-path", o->drop_path,
                    "timm's drop_path_rate P: block i drops a branch with p = linspace(0, P, depth)[i] (with --training)")
        ->check(CLI::Range(0.0, 1.0));
    vit->add_flag("--training", o->training, "training mode: the drop_path steps draw their per-sample masks");
    vit->add_option("--seed", o->seed, "seed of the drop-path masks")->check(whole_number(UINT64_MAX))->capture_default_str();
    vit->add_option("--class", o->target_class,
                    "class whose logit the backward pass differentiates (default: the prediction); prints every "
                    "block's gradient flow (--json: under \"gradients\")")
        ->check(whole_number(UINT64_MAX));
    vit->add_option("--rollout", o->rollout, "PNG of the class token's attention rollout over all blocks");
    o->rollout_only = {vit->add_option("--fusion", o->fusion, "head fusion of --rollout")
                           ->check(CLI::IsMember({"mean", "max", "min"}))
                           ->capture_default_str()};
    vit->callback([o, &action] { action = [o] { return run_vit_command(*o); }; });
}

}  // namespace attnscope
