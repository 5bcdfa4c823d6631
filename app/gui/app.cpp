// run_gui: the desktop app's straight-line main. Setup, frame loop, shutdown in reverse.
//
// [SECTION] settings   [SECTION] frame   [SECTION] run_gui
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
#include <filesystem>
#include <fstream>
#include <sstream>

#include "softgl/backdrop.hpp"
#include "bench_gui.hpp"
#include "logic/engine_runner.hpp"
#include "fonts.hpp"
#include "softgl/frame_pacer.hpp"
#include "softgl/cached_drawing.hpp"
#include "gfx/heatmap_renderer.hpp"
#include "gfx/png.hpp"
#include "gfx/rgb_textures.hpp"
#include "io.hpp"
#include "memory_budget.hpp"
#include "logic/file_browser.hpp"
#include "logic/i18n.hpp"
#include "logic/renderer.hpp"
#include "logic/settings.hpp"
#include "softgl/occlusion.hpp"
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

void SaveSettings(const std::string& path, const UiState& ui, const AttentionConfig& config) {
    ui::Settings s;
    s.config = config;
    s.has_config = true;
    s.step = ui.selected_step;
    s.ui_scale = ui.ui_scale;
    s.panels = ui.panels;
    s.range_mode = ui.range_mode;
    s.scale_mode = ui.scale_mode;
    s.colormap = ui.colormap;
    s.heads_shared_scale = ui.heads_shared_scale;
    s.play_interval = ui.stepper.interval;
    s.recent_files = ui.recent_files;
    s.browser_folder = ui.browser_folder;
    s.language = ui::language_code(ui::language());
    try {
        write_file_atomic(path, ui::settings_to_json(s));
    } catch (const std::exception& e) {
        std::fprintf(stderr, "attnscope: cannot save settings: %s\n", e.what());
    }
}

void ApplySettings(const ui::Settings& s, UiState& ui) {
    ui.ui_scale = s.ui_scale;
    ui.panels = s.panels;
    ui.range_mode = s.range_mode;
    ui.scale_mode = s.scale_mode;
    ui.colormap = s.colormap;
    ui.heads_shared_scale = s.heads_shared_scale;
    ui.stepper.interval = s.play_interval;
    ui.recent_files = s.recent_files;
    ui.browser_folder = s.browser_folder;
    if (auto language = ui::parse_language(s.language)) ui::set_language(*language);
}

// software_gl: convex fills (rounded frames, circles) without their anti-aliased fringe, which a
// software rasterizer sets up on this thread (logic/renderer.hpp): without it frames take less of
// the app thread (README, Benchmark: GUI).
void SetupStyle(float scale, bool software_gl) {
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
    style.AntiAliasedFill = !software_gl;
    style.ScaleAllSizes(scale);
    ImGui::GetStyle() = style;
}

// ---------------------------------------------------------------------------------------------
// [SECTION] frame
// ---------------------------------------------------------------------------------------------

void HandleKeys(const Trace& trace, UiState& ui) {
    const ImGuiIO& io = ImGui::GetIO();
    if (!io.WantTextInput && !trace.steps.empty()) {
        if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_LeftArrow))) ui.stepper.key(ui::StepKey::Prev);
        if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_RightArrow))) ui.stepper.key(ui::StepKey::Next);
        if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Home), false)) ui.stepper.key(ui::StepKey::First);
        if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_End), false)) ui.stepper.key(ui::StepKey::Last);
        if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Space), false)) ui.stepper.key(ui::StepKey::TogglePlay);
    }
    // 1.86: io.KeysDown is indexed by GLFW key codes for keys without an ImGuiKey_.
    if (ImGui::IsKeyPressed(GLFW_KEY_F1, false)) ui.show_help = !ui.show_help;
    HandleClassroomKeys(ui);  // F5, Esc
    if (io.KeyCtrl) {
        if (ImGui::IsKeyPressed(GLFW_KEY_EQUAL) || ImGui::IsKeyPressed(GLFW_KEY_KP_ADD))
            ui.ui_scale = std::min(ui.ui_scale * 1.1f, 3.0f);
        if (ImGui::IsKeyPressed(GLFW_KEY_MINUS) || ImGui::IsKeyPressed(GLFW_KEY_KP_SUBTRACT))
            ui.ui_scale = std::max(ui.ui_scale / 1.1f, 0.5f);
        if (ImGui::IsKeyPressed(GLFW_KEY_0, false)) ui.ui_scale = 1.0f;
        if (ImGui::IsKeyPressed(GLFW_KEY_Q, false)) ui.quit_requested = true;
        if (ImGui::IsKeyPressed(GLFW_KEY_O, false)) OpenFileBrowser(ui);
    }
}

// Keeps ui.selected_step equal to the stepper's step; starts the axis animation on a change.
void SyncSelection(const Trace& trace, UiState& ui) {
    ui.stepper.set_count(static_cast<int>(trace.steps.size()));
    if (trace.steps.empty()) return;
    const std::string& name = trace.steps[static_cast<std::size_t>(ui.stepper.selected)].name;
    if (name != ui.selected_step) {
        ui.previous_step = ui.selected_step;
        ui.selected_step = name;
        ui.step_changed_at = ui.now;
        ui.scroll_to_selection = true;
    }
}

void DrawFrame(const Trace& trace, const VitSnapshot* vit, UiState& ui) {
    HandleKeys(trace, ui);
    ui.stepper.tick(ImGui::GetIO().DeltaTime);
    QuizGate(trace, ui);  // the quiz asks before "next" shows a step
    SyncSelection(trace, ui);
    if (ui.classroom.presentation) {  // only the current step, full screen
        DrawPresentation(trace, ui);
        DrawQuizWindow(trace, ui);
        SyncSelection(trace, ui);
        return;
    }
    DrawMenuBar(trace, ui);
    DrawPipelinePanel(trace, ui);
    if (ui.vit_on_screen || ui.vit_loading) DrawImagePanel(vit, ui);  // the ViT takes the Config panel's place
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
    DrawFileErrorModal(ui);
    DrawQuizWindow(trace, ui);
    DrawExportDialog(ui);
    SyncSelection(trace, ui);
}

// The step a file opens at: its attention maps when that is all it holds, else its first
// divergence from the reference, else the wanted step when the file has it, else attn or the first.
std::string FileStartStep(const FileTrace& file, const std::string& wanted) {
    const Trace& t = file.trace;
    if (file.attention_maps_only && t.find("attn")) return "attn";
    if (const StepDifference* d = FirstDivergence(t)) return d->step;
    if (!wanted.empty() && t.find(wanted)) return wanted;
    if (t.find("attn")) return "attn";
    return t.steps.empty() ? std::string() : t.steps.front().name;
}

// The step a bug-zoo run opens at: where the bug first shows, else (a shape error) the last step run.
std::string ZooStartStep(const ZooRun& zoo) {
    if (zoo.buggy.find(zoo.first_step)) return zoo.first_step;
    return zoo.buggy.steps.empty() ? std::string() : zoo.buggy.steps.back().name;
}

// Runs trace_from_file in the worker (a whole ViT: on `picture` when there is one); the trace on
// screen stays until it is done.
void StartFile(EngineRunner& runner, UiState& ui, const std::string& path, const std::string& picture) {
    ui.loading_path = path;
    runner.start(EngineRunner::file_job(path, ui.open_block, ui.open_heads, picture));
    ui.engine_busy = true;
}

// Forgets the open file (a config or ViT trace replaces it).
void CloseFile(UiState& ui) {
    ui.file_path.clear();
    ui.file_blocks.clear();
    ui.file_block.reset();
    ui.file_notes.clear();
    ui.file_vit_family.clear();
    ui.file_vit_needs_heads = false;
    ui.open_heads.reset();
    ui.show_difference = false;
}

// Runs the ViT on a picture in the worker; the trace on screen stays until it is done.
void StartVit(EngineRunner& runner, UiState& ui, EngineJob job) {
    ui.loading_path.clear();
    ui.vit_loading = true;
    runner.start(std::move(job));
    ui.engine_busy = true;
}

// Shows block `block` of the ViT on screen: its attention Trace goes to the other panels.
void ShowVitBlock(const std::shared_ptr<const VitSnapshot>& vit, std::size_t block,
                  std::shared_ptr<const Trace>& trace, UiState& ui) {
    ui.vit_block = std::min(block, vit->trace.blocks.size() - 1);
    trace = std::shared_ptr<const Trace>(vit, &vit->trace.blocks[ui.vit_block].attention);
    ++ui.trace_generation;
}

// Puts a file at the top of File > Open recent (absolute, so it opens from any folder).
void RememberRecent(UiState& ui, const std::string& path) {
    std::error_code ec;
    const std::string absolute = std::filesystem::absolute(path, ec).lexically_normal().string();
    ui.recent_files = ui::add_recent(ui.recent_files, ec ? path : absolute);
}

// Puts a finished run on screen (a file's, a ViT's or the config's), or records why it failed; the
// trace on screen stays when it failed. Returns false on failure.
bool AcceptResult(const EngineResult& r, std::shared_ptr<const Trace>& trace, std::shared_ptr<const VitSnapshot>& vit,
                  UiState& ui) {
    const bool was_file = !ui.loading_path.empty();
    const bool was_vit = ui.vit_loading;
    const std::string path = ui.loading_path;
    ui.loading_path.clear();
    ui.vit_loading = false;
    if (!r.trace) {
        if (was_file || was_vit) {
            ui.file_error = r.error;
            ui.file_error_shown = false;
        } else {
            ui.run_error = r.error;
        }
        return false;
    }
    trace = r.trace;
    ui.engine_seconds = r.seconds;
    ++ui.trace_generation;
    if (!r.zoo) {
        ui.zoo.reset();
        ui.bug = Bug::None;
    }
    const bool was_vit_on_screen = ui.vit_on_screen;
    if (!r.vit) {
        vit.reset();
        ui.vit_on_screen = false;
    }
    if (r.vit) {
        const bool first = !ui.vit_on_screen;
        vit = r.vit;
        ui.vit_on_screen = true;
        ++ui.vit_generation;
        ui.vit_blocks = vit->trace.blocks.size();
        ui.vit_patch = vit->fresh_patch;
        ShowVitBlock(vit, first ? ui.vit_blocks - 1 : ui.vit_block, trace, ui);  // default: the last block
        if (vit->fresh_patch == 0) RememberRecent(ui, vit->image_path);  // Open recent offers the picture again
        ui.vit_picture = vit->image_path;
        if (was_file) RememberRecent(ui, path);  // a whole ViT opened as a file: and the checkpoint, first
        if (ui.vit_query >= vit->trace.grid.tokens()) ui.vit_query = 0;
        ui.run_error.clear();
        ui.file_error.clear();
        if (first) ui.views.clear();  // other shapes than the demo's
        CloseFile(ui);
        SelectStep(*trace, ui, ui.selected_step.empty() ? "attn" : ui.selected_step);
    } else if (r.file) {
        const bool same_file = ui.file_path == path;
        ui.file_path = path;
        ui.file_blocks = r.file->blocks;
        ui.file_block = r.file->block;
        ui.file_notes = r.file->notes;
        ui.file_vit_family = r.vit_family;
        ui.file_vit_needs_heads = r.vit_needs_heads;
        ui.file_error.clear();
        RememberRecent(ui, path);
        if (!same_file) ui.views.clear();  // other shapes: zoom and slices start fresh
        ui.show_difference = FirstDivergence(*trace) != nullptr;
        SelectStep(*trace, ui, same_file ? ui.selected_step : FileStartStep(*r.file, ui.selected_step));
    } else {
        ui.run_error.clear();
        if (!ui.file_path.empty() || was_vit_on_screen) ui.views.clear();
        CloseFile(ui);
        ui.zoo = r.zoo;  // a bug-zoo run: the buggy trace with its differences from the correct one
        ui.bug = r.zoo ? r.zoo->bug : Bug::None;
        ui.show_difference = r.zoo && FirstDivergence(*trace) != nullptr;
        SelectStep(*trace, ui, r.zoo ? ZooStartStep(*r.zoo) : ui.selected_step.empty() ? "attn" : ui.selected_step);
    }
    return true;
}

std::string WindowTitle(const UiState& ui, const VitSnapshot* vit) {
    if (vit && ui.vit_on_screen)
        return "attnscope \u2014 " + ui::display_name(vit->model_path) + tr(" on ") + ui::display_name(vit->image_path) +
               tr(" (block ") + std::to_string(ui.vit_block) + ")";
    if (ui.file_path.empty()) return "attnscope";
    std::string t = "attnscope \u2014 " + ui::display_name(ui.file_path);
    if (ui.file_block && ui.file_blocks.size() > 1) t += tr(" (block ") + std::to_string(*ui.file_block) + ")";
    return t;
}

std::string StepList(const Trace& trace) {
    std::string s;
    for (const auto& step : trace.steps) s += (s.empty() ? "" : ", ") + step.name;
    return s;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// [SECTION] run_gui
// ---------------------------------------------------------------------------------------------

int run_gui(const GuiOptions& options) {
    const bool shot = !options.screenshot_path.empty() || options.bench;  // --bench-gui renders like a screenshot
    std::optional<GuiBench> bench;
    if (options.bench) bench.emplace();
    const int width = std::clamp(options.width, 320, 8192), height = std::clamp(options.height, 240, 8192);
    UiState ui;
    ui.animate = !shot;
    ui.screenshot = shot;

    // Settings (never in --screenshot mode, so screenshots are reproducible).
    std::string settings_dir, settings_message;
    std::optional<ui::Settings> settings;
    if (!shot) {
        settings_dir = ui::settings_dir(std::getenv("XDG_CONFIG_HOME"), std::getenv("HOME"));
        if (!settings_dir.empty()) {
            std::error_code ec;
            std::filesystem::create_directories(settings_dir, ec);
            ui.settings_path = settings_dir + "/settings.json";
            settings = LoadSettings(ui.settings_path, &settings_message);
            if (!settings_message.empty()) std::fprintf(stderr, "attnscope: %s\n", settings_message.c_str());
            if (settings) ApplySettings(*settings, ui);
        }
    }
    if (options.show_gradients) {  // the Gradients panel takes the right column (heads, row sums)
        ui.show_gradients = true;
        ui.panels.heads = ui.panels.row_sums = false;
    }
    AttentionConfig config = options.config;
    if (!shot && !options.config_from_user && settings && settings->has_config) config = settings->config;

    // The first trace: in the worker, started once the window exists (creating it takes a core for
    // a while, longer with the engine's threads beside it), so GL and the fonts are set up
    // meanwhile and the first frame does not wait for it (the panels show "running" until it is
    // done); synchronous for --screenshot, whose frames must show it.
    EngineRunner runner;
    bool start_first_run = false;
    std::shared_ptr<const Trace> trace;
    std::shared_ptr<const VitSnapshot> vit, trained_vit;  // the ViT on screen; the checkpoint's run (patch slider)
    const Trace empty_trace;
    ui.config_draft = config;
    ui.config_errors = validate(config, memory_budget());
    if (!ui.config_errors.empty() && shot) {
        std::fprintf(stderr, "attnscope: %s\n", ui.config_errors.front().c_str());
        return 2;
    }
    const bool open_file = !options.open_path.empty();
    const bool open_vit = !options.model_path.empty() || !options.image_path.empty();
    if (open_vit && (options.model_path.empty() || options.image_path.empty())) {
        std::fprintf(stderr, "attnscope: --model and --image go together: give the ViT checkpoint "
                             "(--model FILE.safetensors) and the picture it looks at (--image FILE.png)\n");
        return 2;
    }
    if (open_vit && open_file) {
        std::fprintf(stderr, "attnscope: open either FILE or --model/--image, not both\n");
        return 2;
    }
    if (open_vit && shot) {
        // --screenshot --model --image: wait for the ViT, so the PNG shows the Image panel (or exit 2).
        StartVit(runner, ui, EngineRunner::vit_job(options.model_path, options.image_path, options.heads));
        const std::optional<EngineResult> r = runner.wait();
        if (!r || !AcceptResult(*r, trace, vit, ui)) {
            std::fprintf(stderr, "attnscope: %s\n", r ? r->error.c_str() : "the ViT job was cancelled");
            return 2;
        }
        trained_vit = vit;
    } else if (open_file && shot) {
        // --screenshot FILE: wait for the worker, so the PNG shows the file (or exit 2 with its error).
        ui.open_block = options.block;
        ui.open_heads = options.heads;
        StartFile(runner, ui, options.open_path, {});
        const std::optional<EngineResult> r = runner.wait();
        if (!r || !AcceptResult(*r, trace, vit, ui)) {
            std::fprintf(stderr, "attnscope: %s\n", r ? r->error.c_str() : "the file job was cancelled");
            return 2;
        }
    } else if (ui.config_errors.empty()) {
        if (options.screenshot_path.empty()) {  // the live app and --bench-gui
            start_first_run = true;
        } else {
            EngineResult r = EngineRunner::run_now(config);
            if (r.trace) {
                trace = r.trace;
                ui.engine_seconds = r.seconds;
                ++ui.trace_generation;
            } else {
                ui.run_error = r.error;
                if (shot) {
                    std::fprintf(stderr, "attnscope: the engine failed: %s\n", r.error.c_str());
                    return 2;
                }
            }
        }
    }
    // --bug: the zoo's run of that bug replaces the config's (waited for in --screenshot).
    if (!options.bug.empty() && !open_file && !open_vit && ui.config_errors.empty()) {
        ui.bug = bug_from_key(options.bug).value_or(Bug::None);
        runner.start(EngineRunner::zoo_job(config, ui.bug));
        if (shot) {
            const std::optional<EngineResult> r = runner.wait();
            if (!r || !AcceptResult(*r, trace, vit, ui)) {
                std::fprintf(stderr, "attnscope: %s\n", r ? r->error.c_str() : "the zoo job was cancelled");
                return 2;
            }
        }
    }
    ui.show_cost = options.show_cost;
    if (!options.follow_step.empty()) {  // --follow STEP[i,j,...]
        ui.follow_step = options.follow_step;
        ui.follow_index = options.follow_index;
        ui.follow_pinned = true;
        ui.follow_reveal = options.step.empty();
    }
    // The step shown first: --step, else the last one, else attn (heads grid + row sums at once).
    std::string start_step = !options.step.empty() ? options.step
                                                    : (!shot && settings && !settings->step.empty() ? settings->step : "attn");
    if (trace && !ui.file_path.empty() && options.step.empty()) start_step = SelectedStep(*trace, ui)->name;  // FileStartStep's
    if (trace && ui.zoo && options.step.empty()) start_step = ZooStartStep(*ui.zoo);
    if (trace) {
        if (!trace->find(start_step)) {
            if (!options.step.empty()) {
                std::fprintf(stderr, "attnscope: no step named '%s'; the steps are: %s\n", options.step.c_str(),
                             StepList(*trace).c_str());
                if (shot) return 2;
            }
            start_step = trace->find("attn") ? "attn" : "context";  // flash has no attn step
        }
        SelectStep(*trace, ui, start_step);
        SyncSelection(*trace, ui);
    } else {
        ui.selected_step = start_step;
    }

    // Window and GL context.
    glfwSetErrorCallback(OnGlfwError);
    if (!glfwInit()) {
        std::fprintf(stderr, "attnscope: cannot open a window (no DISPLAY?); run under xvfb-run -a\n");
        return 2;
    }
    glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
    glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
    glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
    glfwWindowHint(GLFW_OPENGL_FORWARD_COMPAT, GLFW_TRUE);
    if (shot) glfwWindowHint(GLFW_VISIBLE, GLFW_FALSE);
    int win_w = width, win_h = height;
    if (!shot) {
        int wx = 0, wy = 0, ww = 0, wh = 0;
        if (GLFWmonitor* m = glfwGetPrimaryMonitor()) glfwGetMonitorWorkarea(m, &wx, &wy, &ww, &wh);
        if (ww > 0 && wh > 0) {
            win_w = std::min(win_w, ww);
            win_h = std::min(win_h, wh);
        }
    }
    GLFWwindow* window = glfwCreateWindow(win_w, win_h, "attnscope", nullptr, nullptr);
    if (!window) {
        std::fprintf(stderr, "attnscope: cannot create an OpenGL 3.3 core window: %s\n", g_glfw_error.c_str());
        glfwTerminate();
        return 2;
    }
    if (start_first_run) runner.start(config);
    glfwMakeContextCurrent(window);
    glfwSwapInterval(shot ? 0 : 1);
    if (!gladLoadGL(reinterpret_cast<GLADloadfunc>(glfwGetProcAddress))) {
        std::fprintf(stderr, "attnscope: cannot load OpenGL 3.3 functions\n");
        glfwDestroyWindow(window);
        glfwTerminate();
        return 2;
    }
    const std::string gl_renderer = reinterpret_cast<const char*>(glGetString(GL_RENDERER));
    const bool software_gl = ui::software_renderer(gl_renderer);
    ui.gl_info = std::string(reinterpret_cast<const char*>(glGetString(GL_VERSION))) + " / " + gl_renderer;

    // Dear ImGui.
    IMGUI_CHECKVERSION();
    ImGui::CreateContext();
    ImGuiIO& io = ImGui::GetIO();
    const std::string ini_path = settings_dir.empty() ? "" : settings_dir + "/imgui.ini";
    const bool keep_layout = !shot && !ini_path.empty();
    io.IniFilename = nullptr;  // read here, written by SaveLayout when ImGui asks (WantSaveIniSettings)
    std::error_code ini_error;
    if (keep_layout && std::filesystem::exists(ini_path, ini_error)) ImGui::LoadIniSettingsFromDisk(ini_path.c_str());
    FramePacer pacer;  // the live app draws only when something can have changed
    if (!shot) pacer.install(window);  // before ImGui's backend, which chains to these callbacks
    ImGui_ImplGlfw_InitForOpenGL(window, true);
    glfwSetDropCallback(window, OnDrop);  // the ImGui backend does not install one
    if (open_file && !shot) {
        ui.open_block = options.block;
        ui.open_heads = options.heads;
        StartFile(runner, ui, options.open_path, {});  // the demo stays on screen until the file is read
    }
    if (open_vit && !shot)  // the demo stays on screen until the ViT has run; errors go to the modal
        StartVit(runner, ui, EngineRunner::vit_job(options.model_path, options.image_path, options.heads));
    std::string window_title = "attnscope";
    ImGui_ImplOpenGL3_Init("#version 330 core");
    // The classroom options; Chinese needs a CJK font (else English and a one-line message).
    if (!options.language.empty() || shot)  // --lang, else the saved one (--screenshot: English)
        ui::set_language(ui::parse_language(options.language).value_or(ui::Language::English));
    if (ui::language() == ui::Language::Chinese && !cjk_font_path()) {
        ui::set_language(ui::Language::English);
        ui.classroom.font_message = std::string("no Chinese font found: apt-get install ") + kCjkPackage +
                                    " (make run installs it); showing English";
        std::fprintf(stderr, "attnscope: %s\n", ui.classroom.font_message.c_str());
    }
    ui.classroom.presentation = options.presentation;
    ui.classroom.quiz = options.quiz;
    if (shot) ui.ui_scale = 1.0f;
    // Fonts are rebuilt when the zoom, presentation mode (2x) or the language (CJK glyphs) change.
    auto font_scale = [&ui] { return ui.ui_scale * (ui.classroom.presentation ? 2.0f : 1.0f); };
    float built_scale = font_scale();
    ui::Language built_language = ui::language();
    build_fonts(built_scale, built_language == ui::Language::Chinese);
    SetupStyle(built_scale, software_gl);
    if (!ui.classroom.font_message.empty()) ui.set_status(ui.classroom.font_message);
    bool fullscreen = false;
    int windowed[4] = {0, 0, win_w, win_h};  // x, y, w, h to restore after presentation mode

    gfx::HeatmapRenderer heatmaps;
    std::string gfx_error;
    if (!heatmaps.init(&gfx_error)) std::fprintf(stderr, "attnscope: heatmaps disabled: %s\n", gfx_error.c_str());
    ui.heatmaps = &heatmaps;
    gfx::RgbTextures pictures;
    ui.pictures = &pictures;
    gfx::CachedDrawings drawings;
    ui.drawings = &drawings;
    Backdrop backdrop(ImVec4(0.06f, 0.06f, 0.07f, 1.0f), software_gl);  // the colour between windows
    if (!settings_message.empty()) ui.set_status(settings_message);

    // --screenshot renders into an offscreen framebuffer of exactly the requested size.
    GLuint shot_fbo = 0, shot_color = 0;
    if (shot) {
        glGenTextures(1, &shot_color);
        glBindTexture(GL_TEXTURE_2D, shot_color);
        glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA8, width, height, 0, GL_RGBA, GL_UNSIGNED_BYTE, nullptr);
        glBindTexture(GL_TEXTURE_2D, 0);
        glGenFramebuffers(1, &shot_fbo);
        glBindFramebuffer(GL_FRAMEBUFFER, shot_fbo);
        glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, shot_color, 0);
        const bool complete = glCheckFramebufferStatus(GL_FRAMEBUFFER) == GL_FRAMEBUFFER_COMPLETE;
        glBindFramebuffer(GL_FRAMEBUFFER, 0);
        if (!complete) {
            std::fprintf(stderr, "attnscope: cannot create a %dx%d offscreen framebuffer\n", width, height);
            shot_fbo = 0;
        }
    }

    // Frame loop.
    std::signal(SIGINT, OnSignal);
    std::signal(SIGTERM, OnSignal);
    int exit_status = 0;
    const int shot_frames = 6;  // tables and auto-sized windows settle after a few frames
    int frame = 0;
    const double t0 = glfwGetTime();
    while (!glfwWindowShouldClose(window) && !ui.quit_requested && !g_stop) {
        if (shot) glfwPollEvents();
        else if (!pacer.wait(glfwGetTime() - t0) && g_dropped.empty()) continue;  // nothing changed: no frame
        // A window resized to a sliver (1x1) or minimized: draw nothing until it grows again, so
        // ImGui does not push every panel into a 1x1 display and lose the layout.
        if (!shot) {
            constexpr int kMinDrawSide = 64;  // the smallest --size side
            int fb_w = 0, fb_h = 0;
            glfwGetFramebufferSize(window, &fb_w, &fb_h);
            if (fb_w < kMinDrawSide || fb_h < kMinDrawSide) {
                glfwWaitEventsTimeout(0.1);
                continue;
            }
        }
        ui.now = glfwGetTime() - t0;
        if (font_scale() != built_scale || ui::language() != built_language) {  // Ctrl+= / F5 / Language
            built_scale = font_scale();
            built_language = ui::language();
            build_fonts(built_scale, built_language == ui::Language::Chinese);
            ImGui_ImplOpenGL3_DestroyFontsTexture();
            ImGui_ImplOpenGL3_CreateFontsTexture();
            SetupStyle(built_scale, software_gl);
        }
        if (!shot && ui.classroom.presentation != fullscreen) {  // presentation mode fills the monitor
            fullscreen = ui.classroom.presentation;
            GLFWmonitor* monitor = glfwGetPrimaryMonitor();
            const GLFWvidmode* mode = monitor ? glfwGetVideoMode(monitor) : nullptr;
            if (fullscreen && mode) {
                glfwGetWindowPos(window, &windowed[0], &windowed[1]);
                glfwGetWindowSize(window, &windowed[2], &windowed[3]);
                glfwSetWindowMonitor(window, monitor, 0, 0, mode->width, mode->height, mode->refreshRate);
            } else if (!fullscreen && glfwGetWindowMonitor(window)) {
                glfwSetWindowMonitor(window, nullptr, windowed[0], windowed[1], windowed[2], windowed[3], 0);
            }
        }
        // A finished worker run: swap the snapshot in, or keep the last good trace.
        if (auto r = runner.poll()) {
            if (AcceptResult(*r, trace, vit, ui) && r->vit && r->vit->fresh_patch == 0) trained_vit = r->vit;
            if (r->trace && (r->file || r->vit) && !ui.settings_path.empty())
                SaveSettings(ui.settings_path, ui, ui.config_draft);  // the recent-files list survives a crash
        }
        ui.engine_busy = runner.busy();
        ui.engine_progress = runner.progress();
        // Files: dropped on the window, File > Open, Open Recent, the block selector.
        if (!g_dropped.empty()) {
            ui.open_request = g_dropped.front();
            ui.open_block.reset();
            ui.open_heads.reset();
            g_dropped.clear();
        }
        if (!ui.open_request.empty()) {
            if (!ui::is_image_file(ui.open_request)) {  // a whole ViT runs on the last picture
                StartFile(runner, ui, ui.open_request, ui.vit_picture);
            } else {  // a picture: the ViT (opened as a file, on screen, or still loading) looks at it
                ui.vit_picture = ui.open_request;
                const std::string model = trained_vit ? trained_vit->model_path : options.model_path;
                if (!ui.file_vit_family.empty()) {
                    ui.open_block.reset();
                    StartFile(runner, ui, ui.file_path, ui.vit_picture);
                } else if (!model.empty()) {
                    StartVit(runner, ui, EngineRunner::vit_job(model, ui.vit_picture, options.heads));
                } else {
                    ui.file_error = ui.open_request + ": a picture needs a ViT model: open a ViT checkpoint (File > "
                                                      "Open) and it runs on this picture, or start attnscope with "
                                                      "--model FILE --image PICTURE (make run opens the demo model)";
                    ui.file_error_shown = false;
                }
            }
            ui.open_request.clear();
        }
        if (ui.bug_request) {  // the Bug zoo menu: the buggy run beside the correct one, in the worker
            ui.bug = *ui.bug_request;
            ui.bug_request.reset();
            ui.rerun_requested = true;
        }
        if (ui.back_to_config_requested) {
            ui.back_to_config_requested = false;
            ui.rerun_requested = true;
        }
        // The ViT: the block selector swaps the trace; the patch slider runs a fresh model.
        if (ui.vit_block_request) {
            if (vit && *ui.vit_block_request != ui.vit_block) ShowVitBlock(vit, *ui.vit_block_request, trace, ui);
            ui.vit_block_request.reset();
        }
        if (ui.vit_patch_request) {
            const std::size_t p = *ui.vit_patch_request;
            ui.vit_patch_request.reset();
            if (vit && trained_vit && p != vit->fresh_patch) {
                if (p == 0) {  // back to the checkpoint: its run is kept
                    EngineResult back;
                    back.vit = trained_vit;
                    back.trace = std::shared_ptr<const Trace>(trained_vit, &trained_vit->trace.blocks.back().attention);
                    ui.vit_loading = true;
                    AcceptResult(back, trace, vit, ui);
                } else {
                    StartVit(runner, ui, EngineRunner::fresh_vit_job(trained_vit, p));
                }
            }
        }
        if (WindowTitle(ui, vit.get()) != window_title) {
            window_title = WindowTitle(ui, vit.get());
            glfwSetWindowTitle(window, window_title.c_str());
        }
        if (ui.rerun_requested) {
            ui.rerun_requested = false;
            ui.loading_path.clear();
            ui.vit_loading = false;
            ui.config_errors = validate(ui.config_draft, memory_budget());
            if (ui.config_errors.empty()) {
                if (ui.bug != Bug::None) {
                    runner.start(EngineRunner::zoo_job(ui.config_draft, ui.bug));
                    ui.engine_busy = true;
                } else if (trace_bytes(ui.config_draft) > EngineRunner::kWorkerThresholdBytes || runner.busy()) {
                    runner.start(ui.config_draft);  // also supersedes a file still being read
                    ui.engine_busy = true;
                } else {
                    AcceptResult(EngineRunner::run_now(ui.config_draft), trace, vit, ui);
                }
            }
        }
        const Trace& shown = trace ? *trace : empty_trace;

        if (bench) bench->before_frame(shown, ui);
        ImGui_ImplOpenGL3_NewFrame();
        ImGui_ImplGlfw_NewFrame();
        if (shot) {
            io.DisplaySize = ImVec2(static_cast<float>(width), static_cast<float>(height));
            io.DisplayFramebufferScale = ImVec2(1.0f, 1.0f);
            io.MousePos = ImVec2(-FLT_MAX, -FLT_MAX);
            io.DeltaTime = 1.0f / 60.0f;
        }
        ImGui::NewFrame();
        backdrop.begin_frame();
        ui.animating = false;
        DrawFrame(shown, vit.get(), ui);
        backdrop.end_frame();
        ImGui::Render();
        DropCoveredWindows(ImGui::GetDrawData());  // e.g. Heads under Follow: llvmpipe would fill it in vain
        const ImVec4 clear = backdrop.arrange(ImGui::GetDrawData());  // software GL: the clear paints the panels
        if (SkippedWindowUncovered()) ui.animating = true;  // Heads skipped its grid, and Follow went away
        heatmaps.flush();
        pictures.flush();
        drawings.flush();

        int fb_w = width, fb_h = height;
        if (!shot) glfwGetFramebufferSize(window, &fb_w, &fb_h);
        glBindFramebuffer(GL_FRAMEBUFFER, shot ? shot_fbo : 0);
        glViewport(0, 0, fb_w, fb_h);
        glClearColor(clear.x, clear.y, clear.z, clear.w);
        glClear(GL_COLOR_BUFFER_BIT);
        ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
        if (keep_layout && io.WantSaveIniSettings) {
            SaveLayout(ini_path);
            io.WantSaveIniSettings = false;
        }

        if (ui.export_requested) {
            ui.export_requested = false;
            const std::string path = ui.export_dialog.target;  // confirmed in the Export dialog
            std::string error;
            if (heatmaps.export_png("inspector", path, 512, &error))
                ui.set_status(tr("wrote ") + std::filesystem::absolute(path).string());
            else
                ui.set_status(tr("export failed: ") + error);
        }
        if (bench) {
            const ImDrawData* dd = ImGui::GetDrawData();
            int commands = 0;
            for (int i = 0; i < dd->CmdListsCount; ++i) commands += dd->CmdLists[i]->CmdBuffer.Size;
            bench->before_finish(dd->TotalVtxCount, commands, static_cast<int>(backdrop.painted_by_clear()));
            glFinish();  // the frame's texture uploads and drawing are done
            if (!bench->after_frame(heatmaps.uploads())) {
                std::printf("%s\n", bench->result().c_str());
                break;
            }
        } else if (shot && ++frame >= shot_frames) {
            // Read before any swap; the offscreen target (or the back buffer) holds the frame.
            glBindFramebuffer(GL_READ_FRAMEBUFFER, shot_fbo);
            if (!shot_fbo) glReadBuffer(GL_BACK);
            const std::vector<std::uint8_t> pixels = gfx::read_pixels_top_down(width, height);
            std::string error;
            if (!gfx::write_png_atomic(options.screenshot_path, width, height, pixels, &error)) {
                std::fprintf(stderr, "attnscope: %s\n", error.c_str());
                exit_status = 2;
            }
            break;
        }
        heatmaps.collect();
        pictures.collect();
        drawings.collect();
        glBindFramebuffer(GL_FRAMEBUFFER, 0);
        glfwSwapBuffers(window);
        if (!shot) pacer.frame_done(ui);
    }

    // Shutdown in reverse.
    std::signal(SIGINT, SIG_DFL);
    std::signal(SIGTERM, SIG_DFL);
    if (!shot && !ui.settings_path.empty())
        SaveSettings(ui.settings_path, ui,
                     trace && ui.file_path.empty() && !ui.vit_on_screen ? trace->config : ui.config_draft);
    if (keep_layout) SaveLayout(ini_path);
    if (shot_fbo) glDeleteFramebuffers(1, &shot_fbo);
    if (shot_color) glDeleteTextures(1, &shot_color);
    ui.heatmaps = nullptr;
    heatmaps.shutdown();
    ui.pictures = nullptr;
    pictures.shutdown();
    ui.drawings = nullptr;
    drawings.shutdown();
    ImGui_ImplOpenGL3_Shutdown();
    ImGui_ImplGlfw_Shutdown();
    ImGui::DestroyContext();
    glfwDestroyWindow(window);
    glfwTerminate();
    return exit_status;
}

}  // namespace attnscope
