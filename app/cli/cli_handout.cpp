// `attnscope handout DIR [config options] [--lang en|zh] [--force]`: a classroom handout.
//
// Runs the attention layer of the config and writes, without a window or GL:
//   DIR/NN_<step>.png   one representative 2-D slice of every step (the inspector's default slice,
//                       coloured with the app's colormaps, app/gui/logic/colormap)
//   DIR/handout.md      the shape table (step, PyTorch line, shape with axis names, strides, view
//                       or copy) and, per step, the narrative (app/gui/logic/narrative) and its image.
// The folder appears whole or not at all: everything goes into a temporary sibling folder that is
// renamed at the end. An existing non-empty DIR is refused unless --force.
//
// Also here: the desktop app's classroom options --lang, --presentation, --quiz.
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "cli.hpp"
#include "config.hpp"
#include "io.hpp"
#include "image.hpp"
#include "logic/colormap.hpp"
#include "logic/i18n.hpp"
#include "logic/narrative.hpp"
#include "logic/slice.hpp"
#include "pipeline.hpp"
#include "run.hpp"

namespace attnscope {

namespace {

struct HandoutOptions {
    AttentionConfig config;
    std::string dir;
    std::string language = "en";
    bool force = false;
};

namespace fs = std::filesystem;

constexpr std::size_t kTargetSide = 512;  // the longer side of an image, in pixels (about)
constexpr std::size_t kMinSide = 48;      // a thin slice ([16, 768]) is stretched to at least this

// The colour range of a step's picture: the app's auto colormap over the slice's min..max.
ui::ColorRange SliceRange(const ui::Slice2D& slice, const Stats& stats) {
    const ui::Colormap cmap = ui::auto_colormap(stats.min, stats.max);
    return ui::make_range(ui::RangeMode::PerSlice, slice.min, slice.max, stats.min, stats.max, 0.0f, 1.0f, cmap,
                          ui::ScaleMode::Linear);
}

// The slice as an RGB image: square cells of kTargetSide / max(rows, cols) pixels (1 to 32), the
// shorter side stretched to kMinSide; NaN grey.
RgbImage SliceImage(const ui::Slice2D& slice, const ui::ColorRange& range) {
    const std::size_t rows = std::max<std::size_t>(slice.rows, 1), cols = std::max<std::size_t>(slice.cols, 1);
    const std::size_t cell = std::clamp<std::size_t>(kTargetSide / std::max(rows, cols), 1, 32);
    const std::size_t cell_h = std::max(cell, (kMinSide + rows - 1) / rows);
    const std::size_t cell_w = std::max(cell, (kMinSide + cols - 1) / cols);
    RgbImage img;
    img.width = cols * cell_w;
    img.height = rows * cell_h;
    img.pixels.assign(img.width * img.height * 3, 128);
    for (std::size_t r = 0; r < slice.rows; ++r)
        for (std::size_t c = 0; c < slice.cols; ++c) {
            const float v = slice.at(r, c);
            std::array<std::uint8_t, 4> rgba = {128, 128, 128, 255};
            if (std::isfinite(v)) rgba = ui::colormap_color(range.colormap, ui::normalize_value(v, range));
            for (std::size_t y = r * cell_h; y < (r + 1) * cell_h; ++y)
                for (std::size_t x = c * cell_w; x < (c + 1) * cell_w; ++x)
                    std::copy(rgba.begin(), rgba.begin() + 3,
                              img.pixels.begin() + static_cast<long>((y * img.width + x) * 3));
        }
    return img;
}

// "[B=2, h=8, N=16, c=96]"
std::string NamedShape(const Step& step) {
    const Shape shape = step.shape();
    std::string s = "[";
    for (std::size_t i = 0; i < shape.size(); ++i) {
        if (i) s += ", ";
        if (i < step.axes().size()) s += step.axes()[i] + "=";
        s += std::to_string(shape[i]);
    }
    return s + "]";
}

// Markdown table cells must not contain '|'.
std::string Cell(std::string text) {
    std::string out;
    for (char ch : text) out += ch == '|' ? std::string("\\|") : std::string(1, ch);
    return out;
}

// One step's picture: its file name and the colour range it was drawn with.
struct Picture {
    std::string file;
    ui::ColorRange range;
};

std::string Markdown(const Trace& trace, const std::vector<Picture>& pictures, ui::Language lang) {
    const AttentionConfig& c = trace.config;
    auto _ = [lang](const char* english) { return std::string(ui::tr_in(lang, english)); };
    std::string md;
    md += "# " + _("Multi-head attention, step by step") + "\n\n";
    char line[256];
    std::snprintf(line, sizeof line, "B = %zu, N = %zu, C = %zu, h = %zu, c = C / h = %zu, %s, seed %llu", c.batch,
                  c.tokens, c.dim, c.heads, c.head_dim(), c.training ? _("training").c_str() : _("eval").c_str(),
                  static_cast<unsigned long long>(c.seed));
    md += (c.reference == Reference::mha ? _("The layer: MultiHeadAttention.forward with")
                                          : _("The layer: ViTAttention.forward with")) +
          " " + line + ".\n\n";
    md += "## " + _("Shape table") + "\n\n";
    md += "| # | " + _("step") + " | PyTorch | " + _("shape (axes)") + " | " + _("strides") + " | " +
          _("view or copy") + " |\n|---|---|---|---|---|---|\n";
    for (std::size_t i = 0; i < trace.steps.size(); ++i) {
        const Step& s = trace.steps[i];
        md += "| " + std::to_string(i + 1) + " | " + s.name + " | `" + Cell(s.code) + "` | " + NamedShape(s) + " | " +
              format_strides(s.torch_strides) + (s.contiguous ? "" : " " + _("(not contiguous)")) + " | " +
              (s.is_view ? _("view") : _("new tensor")) + " |\n";
    }
    md += "\n";
    for (std::size_t i = 0; i < trace.steps.size(); ++i) {
        const Step& s = trace.steps[i];
        const ui::StepNarrative n = ui::step_narrative(s.name, lang, c.reference);
        md += "## " + std::to_string(i + 1) + ". " + s.name + (n.title.empty() ? "" : ": " + n.title) + "\n\n";
        md += "```python\n" + s.code + "\n```\n\n";
        md += _("shape") + " " + NamedShape(s) + ", `" + s.formula + "`\n\n";
        if (!n.text.empty()) md += n.text + "\n\n";
        const ui::SliceSpec spec = ui::default_slice(s.shape());
        const Picture& pic = pictures[i];
        md += "![" + s.name + "](" + pic.file + ")\n\n";
        md += "*" + _("the slice") + " `" + ui::describe_slice(s.name, spec, s.shape().size()) + "`, " +
              ui::tr_in(lang, ui::colormap_name(pic.range.colormap)) + ": " + ui::format_value(pic.range.lo) + " .. " +
              ui::format_value(pic.range.hi) + "*\n\n";
    }
    return md;
}

int RunHandout(const HandoutOptions& o) {
    const auto language = ui::parse_language(o.language);
    if (!language) throw UsageError("--lang " + o.language + ": use en or zh");
    const auto problems = validate(o.config, default_memory_budget());
    if (!problems.empty()) throw UsageError(english(problems.front()));
    const fs::path dir(o.dir);
    std::error_code ec;
    if (fs::exists(dir, ec)) {
        if (!fs::is_directory(dir, ec)) throw UsageError(o.dir + ": exists and is not a folder");
        if (!fs::is_empty(dir, ec) && !o.force)
            throw UsageError(o.dir + ": exists and is not empty; pass --force to replace it");
    }
    const Trace trace = run_attention(o.config);

    // Everything into a temporary sibling folder, renamed at the end.
    const fs::path parent = dir.has_parent_path() ? dir.parent_path() : fs::path(".");
    if (!fs::is_directory(parent, ec)) throw UsageError(o.dir + ": the folder " + parent.string() + " does not exist");
    const fs::path tmp = parent / ("." + dir.filename().string() + ".tmp" + std::to_string(::getpid()));
    fs::remove_all(tmp, ec);
    if (!fs::create_directory(tmp, ec)) throw UsageError(tmp.string() + ": cannot create it: " + ec.message());
    try {
        std::vector<Picture> pictures;
        for (std::size_t i = 0; i < trace.steps.size(); ++i) {
            const Step& s = trace.steps[i];
            char name[96];
            std::snprintf(name, sizeof name, "%02zu_%s.png", i + 1, s.name.c_str());
            const ui::Slice2D slice = ui::extract_slice(s.tensor().values, ui::default_slice(s.shape()));
            const ui::ColorRange range = SliceRange(slice, s.stats);
            write_png((tmp / name).string(), SliceImage(slice, range));
            pictures.push_back({name, range});
        }
        write_file_atomic((tmp / "handout.md").string(), Markdown(trace, pictures, *language));
        if (fs::exists(dir)) fs::remove_all(dir);
        fs::rename(tmp, dir);
    } catch (...) {
        fs::remove_all(tmp, ec);
        throw;
    }
    std::printf("wrote %s/handout.md and %zu images\n", o.dir.c_str(), trace.steps.size());
    return 0;
}

}  // namespace

void add_handout_command(CLI::App& app, CommandAction& action) {
    auto options = std::make_shared<HandoutOptions>();
    HandoutOptions& o = *options;
    CLI::App* cmd = app.add_subcommand(
        "handout", "write every step as DIR/NN_<step>.png plus DIR/handout.md (shape table, narrative, images)");
    cmd->add_option("dir", o.dir, "the folder to write (must not exist or be empty, unless --force)")->required();
    AttentionConfig& c = o.config;
    cmd->add_option("--batch,-B", c.batch, "batch size B")->capture_default_str();
    cmd->add_option("--tokens,-N", c.tokens, "tokens N")->capture_default_str();
    cmd->add_option("--dim,-C", c.dim, "embedding dim C")->capture_default_str();
    cmd->add_option("--heads", c.heads, "heads h (C % h == 0)")->capture_default_str();
    cmd->add_flag("--qkv-bias", c.qkv_bias, "qkv Linear has a bias (zeros)");
    cmd->add_option("--seed", c.seed, "seed of input, weights and dropout masks")->capture_default_str();
    cmd->add_flag("--training", c.training, "training mode: dropout active");
    const CLI::Option* attn_drop = cmd->add_option("--attn-drop", c.attn_drop, "attention dropout p")->capture_default_str();
    cmd->add_option("--proj-drop", c.proj_drop, "output dropout p")->capture_default_str();
    add_reference_option(*cmd, c, attn_drop);
    cmd->add_option("--lang", o.language, "language of the handout: en or zh")->capture_default_str();
    cmd->add_flag("--force", o.force, "replace DIR when it exists and is not empty");
    cmd->callback([options, &action] { action = [options] { return RunHandout(*options); }; });
}

void add_classroom_options(CLI::App& app, ClassroomOptions& options) {
    app.add_option("--lang", options.language, "language of the app: en or zh (saved in settings.json)")
        ->check(CLI::IsMember({"en", "zh"}));
    app.add_flag("--presentation", options.presentation,
                 "start in presentation mode (full screen, large fonts, only the current step; F5 / Esc)");
    app.add_flag("--quiz", options.quiz, "start with the quiz on: predict the next step's shape before it is shown");
}

}  // namespace attnscope
