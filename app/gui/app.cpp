// run_gui: the desktop app's straight-line main. Setup, frame loop, shutdown in reverse.
//
// [SECTION] settings   [SECTION] frame   [SECTION] startup   [SECTION] frame loop   [SECTION] shutdown
// [SECTION] run_gui
#include "gui.hpp"

// glad's gl.h first; the ImGui OpenGL3 backend header declares functions only (its own loader
// lives inside libimgui.a and is never included here).
#include <glad/gl.h>
#define GLFW_INCLUDE_NONE
#include <GLFW/glfw3.h>
#include <imgui.h>
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_opengl3.h>

#include <algorithm>
#include <cfloat>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>
#include <stb_image.h>

#include "run.hpp"
#include "bench_gui.hpp"
#include "embedded_icon.hpp"
#include "logic/core_text.hpp"
#include "logic/engine_runner.hpp"
#include "fonts.hpp"
#include "layout_report.hpp"
#include "softgl/frame_pacer.hpp"
#include "gfx/heatmap_renderer.hpp"
#include "gfx/png.hpp"
#include "gfx/rgb_textures.hpp"
#include "io.hpp"
#include "memory_budget.hpp"
#include "logic/display_fit.hpp"
#include "logic/file_browser.hpp"
#include "logic/i18n.hpp"
#include "logic/layout.hpp"
#include "logic/renderer.hpp"
#include "logic/settings.hpp"
#include "softgl/softgl.hpp"
#include "panels/panels.hpp"
#include "ui_state.hpp"

namespace attnscope {

namespace {

// ---------------------------------------------------------------------------------------------
// [SECTION] settings
// ---------------------------------------------------------------------------------------------

std::string g_glfw_error;
volatile std::sig_atomic_t g_stop = 0;  // SIGINT/SIGTERM: leave the loop and shut down cleanly

std::vector<std::string> g_dropped;  // paths dropped on the window (GLFW drop callback)

// Key presses as the window system reports them: each press once, and the system's auto-repeat
// while a key is held. ImGui 1.86 samples which keys are down once a frame, so it loses a press
// released before the next frame and repeats a key whose press spans a frame longer than its repeat
// delay (0.275 s); both happen when software GL draws slowly. The app's own keys read these.
struct KeyPress {
    int key;
    int mods;  // GLFW_MOD_CONTROL, ...
    bool repeat;
};
std::vector<KeyPress> g_key_presses;  // since the last frame began
std::vector<KeyPress> g_frame_keys;   // the presses this frame handles
GLFWkeyfun g_next_key_callback = nullptr;

void OnKey(GLFWwindow* window, int key, int scancode, int action, int mods) {
    if (action == GLFW_PRESS || action == GLFW_REPEAT) g_key_presses.push_back({key, mods, action == GLFW_REPEAT});
    if (g_next_key_callback) g_next_key_callback(window, key, scancode, action, mods);
}

// Whether this frame saw `key` pressed (with Ctrl when ctrl; held down and auto-repeating too when
// repeat).
bool Pressed(int key, bool repeat = false, bool ctrl = false) {
    for (const KeyPress& k : g_frame_keys)
        if (k.key == key && (repeat || !k.repeat) && ((k.mods & GLFW_MOD_CONTROL) != 0) == ctrl) return true;
    return false;
}

void OnSignal(int) { g_stop = 1; }

void OnDrop(GLFWwindow*, int count, const char** paths) {
    for (int i = 0; i < count; ++i)
        if (paths[i]) g_dropped.emplace_back(paths[i]);
}

void OnGlfwError(int code, const char* text) {
    g_glfw_error = std::string(text ? text : "") + " (GLFW error " + std::to_string(code) + ")";
}

std::optional<ui::Settings> LoadSettings(const std::string& path, std::string* message) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return std::nullopt;  // first run
    std::stringstream ss;
    ss << in.rdbuf();
    std::string error;
    auto s = ui::settings_from_json(ss.str(), &error);
    if (!s) *message = "ignored " + path + ": " + error;
    return s;
}

// The window layout (Dear ImGui's imgui.ini), written atomically like settings.json: ImGui's own
// writer truncates the file in place, so a crash mid-write would leave half a layout.
void SaveLayout(const std::string& path) {
    std::size_t size = 0;
    const char* text = ImGui::SaveIniSettingsToMemory(&size);
    try {
        write_file_atomic(path, std::string(text, size));
    } catch (const std::exception& e) {
        std::fprintf(stderr, "attnscope: cannot save the window layout: %s\n", e.what());
    }
}

// The view options the settings file keeps, each once: f(the UiState's field, the Settings' field).
template <typename Ui, typename S, typename F>
void EachViewOption(Ui& ui, S& s, F&& f) {
    f(ui.scale.zoom, s.ui_scale);
    f(ui.panels, s.panels);
    f(ui.inspector.range_mode, s.range_mode);
    f(ui.inspector.scale_mode, s.scale_mode);
    f(ui.inspector.colormap, s.colormap);
    f(ui.heads.shared_scale, s.heads_shared_scale);
    f(ui.selection.stepper.interval, s.play_interval);
    f(ui.recent_files, s.recent_files);
    f(ui.browser.folder, s.browser_folder);
}

void SaveSettings(const std::string& path, const UiState& ui, const AttentionConfig& config) {
    ui::Settings s;
    s.config = config;
    s.has_config = true;
    s.step = ui.selection.step;
    EachViewOption(ui, s, [](const auto& in_ui, auto& in_file) { in_file = in_ui; });
    s.language = ui::language_code(ui::language());
    try {
        write_file_atomic(path, ui::settings_to_json(s));
    } catch (const std::exception& e) {
        std::fprintf(stderr, "attnscope: cannot save settings: %s\n", e.what());
    }
}

void ApplySettings(const ui::Settings& s, UiState& ui) {
    EachViewOption(ui, s, [](auto& in_ui, const auto& in_file) { in_ui = in_file; });
    if (auto language = ui::parse_language(s.language)) ui::set_language(*language);
}

// The app's look at the UI's scale, with what a software rasterizer leaves out (softgl.hpp).
void SetupStyle(float scale, const SoftGl& softgl) {
    ImGuiStyle style;
    ImGui::StyleColorsDark(&style);
    style.WindowRounding = 4.0f;
    style.FrameRounding = 3.0f;
    style.GrabRounding = 3.0f;
    style.WindowPadding = ImVec2(10, 8);
    style.FramePadding = ImVec2(6, 4);
    style.ItemSpacing = ImVec2(8, 6);
    style.Colors[ImGuiCol_WindowBg] = ImVec4(0.10f, 0.10f, 0.12f, 1.0f);
    style.Colors[ImGuiCol_TitleBgActive] = ImVec4(0.20f, 0.28f, 0.45f, 1.0f);
    // A slider draws its value over the grab: a see-through grab keeps the value readable wherever
    // the grab stands.
    style.Colors[ImGuiCol_SliderGrab].w = 0.45f;
    style.Colors[ImGuiCol_SliderGrabActive].w = 0.65f;
    softgl.adjust_style(style);
    style.ScaleAllSizes(scale);
    ImGui::GetStyle() = style;
}

// ---------------------------------------------------------------------------------------------
// [SECTION] frame
// ---------------------------------------------------------------------------------------------

void HandleKeys(const Trace& trace, UiState& ui) {
    const ImGuiIO& io = ImGui::GetIO();
    if (!io.WantTextInput && !trace.steps.empty()) {
        if (Pressed(GLFW_KEY_LEFT, true)) ui.selection.stepper.key(ui::StepKey::Prev);
        if (Pressed(GLFW_KEY_RIGHT, true)) ui.selection.stepper.key(ui::StepKey::Next);
        if (Pressed(GLFW_KEY_HOME)) ui.selection.stepper.key(ui::StepKey::First);
        if (Pressed(GLFW_KEY_END)) ui.selection.stepper.key(ui::StepKey::Last);
        if (Pressed(GLFW_KEY_SPACE)) TogglePlay(ui);
    }
    if (Pressed(GLFW_KEY_F1)) ui.panels.help = !ui.panels.help;
    // Esc clears a followed element (presentation mode, which follows nothing, leaves on Esc).
    const bool escape = Pressed(GLFW_KEY_ESCAPE);
    if (!io.WantTextInput && !ui.classroom.presentation && ui.follow.element.active() &&
        !ImGui::IsPopupOpen("", ImGuiPopupFlags_AnyPopupId) && escape)
        ui.follow.element.clear();
    HandleClassroomKeys(ui, Pressed(GLFW_KEY_F5), escape);
    constexpr bool kRepeat = true, kCtrl = true;
    if (Pressed(GLFW_KEY_EQUAL, kRepeat, kCtrl) || Pressed(GLFW_KEY_KP_ADD, kRepeat, kCtrl)) ui.scale.zoom_in();
    if (Pressed(GLFW_KEY_MINUS, kRepeat, kCtrl) || Pressed(GLFW_KEY_KP_SUBTRACT, kRepeat, kCtrl)) ui.scale.zoom_out();
    if (Pressed(GLFW_KEY_0, false, kCtrl)) ui.scale.zoom = 1.0f;
    if (Pressed(GLFW_KEY_Q, false, kCtrl)) ui.ask(command::Quit{});
    if (Pressed(GLFW_KEY_O, false, kCtrl)) OpenFileBrowser(ui);
    if (Pressed(GLFW_KEY_L, false, kCtrl)) ResetLayout(ui);
}

// The inspector's slice of the step moved to keeps the head, batch item and shown axes chosen on
// the step left (logic/slice.hpp: carried_slice), so one head can be followed through the steps.
void CarrySlice(const Trace& trace, UiState& ui, const std::string& left, const Step& to) {
    const Step* from = trace.find(left);
    const auto seen = ui.inspector.views.find(left);
    if (!from || seen == ui.inspector.views.end() || !seen->second.has_spec) return;
    const ui::SliceSpec from_spec = seen->second.spec;
    InspectorView& v = ui.inspector.views[to.name];
    if (!v.has_spec) {
        v.spec = ui::default_slice(to.shape());
        v.has_spec = true;
    }
    v.spec = ui::carried_slice(from_spec, from->axes(), from->shape(), v.spec, to.axes(), to.shape());
}

// Keeps ui.selection.step equal to the stepper's step; starts the axis animation on a change.
void SyncSelection(const Trace& trace, UiState& ui) {
    ui.selection.stepper.set_count(static_cast<int>(trace.steps.size()));
    if (trace.steps.empty()) return;
    const std::string& name = trace.steps[static_cast<std::size_t>(ui.selection.stepper.selected)].name;
    if (ui.selection.stepper.playing) ui.selection.start_hint = false;
    if (name != ui.selection.step) {
        // The user moved (the first frame only selects).
        if (!ui.selection.step.empty()) ui.selection.start_hint = false;
        CarrySlice(trace, ui, ui.selection.step, trace.steps[static_cast<std::size_t>(ui.selection.stepper.selected)]);
        ui.selection.previous = ui.selection.step;
        ui.selection.step = name;
        ui.selection.changed_at = ui.frame.now;
        ui.selection.scroll_into_view = true;
    }
}

// The default arrangement follows what is on screen (a ViT's picture under the pipeline, a divergence's
// difference map in the inspector): the panels placed again when that changes, unless the user
// arranged them (or imgui.ini did, before the first panel was placed).
void FollowContent(const Trace& trace, UiState& ui) {
    const bool vit = ui.vit.on_screen, divergence = FirstDivergence(trace) != nullptr;
    if (vit == ui.layout.vit && divergence == ui.layout.divergence) return;
    ui.layout.vit = vit;
    ui.layout.divergence = divergence;
    const bool placed =
        std::any_of(ui.layout.asked.begin(), ui.layout.asked.end(), [](const ui::Rect& r) { return r.w > 0.0f; });
    if (placed && !PanelsArrangedByUser(ui)) ++ui.layout.generation;
}

void DrawFrame(const Trace& trace, const VitSnapshot* vit, UiState& ui) {
    HandleKeys(trace, ui);
    FollowContent(trace, ui);
    ui.selection.stepper.tick(ImGui::GetIO().DeltaTime);
    QuizGate(trace, ui);  // the quiz asks before "next" shows a step
    SyncSelection(trace, ui);
    if (ui.classroom.presentation) {  // only the current step, full screen
        DrawPresentation(trace, ui.vit.on_screen ? vit : nullptr, ui);
        DrawQuizWindow(trace, ui);
        SyncSelection(trace, ui);
        return;
    }
    DrawMenuBar(trace, ui);
    DrawPipelinePanel(trace, ui);
    if (ui.vit.on_screen || ui.vit.loading) DrawImagePanel(vit, ui);  // the ViT takes the Config panel's place
    else DrawConfigPanel(trace, ui);
    DrawShapePanel(trace, ui);
    DrawInspectorPanel(trace, ui);
    DrawHeadsPanel(trace, ui);
    DrawRowSumPanel(trace, ui);
    DrawFollowPanel(trace, ui);
    DrawZooPanel(trace, ui);
    DrawCostPanel(trace, ui);
    DrawGradientsPanel(trace, ui);
    DrawBeyondPanel(trace, ui);
    DrawFlashMapPanel(trace, ui);
    DrawHelpWindows(trace, ui);
    DrawFileBrowser(ui);
    ui.modal_on_screen.clear();
    DrawFileErrorModal(ui);
    DrawHeadsQuestion(ui);
    DrawQuizWindow(trace, ui);
    DrawExportDialog(ui);
    SyncSelection(trace, ui);
}

// Runs trace_from_file in the worker (a whole ViT: on `picture` when there is one); the trace on
// screen stays until it is done.
void StartFile(EngineRunner& runner, UiState& ui, const std::string& path, const std::string& picture) {
    ui.file.loading = path;
    runner.start(EngineRunner::file_job(path, ui.file.open_block, ui.file.open_heads, picture));
    ui.engine.busy = true;
}

// Runs the ViT on a picture in the worker; the trace on screen stays until it is done.
void StartVit(EngineRunner& runner, UiState& ui, EngineJob job) {
    ui.file.loading.clear();
    ui.vit.loading = true;
    runner.start(std::move(job));
    ui.engine.busy = true;
}

std::string WindowTitle(const UiState& ui, const VitSnapshot* vit) {
    if (vit && ui.vit.on_screen)
        return "attnscope \u2014 " + ui::display_name(vit->model_path) + _(" on ") + ui::display_name(vit->image_path) +
               _(" (block ") + std::to_string(ui.vit.block) + ")";
    if (ui.file.path.empty()) return "attnscope";
    std::string t = "attnscope \u2014 " + ui::display_name(ui.file.path);
    if (ui.file.block && ui.file.blocks.size() > 1) t += _(" (block ") + std::to_string(*ui.file.block) + ")";
    return t;
}

std::string StepList(const Trace& trace) {
    std::string s;
    for (const auto& step : trace.steps) s += (s.empty() ? "" : ", ") + step.name;
    return s;
}

// ---------------------------------------------------------------------------------------------
// [SECTION] startup
// ---------------------------------------------------------------------------------------------

// What run_gui's steps share: the options, the UI state, the runs and their traces, the window and
// its GL objects, declared in the order run_gui sets them up.
struct Gui {
    explicit Gui(const GuiOptions& o)
        : options(o),
          shot(!o.screenshot_path.empty() || o.bench),  // --bench-gui renders like a screenshot
          width(std::clamp(o.width, 320, 8192)),
          height(std::clamp(o.height, 240, 8192)) {
        if (o.bench) bench.emplace();
        ui.frame.animate = !shot;
        ui.frame.screenshot = shot;
    }

    const GuiOptions& options;
    const bool shot;          // --screenshot or --bench-gui: headless, no saved settings, every frame drawn
    const int width, height;  // the offscreen framebuffer's size, and the window's at most
    std::optional<GuiBench> bench;
    UiState ui;
    std::string settings_dir, settings_message;
    std::optional<ui::Settings> settings;
    AttentionConfig config;                    // the first run's
    bool open_file = false, open_vit = false;  // FILE, or --model and --image, given

    EngineRunner runner;
    EngineJob first_job;  // the live app's first run (the config's, or --bug's zoo run), started once the window exists
    std::shared_ptr<const Trace> trace;
    std::shared_ptr<const VitSnapshot> vit, trained_vit;  // the ViT on screen; the checkpoint's run (patch slider)
    const Trace empty_trace;

    GLFWwindow* window = nullptr;
    int windowed[4] = {0, 0, 0, 0};  // x, y, w, h to restore after presentation mode
    bool fullscreen = false;
    // The live window the panels' arrangement was made for, the one of the last frame, and how many
    // frames to leave a changed window alone (presentation mode just gave the window back).
    ui::DisplayInfo arranged_for, last_display;
    int display_settle = 0;
    std::optional<SoftGl> softgl;  // made once the GL renderer is known
    std::string ini_path;
    bool keep_layout = false;  // the live app keeps the window layout in imgui.ini
    FramePacer pacer;          // the live app draws only when something can have changed
    std::string window_title = "attnscope";
    std::string state_path;   // ATTNSCOPE_STATE_JSON: where the app's state goes after each frame that changed it
    std::string state_written;  // what was written there last
    float built_scale = 1.0f;  // the fonts' scale and language
    ui::Language built_language = ui::Language::English;
    gfx::HeatmapRenderer heatmaps;
    gfx::RgbTextures pictures;
    GLuint shot_fbo = 0, shot_color = 0;
    double t0 = 0.0;  // the clock of ui.frame.now starts with the frame loop
};

// Fonts are rebuilt when the zoom, presentation mode (larger) or the language (CJK glyphs) change. The
// display's scale times the zoom stays within 3 (a saved zoom on a larger screen): the font atlas,
// with CJK glyphs, grows with the square of the scale.
// Presentation mode's scale is over a UI of at least 1: a small display's smaller UI (800 x 600)
// keeps the slide's large text.
float FontScale(const UiState& ui) {
    const bool slide = ui.classroom.presentation;
    const float display = slide ? std::max(ui.scale.display, 1.0f) : ui.scale.display;
    return std::min(display * ui.scale.zoom, ui::kMaxUiScale) * (slide ? ui.scale.presentation : 1.0f);
}

// The saved settings (never in --screenshot mode, so screenshots are reproducible), the command
// line's panels, and the config of the first run.
void LoadSettingsAndOptions(Gui& g) {
    const GuiOptions& options = g.options;
    UiState& ui = g.ui;
    if (!g.shot) {
        g.settings_dir = ui::settings_dir(std::getenv("XDG_CONFIG_HOME"), std::getenv("HOME"));
        if (!g.settings_dir.empty()) {
            std::error_code ec;
            std::filesystem::create_directories(g.settings_dir, ec);
            ui.settings_path = g.settings_dir + "/settings.json";
            g.settings = LoadSettings(ui.settings_path, &g.settings_message);
            if (!g.settings_message.empty()) std::fprintf(stderr, "attnscope: %s\n", g.settings_message.c_str());
            if (g.settings) ApplySettings(*g.settings, ui);
        }
    }
    if (options.show_gradients) {  // the Gradients panel takes the right column (heads, row sums)
        ui.panels.gradients = true;
        ui.panels.heads = ui.panels.row_sums = false;
    }
    g.config = options.config;
    if (g.config.path == AttentionPath::flash && !options.tile_from_user) {  // --flash: tiles N holds several of
        g.config.tile_rows = ui::flash_tile_for(g.config.tokens, g.config.tile_rows);
        g.config.tile_cols = ui::flash_tile_for(g.config.tokens, g.config.tile_cols);
    }
    if (!g.shot && !options.config_from_user && g.settings && g.settings->has_config) g.config = g.settings->config;
    ui.config.draft = g.config;
    ui.config.errors = validate(g.config, memory_budget());
    g.open_file = !options.open_path.empty();
    g.open_vit = !options.model_path.empty() || !options.image_path.empty();
}

// False, after one line on stderr, when the options cannot go together (or the config is invalid
// in --screenshot mode).
bool CheckOptions(const Gui& g) {
    if (!g.ui.config.errors.empty() && g.shot) {
        std::fprintf(stderr, "attnscope: %s\n", english(g.ui.config.errors.front()).c_str());
        return false;
    }
    if (g.open_vit && (g.options.model_path.empty() || g.options.image_path.empty())) {
        std::fprintf(stderr,
                     "attnscope: --model and --image go together: give the ViT checkpoint "
                     "(--model FILE.safetensors) and the picture it looks at (--image FILE.png)\n");
        return false;
    }
    if (g.open_vit && g.open_file) {
        std::fprintf(stderr, "attnscope: open either FILE or --model/--image, not both\n");
        return false;
    }
    return true;
}

// Waits for the worker's run and puts it on screen; false, after one line on stderr, when it failed.
bool WaitForRun(Gui& g, const char* cancelled) {
    const std::optional<EngineResult> r = g.runner.wait();
    if (r && AcceptResult(*r, g.trace, g.vit, g.ui)) return true;
    std::fprintf(stderr, "attnscope: %s\n", r ? english(r->error).c_str() : cancelled);
    return false;
}

// FILE, or --model with --image, from the command line: read or run in the worker.
void StartOpening(Gui& g) {
    const GuiOptions& options = g.options;
    if (g.open_file) {
        g.ui.file.open_block = options.block;
        g.ui.file.open_heads = options.heads;
        StartFile(g.runner, g.ui, options.open_path, {});
    }
    if (g.open_vit) {
        const VitPositionChoice positions{!options.no_pos_embed, options.shuffle_seed};
        g.ui.vit.positions_tab = positions != VitPositionChoice{};  // the experiment asked for: show it
        const VitDropPathChoice drop_path{options.drop_path, options.config.training, options.config.seed};
        g.ui.vit.drop_path_tab = drop_path.rate > 0.0f;
        StartVit(g.runner, g.ui,
                 EngineRunner::vit_job(options.model_path, options.image_path, options.heads, positions, drop_path));
    }
}

// The first trace. --screenshot waits for it (its frames must show it: the file, the Image panel)
// and fails, after one line on stderr, when it fails. The live app starts the config's run once the
// window exists, and FILE or --model/--image once ImGui is set up.
bool StartFirstRun(Gui& g) {
    const GuiOptions& options = g.options;
    UiState& ui = g.ui;
    if ((g.open_file || g.open_vit) && g.shot) {
        StartOpening(g);
        if (!WaitForRun(g, g.open_vit ? "the ViT job was cancelled" : "the file job was cancelled")) return false;
        if (g.open_vit) g.trained_vit = g.vit;
    } else if (ui.config.errors.empty()) {
        if (options.screenshot_path.empty()) {  // the live app and --bench-gui
            g.first_job = EngineRunner::config_job(g.config);
        } else {
            EngineResult r = EngineRunner::run_now(g.config);
            if (!r.trace) {
                std::fprintf(stderr, "attnscope: the engine failed: %s\n", english(r.error).c_str());
                return false;
            }
            g.trace = r.trace;
            ui.engine.seconds = r.seconds;
            ++ui.frame.trace_generation;
        }
    }
    // --bug: the zoo's run of that bug replaces the config's (waited for in --screenshot; the live
    // app's first run).
    if (!options.bug.empty() && !g.open_file && !g.open_vit && ui.config.errors.empty()) {
        ui.zoo.bug = bug_from_key(options.bug).value_or(Bug::None);
        if (g.first_job) {
            g.first_job = EngineRunner::zoo_job(g.config, ui.zoo.bug);
        } else {
            g.runner.start(EngineRunner::zoo_job(g.config, ui.zoo.bug));
            if (g.shot && !WaitForRun(g, "the zoo job was cancelled")) return false;
        }
    }
    return true;
}

// --cost, --follow, and the step shown first: --step, else the last one, else attn (heads grid +
// row sums at once); a file or a bug-zoo run opens where it chose. False, after one line on
// stderr, when --screenshot's --step names no step.
bool ShowStartView(Gui& g) {
    const GuiOptions& options = g.options;
    UiState& ui = g.ui;
    ui.panels.cost = options.show_cost;
    if (!options.follow_step.empty()) {  // --follow STEP[i,j,...]
        ui.follow.element.pin(options.follow_step, options.follow_index);
        ui.follow.reveal = options.step.empty();
    }
    // --quiz asks from the first step on (each next step's shape, the lesson's order).
    std::string start_step = !options.step.empty() ? options.step
                             : options.quiz        ? attention_step_names().front()
                             : !g.shot && g.settings && !g.settings->step.empty() ? g.settings->step
                                                                                  : "attn";
    if (!g.trace) {
        ui.selection.step = start_step;
        return true;
    }
    const Trace& trace = *g.trace;
    if (!ui.file.path.empty() && options.step.empty()) start_step = SelectedStep(trace, ui)->name;  // FileStartStep's
    if (ui.zoo.run && options.step.empty()) start_step = ZooStartStep(*ui.zoo.run);
    if (!trace.find(start_step)) {
        if (!options.step.empty()) {
            std::fprintf(stderr, "attnscope: no step named '%s'; the steps are: %s\n", options.step.c_str(),
                         StepList(trace).c_str());
            if (g.shot) return false;
        }
        start_step = ConfigStartStep(trace, "attn");
    }
    SelectStep(trace, ui, start_step);
    SyncSelection(trace, ui);
    return true;
}

// The app's icon (packaging/attnscope.svg at 256 px, embedded) on the window's title bar and task
// switcher. Window managers without icons ignore it (GLFW reports that through its error callback).
void SetWindowIcon(GLFWwindow* window) {
    int w = 0, h = 0, channels = 0;
    stbi_uc* pixels = stbi_load_from_memory(gfx::kWindowIconPng, static_cast<int>(sizeof gfx::kWindowIconPng), &w, &h,
                                            &channels, 4);
    if (!pixels) return;
    const GLFWimage icon{w, h, pixels};
    glfwSetWindowIcon(window, 1, &icon);
    stbi_image_free(pixels);
}

// The window (hidden in --screenshot mode; no larger than the monitor's work area). False, after
// one line on stderr, when there is none.
bool OpenWindow(Gui& g) {
    glfwSetErrorCallback(OnGlfwError);
    if (!glfwInit()) {
        std::fprintf(stderr, "attnscope: cannot open a window (no DISPLAY?); run under xvfb-run -a\n");
        return false;
    }
    glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
    glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
    glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
    glfwWindowHint(GLFW_OPENGL_FORWARD_COMPAT, GLFW_TRUE);
    // WM_CLASS "attnscope": the desktop matches the window to attnscope.desktop (StartupWMClass).
    glfwWindowHintString(GLFW_X11_CLASS_NAME, "attnscope");
    glfwWindowHintString(GLFW_X11_INSTANCE_NAME, "attnscope");
    if (g.shot) glfwWindowHint(GLFW_VISIBLE, GLFW_FALSE);
    int win_w = g.width, win_h = g.height;
    if (!g.shot) {  // the desktop's work area unless --size, and never larger
        int wx = 0, wy = 0, ww = 0, wh = 0;
        if (GLFWmonitor* m = glfwGetPrimaryMonitor()) glfwGetMonitorWorkarea(m, &wx, &wy, &ww, &wh);
        if (ww > 0 && wh > 0) {
            win_w = g.options.size_from_user ? std::min(win_w, ww) : ww;
            win_h = g.options.size_from_user ? std::min(win_h, wh) : wh;
        }
    }
    g.window = glfwCreateWindow(win_w, win_h, "attnscope", nullptr, nullptr);
    if (!g.window) {
        std::fprintf(stderr, "attnscope: cannot create an OpenGL 3.3 core window: %s\n", g_glfw_error.c_str());
        glfwTerminate();
        return false;
    }
    g.windowed[2] = win_w;
    g.windowed[3] = win_h;
    SetWindowIcon(g.window);
    return true;
}

// The window's OpenGL 3.3 core context and its functions. False, after one line on stderr, when
// they cannot be loaded.
bool LoadGl(Gui& g) {
    glfwMakeContextCurrent(g.window);
    glfwSwapInterval(g.shot ? 0 : 1);
    if (!gladLoadGL(reinterpret_cast<GLADloadfunc>(glfwGetProcAddress))) {
        std::fprintf(stderr, "attnscope: cannot load OpenGL 3.3 functions\n");
        glfwDestroyWindow(g.window);
        glfwTerminate();
        return false;
    }
    const std::string gl_renderer = reinterpret_cast<const char*>(glGetString(GL_RENDERER));
    const ImVec4 backdrop(0.06f, 0.06f, 0.07f, 1.0f);  // the colour between windows
    g.softgl.emplace(ui::software_renderer(gl_renderer), backdrop);
    g.ui.gl_info = std::string(reinterpret_cast<const char*>(glGetString(GL_VERSION))) + " / " + gl_renderer;
    return true;
}

// Dear ImGui on the window: the saved layout (the live app only) and the input callbacks.
void SetupImGui(Gui& g) {
    IMGUI_CHECKVERSION();
    ImGui::CreateContext();
    g.ini_path = g.settings_dir.empty() ? "" : g.settings_dir + "/imgui.ini";
    g.keep_layout = !g.shot && !g.ini_path.empty();
    ImGui::GetIO().IniFilename = nullptr;  // read here, written by SaveLayout when ImGui asks (WantSaveIniSettings)
    std::error_code ini_error;
    if (g.keep_layout && std::filesystem::exists(g.ini_path, ini_error))
        ImGui::LoadIniSettingsFromDisk(g.ini_path.c_str());
    if (!g.shot) g.pacer.install(g.window);  // before ImGui's backend, which chains to these callbacks
    g_next_key_callback = glfwSetKeyCallback(g.window, OnKey);  // chains to the pacer's
    ImGui_ImplGlfw_InitForOpenGL(g.window, true);
    glfwSetDropCallback(g.window, OnDrop);  // the ImGui backend does not install one
}

// The live window as the UI's scale sees it: its size in ImGui's pixels and the desktop's own scale.
// A desktop that already scales windows (the framebuffer larger than the window, e.g. Wayland) has
// applied its scale.
ui::DisplayInfo CurrentDisplay(GLFWwindow* window) {
    int w = 0, h = 0, fb_w = 0, fb_h = 0;
    float sx = 1.0f, sy = 1.0f;
    glfwGetWindowSize(window, &w, &h);
    glfwGetFramebufferSize(window, &fb_w, &fb_h);
    glfwGetWindowContentScale(window, &sx, &sy);
    const float content = fb_w > 0 ? sx * static_cast<float>(w) / static_cast<float>(fb_w) : sx;
    return {static_cast<float>(w), static_cast<float>(h), content};
}

// The UI's scale before any zoom: the one the display asks for (logic/layout.hpp), from its size and
// the desktop's own scale (chosen again when the window changes: FollowDisplay). Presentation mode's
// scale: for the monitor it fills. --screenshot: from --size only, so screenshots are the same on
// every machine.
void ChooseDisplayScale(Gui& g) {
    ui::DisplayInfo d{static_cast<float>(g.width), static_cast<float>(g.height), 1.0f};
    g.ui.scale.presentation = ui::presentation_scale(d.w, d.h);
    if (!g.shot) {
        GLFWmonitor* monitor = glfwGetPrimaryMonitor();
        if (const GLFWvidmode* mode = monitor ? glfwGetVideoMode(monitor) : nullptr)
            g.ui.scale.presentation =
                ui::presentation_scale(static_cast<float>(mode->width), static_cast<float>(mode->height));
        d = CurrentDisplay(g.window);
        g.arranged_for = g.last_display = d;
        ++g.ui.layout.keep_inside_generation;  // a layout saved on a larger screen comes back inside this one
    }
    g.ui.scale.display = ui::default_ui_scale(d.w, d.h, d.content_scale);
}

// The language and the classroom options, then the fonts and the style at the UI's scale. Chinese
// needs a CJK font (else English and a one-line message).
void SetupFonts(Gui& g) {
    const GuiOptions& options = g.options;
    UiState& ui = g.ui;
    if (!options.language.empty() || g.shot)  // --lang, else the saved one (--screenshot: English)
        ui::set_language(ui::parse_language(options.language).value_or(ui::Language::English));
    if (ui::language() == ui::Language::Chinese && !cjk_font_path()) {
        ui::set_language(ui::Language::English);
        ui.classroom.font_message = std::string("no Chinese font found: apt-get install ") + kCjkPackage +
                                    " (make run installs it); showing English";
        std::fprintf(stderr, "attnscope: %s\n", ui.classroom.font_message.c_str());
    }
    ui.classroom.presentation = options.presentation;
    ui.classroom.quiz = options.quiz;
    if (g.shot) ui.scale.zoom = 1.0f;
    g.built_scale = FontScale(ui);
    g.built_language = ui::language();
    build_fonts(g.built_scale, g.built_language == ui::Language::Chinese);
    SetupStyle(g.built_scale, *g.softgl);
    if (!ui.classroom.font_message.empty()) ui.set_status(ui.classroom.font_message);
}

// --screenshot renders into an offscreen framebuffer of exactly the requested size (else, with a
// message, into the back buffer).
void CreateScreenshotTarget(Gui& g) {
    glGenTextures(1, &g.shot_color);
    glBindTexture(GL_TEXTURE_2D, g.shot_color);
    glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA8, g.width, g.height, 0, GL_RGBA, GL_UNSIGNED_BYTE, nullptr);
    glBindTexture(GL_TEXTURE_2D, 0);
    glGenFramebuffers(1, &g.shot_fbo);
    glBindFramebuffer(GL_FRAMEBUFFER, g.shot_fbo);
    glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, g.shot_color, 0);
    const bool complete = glCheckFramebufferStatus(GL_FRAMEBUFFER) == GL_FRAMEBUFFER_COMPLETE;
    glBindFramebuffer(GL_FRAMEBUFFER, 0);
    if (!complete) {
        std::fprintf(stderr, "attnscope: cannot create a %dx%d offscreen framebuffer\n", g.width, g.height);
        g.shot_fbo = 0;
    }
}

// The panels' GL objects (heatmaps, pictures) and the screenshot's target.
void SetupRenderers(Gui& g) {
    std::string gfx_error;
    if (!g.heatmaps.init(&gfx_error)) std::fprintf(stderr, "attnscope: heatmaps disabled: %s\n", gfx_error.c_str());
    g.ui.heatmaps = &g.heatmaps;
    g.ui.pictures = &g.pictures;
    if (g.shot) CreateScreenshotTarget(g);
}

// ---------------------------------------------------------------------------------------------
// [SECTION] frame loop
// ---------------------------------------------------------------------------------------------

constexpr int kScreenshotFrames = 6;  // tables and auto-sized windows settle after a few frames

// Whether to draw a frame now: --screenshot and --bench-gui draw every one; the live app draws when
// something can have changed (FramePacer) or a file was dropped.
bool FrameDue(Gui& g) {
    if (g.shot) {
        glfwPollEvents();
        return true;
    }
    if (!g.pacer.wait(glfwGetTime() - g.t0) && g_dropped.empty()) return false;  // nothing changed: no frame
    // A window resized to a sliver (1x1) or minimized: draw nothing until it grows again, so
    // ImGui does not push every panel into a 1x1 display and lose the layout.
    constexpr int kMinDrawSide = 64;  // the smallest --size side
    int fb_w = 0, fb_h = 0;
    glfwGetFramebufferSize(g.window, &fb_w, &fb_h);
    if (fb_w < kMinDrawSide || fb_h < kMinDrawSide) {
        glfwWaitEventsTimeout(0.1);
        return false;
    }
    return true;
}

// The window resized or moved to a monitor of another scale (logic/display_fit.hpp): the UI's scale
// chosen again, the zoom on top of it, and the panels placed again for the new size unless the user's
// own arrangement survives a small change (then only moved inside). Presentation mode fills the
// monitor by itself: the panels' arrangement stays the windowed one's.
void FollowDisplay(Gui& g) {
    if (g.shot || g.fullscreen || g.ui.classroom.presentation) return;
    const ui::DisplayInfo now = CurrentDisplay(g.window);
    if (g.display_settle > 0) {  // the window on its way back from full screen
        --g.display_settle;
        g.last_display = now;
        return;
    }
    if (now.w == g.last_display.w && now.h == g.last_display.h && now.content_scale == g.last_display.content_scale) return;
    g.last_display = now;
    const ui::FitChange c = ui::follow_display(g.arranged_for, g.ui.scale.display, now, PanelsArrangedByUser(g.ui));
    g.ui.scale.display = c.display_scale;
    // The zoom's ceiling, as Ctrl+= keeps it.
    g.ui.scale.zoom = std::min(g.ui.scale.zoom, ui::kMaxUiScale / g.ui.scale.display);
    if (c.new_reference) g.arranged_for = now;
    if (c.replace) ++g.ui.layout.generation;
    if (c.keep_inside) ++g.ui.layout.keep_inside_generation;
    if (c.tell) {
        char text[160];
        std::snprintf(text, sizeof text, _("window resized: the panels are placed again for %d x %d (Ctrl+L does the same)"),
                      static_cast<int>(now.w), static_cast<int>(now.h));
        g.ui.set_status(text);
    }
}

// Rebuilds the fonts and the style when the zoom (Ctrl+=), presentation mode (F5) or the language
// changed since they were built.
void RebuildFontsIfChanged(Gui& g) {
    if (FontScale(g.ui) == g.built_scale && ui::language() == g.built_language) return;
    g.built_scale = FontScale(g.ui);
    g.built_language = ui::language();
    build_fonts(g.built_scale, g.built_language == ui::Language::Chinese);
    ImGui_ImplOpenGL3_DestroyFontsTexture();
    ImGui_ImplOpenGL3_CreateFontsTexture();
    SetupStyle(g.built_scale, *g.softgl);
}

// Presentation mode fills the monitor; leaving it puts the window back where it was (the frames
// until it is back do not count as a resize).
constexpr int kDisplaySettleFrames = 5;
void FollowPresentationMode(Gui& g) {
    if (g.shot || g.ui.classroom.presentation == g.fullscreen) return;
    g.fullscreen = g.ui.classroom.presentation;
    GLFWmonitor* monitor = glfwGetPrimaryMonitor();
    const GLFWvidmode* mode = monitor ? glfwGetVideoMode(monitor) : nullptr;
    int* w = g.windowed;
    if (g.fullscreen && mode) {
        glfwGetWindowPos(g.window, &w[0], &w[1]);
        glfwGetWindowSize(g.window, &w[2], &w[3]);
        glfwSetWindowMonitor(g.window, monitor, 0, 0, mode->width, mode->height, mode->refreshRate);
    } else if (!g.fullscreen && glfwGetWindowMonitor(g.window)) {
        glfwSetWindowMonitor(g.window, nullptr, w[0], w[1], w[2], w[3], 0);
        g.display_settle = kDisplaySettleFrames;
    }
}

// A finished worker run: swap the snapshot in, or keep the last good trace.
void AcceptFinishedRun(Gui& g) {
    if (auto r = g.runner.poll()) {
        const bool accepted = AcceptResult(*r, g.trace, g.vit, g.ui);
        if (accepted && r->vit && r->vit->fresh_patch == 0) g.trained_vit = r->vit;
        // The first file or ViT could not be opened and nothing is on screen (its job superseded the
        // demo's): the demo, so the app is never left empty.
        if (!accepted && !g.trace) g.ui.ask(command::Rerun{});
        if (r->trace && (r->file || r->vit) && !g.ui.settings_path.empty())
            SaveSettings(g.ui.settings_path, g.ui, g.ui.config.draft);  // the recent-files list survives a crash
    }
    g.ui.engine.busy = g.runner.busy();
    g.ui.engine.progress = g.runner.progress();
}

// The h a ViT runs with again: the one the checkpoint on screen ran with (from its file, or chosen
// when the file did not say), else --heads.
std::optional<std::size_t> VitHeads(const Gui& g) {
    return g.trained_vit ? std::optional<std::size_t>(g.trained_vit->trained_config.heads) : g.options.heads;
}

// A file: dropped on the window, File > Open, Open Recent, the block selector.
void OpenFile(Gui& g, const std::string& path) {
    UiState& ui = g.ui;
    if (!ui::is_image_file(path)) {  // a whole ViT runs on the last picture
        StartFile(g.runner, ui, path, ui.file.picture);
    } else {  // a picture: the ViT (opened as a file, on screen, or still loading) looks at it
        ui.file.picture = path;
        const std::string model = g.trained_vit ? g.trained_vit->model_path : g.options.model_path;
        if (!ui.file.vit_family.empty()) {
            ui.file.open_block.reset();
            StartFile(g.runner, ui, ui.file.path, ui.file.picture);
        } else if (!model.empty()) {
            StartVit(g.runner, ui, EngineRunner::vit_job(model, ui.file.picture, VitHeads(g)));
        } else {
            ui.file.error = Message(Msg::picture_needs_model, {{"file", path}});
            ui.file.error_shown = false;
        }
    }
}

// The patch slider and the patch embedding choice: a fresh model of that patch size or with a CNN
// stem in the worker, or back to the checkpoint's run, which is kept.
void RunFreshVit(Gui& g, std::size_t p, bool stem) {
    if (!g.vit || !g.trained_vit || (p == g.vit->fresh_patch && stem == g.vit->fresh_stem)) return;
    if (p == 0) {
        EngineResult back;
        back.vit = g.trained_vit;
        back.trace = std::shared_ptr<const Trace>(g.trained_vit, &g.trained_vit->trace.blocks.back().attention);
        g.ui.vit.loading = true;
        AcceptResult(back, g.trace, g.vit, g.ui);
    } else {
        StartVit(g.runner, g.ui, EngineRunner::fresh_vit_job(g.trained_vit, p, stem, g.ui.vit.drop_path));
    }
}

// The position controls: the checkpoint again, with or without its position embeddings, and on the
// shuffled picture, in the worker.
void RunPositions(Gui& g, const VitPositionChoice& choice) {
    if (!g.trained_vit || choice == g.trained_vit->positions) return;
    StartVit(g.runner, g.ui,
             EngineRunner::vit_job(g.trained_vit->model_path, g.trained_vit->image_path, VitHeads(g), choice,
                                   g.trained_vit->drop_path));
}

// The drop-path controls: the model shown (the checkpoint or the fresh one) again with the new
// rate, mode or seed, in the worker.
void RunDropPath(Gui& g, const VitDropPathChoice& choice) {
    if (!g.vit || !g.trained_vit || choice == g.vit->drop_path) return;
    if (g.vit->fresh_patch != 0)
        StartVit(g.runner, g.ui,
                 EngineRunner::fresh_vit_job(g.trained_vit, g.vit->fresh_patch, g.vit->fresh_stem, choice));
    else
        StartVit(g.runner, g.ui,
                 EngineRunner::vit_job(g.trained_vit->model_path, g.trained_vit->image_path, VitHeads(g),
                                       g.trained_vit->positions, choice));
}

// The config run again (a bug of the zoo beside the correct run): in the worker when its trace is
// large or a run is still going (which it supersedes), else at once.
void Rerun(Gui& g) {
    UiState& ui = g.ui;
    ui.file.loading.clear();
    ui.vit.loading = false;
    ui.config.errors = validate(ui.config.draft, memory_budget());
    if (!ui.config.errors.empty()) return;
    if (ui.zoo.bug != Bug::None) {
        g.runner.start(EngineRunner::zoo_job(ui.config.draft, ui.zoo.bug));
        ui.engine.busy = true;
    } else if (trace_bytes(ui.config.draft) > EngineRunner::kWorkerThresholdBytes || g.runner.busy()) {
        g.runner.start(ui.config.draft);  // also supersedes a file still being read
        ui.engine.busy = true;
    } else {
        AcceptResult(EngineRunner::run_now(ui.config.draft), g.trace, g.vit, ui);
    }
}

// A frame's commands, each kind once (the last one asked: a slider dragged across three sizes runs
// the last), carried out in HandleCommands' order. The export and quit stay queued for the frame
// loop (the export once the frame that asked has drawn its heatmap).
struct FrameCommands {
    std::optional<std::string> open;
    std::optional<Bug> bug;
    bool back_to_config = false, rerun = false;
    std::optional<std::size_t> vit_block;
    std::optional<std::pair<std::size_t, bool>> fresh_vit;  // patch, stem (UiState::pending_fresh_vit)
    std::optional<VitPositionChoice> positions;
    std::optional<VitDropPathChoice> drop_path;
};

template <typename... F>
struct Overloaded : F... {
    using F::operator()...;
};
template <typename... F>
Overloaded(F...) -> Overloaded<F...>;

FrameCommands TakeCommands(UiState& ui) {
    FrameCommands f;
    if (ui.asked<command::FreshVit>()) f.fresh_vit = ui.pending_fresh_vit();
    std::vector<Command> kept;
    for (Command& c : ui.commands)
        std::visit(Overloaded{[&](command::Open& o) { f.open = std::move(o.path); },
                              [&](command::Rerun&) { f.rerun = true; },
                              [&](command::BackToConfig&) { f.back_to_config = true; },
                              [&](command::ShowBug& b) { f.bug = b.bug; },
                              [&](command::ShowVitBlock& b) { f.vit_block = b.block; },
                              [&](command::FreshVit&) {},  // taken above, all of them at once
                              [&](command::RunPositions& p) { f.positions = p.choice; },
                              [&](command::RunDropPath& d) { f.drop_path = d.choice; },
                              [&](command::ExportHeatmap& e) { kept.emplace_back(e); },
                              [&](command::Quit& q) { kept.emplace_back(q); }},
                   c);
    ui.commands = std::move(kept);
    return f;
}

// What the worker finished, then what the last frame's panels asked for.
void HandleCommands(Gui& g) {
    UiState& ui = g.ui;
    AcceptFinishedRun(g);
    if (!g_dropped.empty()) {  // a file dropped on the window
        ui.ask(command::Open{g_dropped.front()});
        ui.file.open_block.reset();
        ui.file.open_heads.reset();
        g_dropped.clear();
    }
    FrameCommands f = TakeCommands(ui);
    if (f.open) OpenFile(g, *f.open);
    if (f.bug) {  // the Bug zoo menu: the buggy run beside the correct one, in the worker
        ui.zoo.bug = *f.bug;
        f.rerun = true;
        // The zoo runs the single-layer config: what it replaces is said, with the way back.
        if (ui.zoo.bug != Bug::None && (ui.vit.on_screen || !ui.file.path.empty()))
            ui.set_status(_("the Bug zoo runs on the single-layer demo: the ViT or file on screen was closed (File > Open recent brings it back)"));
    }
    f.rerun = f.rerun || f.back_to_config;
    // The ViT: the block selector swaps the trace; the patch slider runs a fresh model; the position
    // controls run the checkpoint again.
    if (f.vit_block && g.vit && *f.vit_block != ui.vit.block) ShowVitBlock(g.vit, *f.vit_block, g.trace, ui);
    if (f.fresh_vit) RunFreshVit(g, f.fresh_vit->first, f.fresh_vit->second);
    if (f.positions) RunPositions(g, *f.positions);
    if (f.drop_path) RunDropPath(g, *f.drop_path);
    if (WindowTitle(ui, g.vit.get()) != g.window_title) {
        g.window_title = WindowTitle(ui, g.vit.get());
        glfwSetWindowTitle(g.window, g.window_title.c_str());
    }
    if (f.rerun) Rerun(g);
}

// Builds the panels' ImGui frame and renders it into the window's back buffer (--screenshot: the
// offscreen framebuffer).
void RenderFrame(Gui& g) {
    const Trace& shown = g.trace ? *g.trace : g.empty_trace;
    if (g.bench) g.bench->before_frame(shown, g.ui);
    g_frame_keys.swap(g_key_presses);
    g_key_presses.clear();
    ImGui_ImplOpenGL3_NewFrame();
    ImGui_ImplGlfw_NewFrame();
    if (g.shot) {
        ImGuiIO& io = ImGui::GetIO();
        io.DisplaySize = ImVec2(static_cast<float>(g.width), static_cast<float>(g.height));
        io.DisplayFramebufferScale = ImVec2(1.0f, 1.0f);
        io.MousePos = ImVec2(-FLT_MAX, -FLT_MAX);
        io.DeltaTime = 1.0f / 60.0f;
    }
    ImGui::NewFrame();
    g.softgl->begin_frame();
    g.ui.frame.animating = false;
    g.ui.frame.item_rects.clear();
    DrawFrame(shown, g.vit.get(), g.ui);
    if (g.ui.follow.element.end_frame()) g.ui.frame.animating = true;  // the mouse left the followed cell: draw it gone
    g.softgl->before_render();
    ImGui::Render();
    const ImVec4 clear = g.softgl->after_render(ImGui::GetDrawData());  // software GL: the clear paints the panels
    // Heads skipped its grid, and Follow went away: the grid is drawn next frame.
    if (g.softgl->skipped_window_uncovered()) g.ui.frame.animating = true;
    g.heatmaps.flush();
    g.pictures.flush();

    int fb_w = g.width, fb_h = g.height;
    if (!g.shot) glfwGetFramebufferSize(g.window, &fb_w, &fb_h);
    glBindFramebuffer(GL_FRAMEBUFFER, g.shot ? g.shot_fbo : 0);
    glViewport(0, 0, fb_w, fb_h);
    glClearColor(clear.x, clear.y, clear.z, clear.w);
    glClear(GL_COLOR_BUFFER_BIT);
    ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
}

// The window layout, saved when ImGui asks (a while after a window moved, changed size or closed).
void SaveLayoutWhenAsked(const Gui& g) {
    ImGuiIO& io = ImGui::GetIO();
    if (g.keep_layout && io.WantSaveIniSettings) {
        SaveLayout(g.ini_path);
        io.WantSaveIniSettings = false;
    }
}

// File > Export: the inspector's heatmap as a PNG, to the path confirmed in the Export dialog.
void ExportWhenAsked(Gui& g) {
    std::vector<Command>& commands = g.ui.commands;
    const auto exports = std::remove_if(commands.begin(), commands.end(), [](const Command& c) {
        return std::holds_alternative<command::ExportHeatmap>(c);
    });
    if (exports == commands.end()) return;
    commands.erase(exports, commands.end());
    const std::string path = g.ui.export_dialog.target;
    std::string error;
    if (g.heatmaps.export_png("inspector", path, 512, &error))
        g.ui.set_status(_("wrote ") + std::filesystem::absolute(path).string());
    else
        g.ui.set_status(_("export failed: ") + error);
}

// --bench-gui: the frame's figures, once it is finished on the GL side. False when every figure
// is measured (the result is printed).
bool BenchFrame(Gui& g) {
    const ImDrawData* dd = ImGui::GetDrawData();
    int commands = 0;
    for (int i = 0; i < dd->CmdListsCount; ++i) commands += dd->CmdLists[i]->CmdBuffer.Size;
    g.bench->before_finish(dd->TotalVtxCount, commands, static_cast<int>(g.softgl->painted_by_clear()));
    glFinish();  // the frame's texture uploads and drawing are done
    if (g.bench->after_frame(g.heatmaps.uploads())) return true;
    std::printf("%s\n", g.bench->result().c_str());
    return false;
}

// --screenshot: the frame as a PNG. False, after one line on stderr, when it cannot be written.
bool WriteScreenshot(const Gui& g) {
    // Read before any swap; the offscreen target (or the back buffer) holds the frame.
    glBindFramebuffer(GL_READ_FRAMEBUFFER, g.shot_fbo);
    if (!g.shot_fbo) glReadBuffer(GL_BACK);
    const std::vector<std::uint8_t> pixels = gfx::read_pixels_top_down(g.width, g.height);
    std::string error;
    if (gfx::write_png_atomic(g.options.screenshot_path, g.width, g.height, pixels, &error)) return true;
    std::fprintf(stderr, "attnscope: %s\n", error.c_str());
    return false;
}

// ATTNSCOPE_STATE_JSON=PATH: what the user sees, for tests that drive the window like a user (keys and
// clicks through XTEST) and read the outcome without pixels: the step, the inspector's slice (head,
// batch item), the followed element, the bug, the quiz, the file, the message shown, and every
// panel's rectangle and cuts as --layout-json reports them.
std::string StateReport(const Gui& g) {
    const UiState& ui = g.ui;
    nlohmann::json j;
    j["trace"] = g.trace != nullptr;
    j["steps"] = g.trace ? g.trace->steps.size() : 0;
    j["step"] = ui.selection.step;
    j["step_index"] = ui.selection.stepper.selected;
    j["playing"] = ui.selection.stepper.playing;
    j["head"] = nullptr;
    j["batch"] = nullptr;
    const Step* step = g.trace ? g.trace->find(ui.selection.step) : nullptr;
    j["shape"] = step ? step->shape() : Shape{};
    const auto view = ui.inspector.views.find(ui.selection.step);
    if (step && view != ui.inspector.views.end() && view->second.has_spec) {
        const ui::SliceSpec& s = view->second.spec;
        const Axes& axes = step->axes();
        j["slice"] = {{"axes", axes}, {"row_axis", s.row_axis}, {"col_axis", s.col_axis}, {"index", s.index}};
        for (std::size_t a = 0; a < axes.size() && a < s.index.size(); ++a) {
            const bool shown = static_cast<int>(a) == s.row_axis || static_cast<int>(a) == s.col_axis;
            if (axes[a] == "h" && !shown) j["head"] = s.index[a];
            if (axes[a] == "B" && !shown) j["batch"] = s.index[a];
        }
    }
    j["followed"] = ui.follow.element.active() ? nlohmann::json{{"step", ui.follow.element.step},
                                                                {"index", ui.follow.element.index},
                                                                {"pinned", ui.follow.element.pinned}}
                                               : nlohmann::json(nullptr);
    j["bug"] = ui.zoo.run ? bug_info(ui.zoo.bug).key : "none";
    j["presentation"] = ui.classroom.presentation;
    j["slide_title"] = ui.classroom.presentation ? ui.classroom.slide_title : std::string();
    const ui::ClassroomState& c = ui.classroom;
    const bool asking = g.trace && c.asking >= 0 && c.asking < static_cast<int>(g.trace->steps.size());
    j["quiz"] = {{"on", c.quiz},
                 {"asking", asking ? nlohmann::json(g.trace->steps[static_cast<std::size_t>(c.asking)].name) : nlohmann::json(nullptr)},
                 {"asking_shape", asking ? g.trace->steps[static_cast<std::size_t>(c.asking)].shape() : Shape{}},
                 {"right", c.score.right},
                 {"asked", c.score.asked},
                 {"last_answer", c.feedback && c.feedback->given ? (c.feedback->correct ? "right" : "wrong") : ""}};
    j["language"] = ui::language() == ui::Language::Chinese ? "zh" : "en";
    j["file"] = ui.file.path;
    j["source"] = g.trace ? g.trace->source_path : std::string();
    j["loading"] = ui.file.loading;
    j["busy"] = ui.engine.busy;
    j["vit"] = ui.vit.on_screen;
    j["vit_query"] = ui.vit.query;  // the token whose attention the Image panel shows (0: the class token)
    j["message"] = english(ui.file.error);  // the "Cannot open the file" dialog, while it is open
    j["message_shown"] = ui::tr_message(ui.file.error);  // the same as the dialog words it, in the UI's language
    j["modal"] = ui.modal_on_screen;  // the modal drawn this frame: "cannot_open", "heads_question" or ""
    j["heads"] = g.trace ? g.trace->config.heads : 0;
    j["file_notes"] = english(ui.file.notes);  // where input, weights and heads came from
    j["heads_question"] = ui.heads_question.path.empty()
                              ? nlohmann::json(nullptr)
                              : nlohmann::json{{"path", ui.heads_question.path},
                                               {"picture", ui.heads_question.picture},
                                               {"dim", ui.heads_question.dim},
                                               {"choice", ui.heads_question.choice}};
    j["run_error"] = english(ui.engine.error);
    j["config_errors"] = nlohmann::json::array();  // the Config panel's draft the engine refused
    for (const Message& e : ui.config.errors) j["config_errors"].push_back(english(e));
    j["status"] = ui.status.text;
    j["back_to_demo_enabled"] = !ui.file.path.empty() || ui.vit.on_screen;  // File > Back to the demo / config
    j["items"] = nlohmann::json::object();
    for (const auto& [name, r] : ui.frame.item_rects) j["items"][name] = {r.x, r.y, r.w, r.h};
    j["layout"] = nlohmann::json::parse(LayoutReport());
    return j.dump(1) + "\n";
}

// Writes StateReport() when it changed since the last frame (atomically: a reader never sees half).
void WriteStateWhenChanged(Gui& g) {
    if (g.state_path.empty()) return;
    std::string now = StateReport(g);
    if (now == g.state_written) return;
    try {
        write_file_atomic(g.state_path, now);
        g.state_written = std::move(now);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "attnscope: ATTNSCOPE_STATE_JSON %s: %s\n", g.state_path.c_str(), e.what());
        g.state_path.clear();
    }
}

// --layout-json: LayoutReport() of the last frame, written atomically. False, after one line on
// stderr, when it cannot be written.
bool WriteLayoutReport(const Gui& g) {
    if (g.options.layout_json_path.empty()) return true;
    try {
        write_file_atomic(g.options.layout_json_path, LayoutReport());
        return true;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "attnscope: --layout-json %s: %s\n", g.options.layout_json_path.c_str(), e.what());
        return false;
    }
}

// Frees what the frame did not draw, shows the frame, and tells the pacer what it left moving.
void PresentFrame(Gui& g) {
    g.heatmaps.collect();
    g.pictures.collect();
    glBindFramebuffer(GL_FRAMEBUFFER, 0);
    glfwSwapBuffers(g.window);
    if (!g.shot) g.pacer.frame_done(g.ui);
}

// ---------------------------------------------------------------------------------------------
// [SECTION] shutdown
// ---------------------------------------------------------------------------------------------

// The live app's settings and layout saved, then everything set up, in reverse.
void Shutdown(Gui& g) {
    UiState& ui = g.ui;
    if (!g.shot && !ui.settings_path.empty())
        SaveSettings(ui.settings_path, ui,
                     g.trace && ui.file.path.empty() && !ui.vit.on_screen ? g.trace->config : ui.config.draft);
    if (g.keep_layout) SaveLayout(g.ini_path);
    if (g.shot_fbo) glDeleteFramebuffers(1, &g.shot_fbo);
    if (g.shot_color) glDeleteTextures(1, &g.shot_color);
    ui.heatmaps = nullptr;
    g.heatmaps.shutdown();
    ui.pictures = nullptr;
    g.pictures.shutdown();
    ImGui_ImplOpenGL3_Shutdown();
    ImGui_ImplGlfw_Shutdown();
    ImGui::DestroyContext();
    glfwDestroyWindow(g.window);
    glfwTerminate();
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// [SECTION] run_gui
// ---------------------------------------------------------------------------------------------

int run_gui(const GuiOptions& options) {
    Gui gui(options);
    if (const char* state = std::getenv("ATTNSCOPE_STATE_JSON")) gui.state_path = state;
    gui.ui.frame.record_items = !gui.state_path.empty();
    LoadSettingsAndOptions(gui);
    if (!CheckOptions(gui)) return 2;
    if (!StartFirstRun(gui)) return 2;
    if (!ShowStartView(gui)) return 2;

    // Window and GL context. The live app's first run starts once the window exists: creating it
    // takes a core for a while, longer with the engine's threads beside it, so GL and the fonts are
    // set up meanwhile and the first frame does not wait for the run (the panels show "running").
    if (!OpenWindow(gui)) return 2;
    if (gui.first_job) gui.runner.start(std::move(gui.first_job));
    if (!LoadGl(gui)) return 2;
    SetupImGui(gui);
    if (!gui.shot) StartOpening(gui);  // the demo stays on screen meanwhile; errors go to the modal
    ImGui_ImplOpenGL3_Init("#version 330 core");
    ChooseDisplayScale(gui);
    SetupFonts(gui);
    SetupRenderers(gui);
    if (!gui.settings_message.empty()) gui.ui.set_status(gui.settings_message);  // over the font's message

    // Frame loop.
    std::signal(SIGINT, OnSignal);
    std::signal(SIGTERM, OnSignal);
    int exit_status = 0;
    int frame = 0;
    gui.t0 = glfwGetTime();
    while (!glfwWindowShouldClose(gui.window) && !gui.ui.asked<command::Quit>() && !g_stop) {
        if (!FrameDue(gui)) continue;
        gui.ui.frame.now = glfwGetTime() - gui.t0;
        FollowDisplay(gui);
        RebuildFontsIfChanged(gui);
        FollowPresentationMode(gui);
        HandleCommands(gui);
        RenderFrame(gui);
        WriteStateWhenChanged(gui);
        SaveLayoutWhenAsked(gui);
        ExportWhenAsked(gui);
        if (gui.bench) {
            if (!BenchFrame(gui)) break;
        } else if (gui.shot && ++frame >= kScreenshotFrames) {
            if (!WriteScreenshot(gui) || !WriteLayoutReport(gui)) exit_status = 2;
            break;
        }
        PresentFrame(gui);
    }

    // Shutdown in reverse.
    std::signal(SIGINT, SIG_DFL);
    std::signal(SIGTERM, SIG_DFL);
    Shutdown(gui);
    return exit_status;
}

}  // namespace attnscope
