// Everything the panels may change: selection, view options, commands to the frame loop.
// Panels never change the Trace (it is an immutable snapshot) nor start work; they queue a typed
// command here (UiState::ask) and the frame loop (app.cpp) carries it out.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "attention_maps.hpp"
#include "bug_zoo.hpp"
#include "provenance.hpp"
#include "config.hpp"
#include "logic/beyond_view.hpp"
#include "logic/colormap.hpp"
#include "logic/export_path.hpp"
#include "logic/file_browser.hpp"
#include "logic/drop_path_view.hpp"
#include "logic/flash_map.hpp"
#include "logic/follow.hpp"
#include "logic/layout.hpp"
#include "logic/position_view.hpp"
#include "logic/quiz.hpp"
#include "logic/settings.hpp"
#include "logic/slice.hpp"
#include "logic/stepper.hpp"

namespace attnscope::gfx {
class HeatmapRenderer;
class RgbTextures;
}

namespace attnscope {

// What a panel asks the frame loop to do, once. The loop carries out a frame's commands before the
// next frame (the export right after the frame that asked, once its heatmap is drawn).
namespace command {
struct Open {  // File > Open, a drop, Open Recent, the demo ViT, the block selector
    std::string path;
};
struct Rerun {};         // the config panel's edits: the config runs again
struct BackToConfig {};  // "back to the demo / config": the file or ViT on screen is closed
struct ShowBug {         // the Bug zoo: the buggy run beside the correct one (Bug::None: off)
    Bug bug;
};
struct ShowVitBlock {  // the ViT's block selector
    std::size_t block;
};
struct FreshVit {  // the Image panel's patch size or patch embedding: a fresh random model
    std::optional<std::size_t> patch;  // 0: the checkpoint again; unset: as now
    std::optional<bool> stem;          // a CNN stem; unset: as now
};
struct RunPositions {  // the position experiment's controls
    VitPositionChoice choice;
};
struct RunDropPath {  // the drop-path controls
    VitDropPathChoice choice;
};
struct ExportHeatmap {};  // the inspector's heatmap to export_dialog.target
struct Quit {};
}  // namespace command

using Command = std::variant<command::Open, command::Rerun, command::BackToConfig, command::ShowBug,
                             command::ShowVitBlock, command::FreshVit, command::RunPositions, command::RunDropPath,
                             command::ExportHeatmap, command::Quit>;

// The frame being drawn: what the frame loop tells the panels, and what they tell it back.
struct FrameState {
    double now = 0.0;                    // seconds since the frame loop started
    bool animate = true;                 // false in --screenshot (frames must be final)
    bool screenshot = false;             // --screenshot: nothing that varies between runs (timings) is drawn
    std::uint64_t trace_generation = 0;  // bumps when a new trace is swapped in (texture keys)
    bool animating = false;              // a panel animates by itself: the frame loop draws the next frame too
    bool record_items = false;           // ATTNSCOPE_STATE_JSON is set: item_rects are recorded
    // Where this frame drew the items a test clicks (menus, heads, the quiz's field), by a stable
    // name ("menu:File", "bug:softmax-dim-2", "head:3"); empty unless record_items.
    std::map<std::string, ui::Rect> item_rects;
};

// The one line at the menu bar's right (an export written, a settings error), shown for 8 s.
struct StatusLine {
    std::string text;    // what it says ("": nothing)
    double time = -1e9;  // when it was set (FrameState::now)
};

// The step on screen and the playback through the steps.
struct StepSelection {
    ui::Stepper stepper;            // the selected step's index, playing or not, the play interval
    std::string step;               // the name of stepper.selected (kept in sync by the frame loop)
    std::string previous;           // the step shown before (for the axis-move animation)
    double changed_at = -1e9;       // the time of the last change (FrameState::now)
    bool scroll_into_view = false;  // the pipeline list brings the selected row into view once
    bool start_hint = true;         // "start here: Play or →" until the user first moves or plays
};

// Which panels and windows are open: the six of ui::PanelVisibility, which settings.json keeps, and
// those that open as here in every run.
struct OpenPanels : ui::PanelVisibility {
    using ui::PanelVisibility::operator=;  // settings.json's panels replace those six only
    bool follow = true;                    // the Follow panel (View menu), while an element is followed
    bool image = true;                     // the Image panel (View menu) of the ViT on screen
    bool cost = false;                     // the Cost panel (View menu, --cost)
    bool gradients = false;                // the Gradients panel (View menu, --gradients)
    bool help = false;                     // Help > Keys (F1)
    bool about = false;                    // Help > About attnscope
};

struct InspectorView {
    ui::SliceSpec spec;
    bool has_spec = false;
    float zoom = 1.0f;           // 1 = fit the panel
    float pan_x = 0.0f, pan_y = 0.0f;  // in cells, top-left corner shown
};

// Whether the inspector folds its colour options behind a button and narrows its sliders: measured
// once per window size, step and view (values or difference), with the options shown, and kept until
// one of these changes, so the layout does not flip back and forth.
struct InspectorFit {
    float w = 0.0f, h = 0.0f;
    std::string step;
    bool difference = false;
    bool compact = false, measure = false;
    // Starts a measurement when the window, the step or the view changed; whether to draw compact.
    bool update(float width, float height, const std::string& now_step, bool now_difference) {
        if (width != w || height != h || now_step != step || now_difference != difference) {
            w = width;
            h = height;
            step = now_step;
            difference = now_difference;
            compact = false;
            measure = true;
        }
        return compact;
    }
    // The map drawn `map_h` high in a window `window_h` high: compact from the next frame when the
    // full controls leave it under a third of the window.
    void measured(float map_h, float window_h) {
        if (measure && !compact && map_h < window_h / 3.0f) compact = true;
        measure = false;
    }
};

// What the inspector shows of each step and how it colours it.
struct InspectorState {
    std::map<std::string, InspectorView> views;  // per step
    InspectorFit fit;
    ui::RangeMode range_mode = ui::RangeMode::PerSlice;
    ui::ScaleMode scale_mode = ui::ScaleMode::Linear;
    ui::ColormapChoice colormap = ui::ColormapChoice::Auto;
    float fixed_lo = 0.0f, fixed_hi = 1.0f;
    bool show_numbers = false;     // the numeric table instead of the heatmap
    bool show_difference = false;  // a compared step: user - reference instead of the values
};

// The Config panel: the configuration it edits and what validate() says of it.
struct ConfigScreen {
    AttentionConfig draft;            // what the config panel edits
    std::vector<Message> errors;  // from validate(), shown inline
};

// The engine's worker as the screen shows it.
struct EngineStatus {
    bool busy = false;       // a worker is running
    float progress = 0.0f;   // 0..1
    double seconds = 0.0;    // how long the last run took
    Message error;           // the last run threw (ShapeError ...)
};

// The file on screen (path empty: the engine's config trace is), the one being opened, and the
// one that could not be.
struct OpenFile {
    std::string path;                   // the file whose trace is on screen
    std::vector<std::size_t> blocks;    // its blocks (a selector when more than one)
    std::optional<std::size_t> block;   // the block shown
    std::vector<Message> notes;         // where input, weights, heads came from
    std::string vit_family;             // the file is a whole ViT of this family: a picture runs it
    std::string picture;                // the last picture opened: a whole ViT opened next runs on it
    std::string loading;                // a file job is running for this path
    std::optional<std::size_t> open_block;  // the block to open (block selector)
    std::optional<std::size_t> open_heads;  // h chosen in the config panel for a file
    Message error;                      // the last file that could not be opened (modal)
    bool error_shown = false;           // the modal has been opened for error
};

// A file that does not say how many heads its attention has: the app asks before it shows a map.
struct HeadsQuestionDialog {
    std::string path;                   // empty: no question
    std::string picture;                // the picture a whole ViT runs on once h is given
    std::optional<std::size_t> block;
    std::size_t dim = 0;
    std::size_t choice = 0;             // prefilled: the count of heads of 64 channels nearest to dim / 64
    bool shown = false;                 // the modal has been opened
};

// File > Open's folder browser.
struct FileBrowser {
    bool open = false;
    std::string folder;           // the folder listed
    char edit[1024] = {};         // the editable path field
    ui::FolderListing listing;
    bool refresh = true;          // list the folder again
    int selected = -1;            // index into listing.entries
};

// The ViT on a picture (--model, --image): what the Image panel shows and its controls; the other
// panels show one block's attention.
struct VitScreen {
    bool on_screen = false;              // a VitSnapshot is shown (the Image panel replaces Config)
    bool loading = false;                // a ViT job is running
    std::size_t block = 0;               // the block whose attention Trace the other panels show
    std::size_t blocks = 0;              // how many blocks the model has
    std::size_t query = 0;               // the query token of the overlays: 0 the class token, else a patch
    std::size_t map = 0;                 // the Attention tab's large map: head i, heads = their mean, heads + 1 the rollout
    HeadFusion fusion = HeadFusion::mean;  // how the rollout fuses the heads
    std::size_t patch = 0;               // 0: the checkpoint; 8/16/32: a fresh random model with that patch
    bool stem = false;                   // the fresh model's patch embedding is a CNN stem (with_cnn_stem)
    std::uint64_t generation = 0;        // bumps when a new ViT snapshot is swapped in (texture keys)
    // The position experiment ("Positions" tab): its controls.
    bool pos_embed = true;               // the checkpoint's position embeddings are added
    bool shuffle = false;                // also run on the picture with its patches shuffled
    std::uint64_t shuffle_seed = 1;      // ... by this seed's permutation (core/vit/positions.hpp)
    bool positions_tab = false;          // open the "Positions" tab at the next frame (set at start)
    // Stochastic depth ("Drop path" tab): what its controls show.
    VitDropPathChoice drop_path;
    bool drop_path_tab = false;          // open the "Drop path" tab at the next frame (set at start)
};

// The Heads panel's grid.
struct HeadsGrid {
    bool shared_scale = true;  // one colour range for every head (else each its own)
    int focused = -1;          // the head opened large (-1: none)
};

// The Follow panel: the element it follows and where that comes from and goes in the other steps.
struct FollowScreen {
    ui::FollowState element;       // the element followed (pinned, or hovered now)
    bool reveal = false;           // the inspector moves to the element once (--follow, "show")
    std::string related_key;       // what `related` was computed for
    std::vector<Related> related;  // every other step's source / fed elements (cache)
};

// The Bug zoo's run on screen.
struct ZooScreen {
    Bug bug = Bug::None;                // the bug chosen (the Bug zoo menu, --bug); its run replaces the config's
    std::shared_ptr<const ZooRun> run;  // the zoo run on screen (null: none)
};

// The UI's size: the display's scale, the user's zoom on top of it, presentation mode's. The frame
// loop rebuilds the fonts when they change.
struct UiScale {
    float display = 1.0f;       // the scale the display asks for (ui::default_ui_scale), chosen again on a resize
    float zoom = 1.0f;          // the zoom on top of it: Ctrl+= / Ctrl+- (settings.json's ui_scale)
    float presentation = 2.0f;  // presentation mode's text over the UI's, for the screen it fills
    void zoom_in() { zoom = std::min(zoom * 1.1f, ui::kMaxUiScale / display); }
    void zoom_out() { zoom = std::max(zoom / 1.1f, 0.5f); }
};

// Where the panels go (panels/common.cpp: PlaceWindow). View > Reset layout bumps the generation;
// each panel is placed at its default rectangle once per generation, the first time when it is
// first shown. The frame loop bumps keep_inside_generation when the window changed but the user's
// arrangement stays: each panel reaching outside the display is moved back inside once per
// generation.
struct PanelLayout {
    template <typename T>
    using PerPanel = std::array<T, std::size(ui::kAllPanels)>;  // indexed by ui::Panel
    std::uint64_t generation = 0;  // bumps when the panels go back to their default places
    bool vit = false;              // the default arrangement is for a ViT's picture (ui::LayoutInput)
    bool divergence = false;       // ... for a divergence's difference map in the inspector
    PerPanel<std::uint64_t> placed{};  // the generation each panel was last placed in
    // The rectangle each panel was last placed at (w 0: not yet): a panel elsewhere now was moved or
    // resized by the user, or restored from imgui.ini (logic/display_fit.hpp: moved_from).
    PerPanel<ui::Rect> asked{};
    std::uint64_t keep_inside_generation = 0;  // bumps when the user's arrangement must come inside the window
    PerPanel<std::uint64_t> kept_inside{};     // the keep_inside_generation each panel was last checked in
};

// The whole screen's state, in the groups above: what the frame loop and the panels share.
struct UiState {
    // ---- the frame loop: the frame, the commands the panels queue, the status line
    FrameState frame;
    std::vector<Command> commands;  // asked since the loop last carried them out, in order
    StatusLine status;

    // ---- the step on screen and the panels open
    StepSelection selection;
    OpenPanels panels;

    // ---- each panel's own state
    ConfigScreen config;                            // the Config panel
    EngineStatus engine;                            // the engine's worker
    InspectorState inspector;                       // the Tensor inspector
    HeadsGrid heads;                                // the Heads panel
    VitScreen vit;                                  // the ViT on a picture (--model, --image): the Image panel
    ui::BeyondView beyond;                          // the Beyond panel (flash tiles, KV cache, windows)
    ui::FlashMapView flash_map;                     // the flash path's Attention map: its view
    std::shared_ptr<ui::FlashMap> flash_map_state;  // ... its overview and tile cache (tiles on demand)
    FollowScreen follow;                            // the Follow panel
    ZooScreen zoo;                                  // the Bug zoo
    ui::ClassroomState classroom;                   // presentation mode, the shape quiz (panels/classroom_panel.cpp)
    // The Gradients panel: one entry per engine run seen, for the saturation demo's table.
    struct GradRun {
        std::uint64_t generation = 0;
        std::size_t dim = 0, head_dim = 0;
        bool scaled = true;
        float max_attn = 0.0f;
        double saturated_fraction = 0.0;  // rows of attn with max weight > 0.99
    };
    std::vector<GradRun> grad_runs;  // oldest first, at most a few

    // ---- files: the one on screen, the dialogs about files, File > Open
    OpenFile file;
    HeadsQuestionDialog heads_question;     // a file without a head count asks for it
    std::string modal_on_screen;            // the id of the modal this frame shows ("cannot_open"), or ""
    FileBrowser browser;                    // File > Open's folder browser
    ui::ExportDialog export_dialog;         // File > Export heatmap as PNG
    std::vector<std::string> recent_files;  // most recent first (settings.json)

    // ---- look
    UiScale scale;
    PanelLayout layout;

    // ---- what the frame loop owns and lends
    gfx::HeatmapRenderer* heatmaps = nullptr;  // the heatmaps' textures
    gfx::RgbTextures* pictures = nullptr;      // the Image panel's textures
    std::string gl_info;                       // GL_VERSION / GL_RENDERER for Help > About
    std::string settings_path;                 // "" in --screenshot mode (nothing is read or written)

    void ask(Command c) { commands.push_back(std::move(c)); }
    template <typename T>
    bool asked() const {  // a command of this kind is waiting
        for (const Command& c : commands)
            if (std::holds_alternative<T>(c)) return true;
        return false;
    }
    // The fresh model the Image panel shows while it waits to run: the queued FreshVit commands over
    // what is on screen, the last one asked winning for each of patch and stem.
    std::pair<std::size_t, bool> pending_fresh_vit() const {
        std::pair<std::size_t, bool> p{vit.patch, vit.stem};
        for (const Command& c : commands)
            if (const auto* f = std::get_if<command::FreshVit>(&c)) {
                if (f->patch) p.first = *f->patch;
                if (f->stem) p.second = *f->stem;
            }
        return p;
    }

    void set_status(std::string text) {
        status.text = std::move(text);
        status.time = frame.now;
    }
};

}  // namespace attnscope
