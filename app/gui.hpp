// Entry point of the desktop app (implemented in app/gui/ when built with ATTNSCOPE_GUI).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config.hpp"

namespace attnscope {

struct GuiOptions {
    AttentionConfig config;       // the demo by default: x = torch.randn(2, 16, 768), 8 heads
    bool config_from_user = false;  // true when config options were given on the command line
    bool tile_from_user = false;    // --tile given: the flash path keeps that tile size
    std::string open_path;        // `attnscope FILE`: open this file (activations, checkpoint, dump)
    std::optional<std::size_t> block;  // --block: the block of a multi-block file
    std::string model_path;       // --model: a ViT checkpoint of any family (the Image panel)
    std::optional<std::size_t> heads;  // --heads given: the heads of the file or ViT checkpoint opened
    std::string image_path;       // --image: the picture it looks at (PNG/JPG)
    bool no_pos_embed = false;    // --no-pos-embed: the ViT runs with its position embeddings set to zeros
    std::optional<std::uint64_t> shuffle_seed;  // --shuffle-patches: also on the picture with its patches shuffled
    float drop_path = 0.0f;       // --drop-path: timm's stochastic depth in the ViT's blocks (--training, --seed)
    std::string screenshot_path;  // non-empty: render a few frames headless, write PNG, exit
    std::string layout_json_path; // --layout-json: with --screenshot, where the last frame put each panel (JSON)
    std::string step;             // step selected at start ("" = the saved one, else attn)
    std::string bug;              // --bug: a bug of the zoo switched on at start (core/teach/bug_zoo keys)
    std::string follow_step;      // --follow STEP[i,j,...]: the element followed at start
    std::vector<std::size_t> follow_index;
    bool show_cost = false;       // --cost: the Cost panel open at start
    bool show_gradients = false;  // --gradients: the Gradients panel takes the right column
    std::string language;         // --lang en|zh ("" = the saved one)
    bool presentation = false;    // --presentation: start in presentation mode (F5)
    bool quiz = false;            // --quiz: start with the "predict the next shape" quiz on
    bool bench = false;           // --bench-gui: time frames headless, print JSON, exit
    int width = 1600;
    int height = 1000;
    bool size_from_user = false;  // --size given: the window has that size (else the desktop's work area)
};

// Runs the window (or the headless screenshot) and returns the process exit status.
int run_gui(const GuiOptions& options);

}  // namespace attnscope
