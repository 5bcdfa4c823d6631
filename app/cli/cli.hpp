// The attnscope command line: trace, run, bench, inspect, check, and (without a command) the app.
#pragma once

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace attnscope {

// Parses argv and runs the chosen command; returns the exit status
// (0 success, 2 bad usage or bad input with one line on stderr).
int run_cli(int argc, char** argv);

// A problem with the user's options or files: run_cli prints it as one line, exit status 2.
struct UsageError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// A command implemented in its own file registers a subcommand on `app` and, when that
// subcommand is parsed, sets `action` to what run_cli must run (its return is the exit status;
// it may throw UsageError, FileError or ShapeError, which run_cli reports with exit status 2).
using CommandAction = std::function<int()>;

// A validator for whole numbers from 0 to max. CLI11 alone converts "-5" to a huge unsigned number
// and saturates overlong ones: this refuses both, naming the text.
CLI::Validator whole_number(std::uint64_t max);

// app/cli/cli_files.cpp: `inspect FILE` and `check DUMP` (saved activations and checkpoints).
void add_file_commands(CLI::App& app, CommandAction& action);

// app/cli/cli_vit.cpp: `vit --model FILE (--image | --pixels) ...` (a whole ViT forward on an image).
void add_vit_command(CLI::App& app, CommandAction& action);

// app/cli/cli_teach.cpp: `cost` (parameters, FLOPs, memory per step) and `zoo` (the bug zoo).
void add_teach_commands(CLI::App& app, CommandAction& action);
// The app's --bug KEY (the bug zoo on at start) and --follow "STEP[i,j,...]" (the followed element).
struct GuiOptions;
void add_teach_gui_options(CLI::App& app);
void apply_teach_gui_options(GuiOptions& options);  // UsageError for an unknown bug, step or index
// app/cli/cli_beyond.cpp: --causal, --valid-tokens, --flash, --tile, --kv-cache, --window, --shift
// (core/paths/beyond.hpp) on every command that runs the layer; they write into `config`.
struct AttentionConfig;
struct BeyondOptions {
    CLI::Option *flash = nullptr, *tile = nullptr, *kv_cache = nullptr, *window = nullptr, *shift = nullptr,
                *patch_merge = nullptr;
    std::vector<CLI::Option*> all;
};
BeyondOptions add_beyond_options(CLI::App& app, AttentionConfig& config);
// Contradictory combinations (two paths, --tile without --flash ...) as a UsageError.
void check_beyond_options(const BeyondOptions& options);
// --reference vit|mha (app/cli/cli.cpp): the class of the article the steps follow. With mha the
// config takes that class's defaults once parsing ends: qkv_proj's bias on, and attention dropout
// 0.1 unless `attn_drop` (the command's --attn-drop) was given.
void add_reference_option(CLI::App& app, AttentionConfig& config, const CLI::Option* attn_drop);
// app/cli/cli_handout.cpp: `handout DIR [config options] [--lang zh] [--force]` (every step as a PNG plus
// a Markdown handout), and the app's classroom options --lang, --presentation, --quiz.
void add_handout_command(CLI::App& app, CommandAction& action);
struct ClassroomOptions {
    std::string language;  // "" (the saved one), "en", "zh"
    bool presentation = false;
    bool quiz = false;
};
void add_classroom_options(CLI::App& app, ClassroomOptions& options);
// app/cli/cli_reliability.cpp: --memory-budget SIZE on a command (sets memory_budget() while parsing;
// a bad size is a UsageError naming the option).
void add_memory_budget_option(CLI::App& app);
// UsageError "PATH already exists; pass --force to overwrite it" for the first existing path.
void refuse_overwrite(const std::vector<std::string>& paths, bool force);

}  // namespace attnscope
