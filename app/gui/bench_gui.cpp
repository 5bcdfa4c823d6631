#include "bench_gui.hpp"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "beyond.hpp"
#include "logic/flash_map.hpp"
#include "logic/slice.hpp"

namespace attnscope {

namespace {

constexpr int kSettleFrames = 5;

double clock_ms(clockid_t id) {
    timespec t{};
    clock_gettime(id, &t);
    return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

// Milliseconds since this process started (field 22 of /proc/self/stat, in clock ticks since boot).
double ms_since_process_start() {
    std::ifstream stat("/proc/self/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    std::istringstream rest(text.substr(text.rfind(')') + 2));  // after "pid (comm) "
    std::string field;
    for (int i = 3; i <= 22 && rest >> field; ++i) {
    }
    const double start_ms = std::stod(field) * 1e3 / static_cast<double>(sysconf(_SC_CLK_TCK));
    return clock_ms(CLOCK_BOOTTIME) - start_ms;
}

const char* env_or(const char* name, const char* fallback) {
    const char* v = std::getenv(name);
    return v ? v : fallback;
}

double median(std::vector<double> v) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

}  // namespace

GuiBench::GuiBench() {
    // ATTNSCOPE_BENCH_GUI_FRAMES=N (N switches of each kind and N idle frames) or S,I (for profilers)
    if (const char* n = std::getenv("ATTNSCOPE_BENCH_GUI_FRAMES"); n && std::atoi(n) > 0) {
        switches_ = idle_frames_ = std::atoi(n);
        if (const char* comma = std::strchr(n, ','); comma && std::atoi(comma + 1) > 2) idle_frames_ = std::atoi(comma + 1);
    }
}

void GuiBench::before_frame(const Trace& trace, UiState& ui) {
    ui.frame.animate = false;
    have_trace_ = !trace.steps.empty();
    flash_ = trace.beyond && trace.beyond->flash;
    if (last_phase_ == Phase::MapPans || last_phase_ == Phase::MapHeads)  // the previous frame's panel time
        (last_phase_ == Phase::MapPans ? map_pan_panel_ms_ : map_head_panel_ms_).push_back(ui.flash_map.frame_ms);
    last_phase_ = phase_;
    if (phase_ == Phase::MapPans) {  // an exact view of about 1000 x 1000 weights moved by 64 keys a frame
        const float N = static_cast<float>(trace.config.tokens);
        ui.flash_map.zoom = std::max(1.0f, N / static_cast<float>(ui::kExactMaxSide - 24));
        ui.flash_map.pan_y = N / 2;
        ui.flash_map.pan_x = static_cast<float>(64 * frame_);
    }
    if (phase_ == Phase::MapHeads) {  // the next head at overview zoom: its whole overview
        ui.flash_map.zoom = 1.0f;
        ui.flash_map.head = (ui.flash_map.head + 1) % trace.config.heads;
    }
    if (phase_ == Phase::Steps && !trace.steps.empty())
        ui.selection.stepper.select((ui.selection.stepper.selected + 1) % static_cast<int>(trace.steps.size()));
    if (phase_ == Phase::Heads) {
        const auto at = std::find_if(trace.steps.begin(), trace.steps.end(), [](const Step& s) { return s.name == "attn"; });
        if (at != trace.steps.end()) {
            const Step* attn = &*at;
            ui.selection.stepper.select(static_cast<int>(at - trace.steps.begin()));
            const Shape shape = attn->shape();
            const std::size_t heads = shape.size() == 4 ? shape[1] : 1;
            const std::size_t head = static_cast<std::size_t>(frame_ + 1) % heads;
            InspectorView& view = ui.inspector.views[attn->name];
            view.spec = ui::head_slice(attn->axes(), shape, view.spec, head);
            view.has_spec = true;
            ui.heads.focused = static_cast<int>(head);
        }
    }
    wall_start_ = clock_ms(CLOCK_MONOTONIC);
    cpu_start_ = clock_ms(CLOCK_THREAD_CPUTIME_ID);
    process_cpu_start_ = clock_ms(CLOCK_PROCESS_CPUTIME_ID);
    wall_issued_ = wall_start_;
    cpu_issued_ = cpu_start_;
}

void GuiBench::before_finish(int vertices, int draw_commands, int backgrounds_by_clear) {
    wall_issued_ = clock_ms(CLOCK_MONOTONIC);
    cpu_issued_ = clock_ms(CLOCK_THREAD_CPUTIME_ID);
    vertices_ = vertices;
    draw_commands_ = draw_commands;
    backgrounds_by_clear_ = backgrounds_by_clear;
}

bool GuiBench::after_frame(std::size_t uploads) {
    const double wall_end = clock_ms(CLOCK_MONOTONIC);
    auto record = [&](Samples& s) {
        s.wall_ms.push_back(wall_end - wall_start_);
        s.cpu_ms.push_back(cpu_issued_ - cpu_start_);
        s.finish_ms.push_back(wall_end - wall_issued_);
        s.thread_cpu_ms.push_back(clock_ms(CLOCK_THREAD_CPUTIME_ID) - cpu_start_);
        s.process_cpu_ms.push_back(clock_ms(CLOCK_PROCESS_CPUTIME_ID) - process_cpu_start_);
    };
    switch (phase_) {
    case Phase::First:
        first_frame_ms_ = ms_since_process_start();
        first_frame_cpu_ms_ = clock_ms(CLOCK_PROCESS_CPUTIME_ID);  // every thread, since the process started
        phase_ = Phase::Settle;
        frame_ = 0;
        return true;
    case Phase::Settle:
        if (have_trace_ && ++frame_ >= kSettleFrames) {  // a large config's trace comes from the worker
            phase_ = Phase::Steps;
            frame_ = 0;
            uploads_before_ = uploads;
        }
        return true;
    case Phase::Steps:
    case Phase::Heads: {
        record(phase_ == Phase::Steps ? steps_ : heads_);
        if (++frame_ >= switches_) {
            phase_ = phase_ == Phase::Steps ? Phase::Heads : Phase::Idle;
            frame_ = 0;
        }
        if (phase_ == Phase::Idle) switch_uploads_ = uploads - uploads_before_;
        return true;
    }
    case Phase::Idle:
        if (frame_ > 1) {  // the first frames after the last switch may still settle
            record(idle_);
            idle_vertices_ = vertices_;
            idle_draw_commands_ = draw_commands_;
            idle_backgrounds_by_clear_ = backgrounds_by_clear_;
        }
        if (++frame_ >= idle_frames_) phase_ = flash_ ? Phase::MapPans : Phase::Done;
        if (phase_ == Phase::MapPans) frame_ = 0;
        return phase_ != Phase::Done;
    case Phase::MapPans:
    case Phase::MapHeads:
        (phase_ == Phase::MapPans ? map_pan_ms_ : map_head_ms_).push_back(wall_end - wall_start_);
        if (++frame_ >= switches_) {
            phase_ = phase_ == Phase::MapPans ? Phase::MapHeads : Phase::Done;
            frame_ = 0;
        }
        return phase_ != Phase::Done;
    case Phase::Done:
        return false;
    }
    return false;
}

std::string GuiBench::result() const {
    auto joined = [&](std::vector<double> Samples::*field) {
        std::vector<double> v = steps_.*field;
        v.insert(v.end(), (heads_.*field).begin(), (heads_.*field).end());
        return v;
    };
    const std::vector<double> switches = joined(&Samples::wall_ms);
    nlohmann::json j{{"first_frame_ms", first_frame_ms_},
                     {"first_frame_process_cpu_ms", first_frame_cpu_ms_},
                     {"switch_ms", median(switches)},
                     {"step_switch_ms", median(steps_.wall_ms)},
                     {"head_switch_ms", median(heads_.wall_ms)},
                     {"switch_max_ms", switches.empty() ? 0.0 : *std::max_element(switches.begin(), switches.end())},
                     {"switch_cpu_ms", median(joined(&Samples::cpu_ms))},
                     {"switch_finish_ms", median(joined(&Samples::finish_ms))},
                     {"switch_process_cpu_ms", median(joined(&Samples::process_cpu_ms))},
                     {"switch_uploads", switch_uploads_},
                     {"idle_frame", "drawn"},
                     {"idle_frame_ms", median(idle_.wall_ms)},
                     {"idle_frame_cpu_ms", median(idle_.thread_cpu_ms)},
                     {"idle_frame_issue_cpu_ms", median(idle_.cpu_ms)},
                     {"idle_frame_finish_ms", median(idle_.finish_ms)},
                     {"idle_frame_process_cpu_ms", median(idle_.process_cpu_ms)},
                     {"idle_frame_vertices", idle_vertices_},
                     {"idle_frame_draw_commands", idle_draw_commands_},
                     {"idle_frame_backgrounds_by_clear", idle_backgrounds_by_clear_},
                     {"omp_wait_policy", env_or("OMP_WAIT_POLICY", "unset")},
                     {"openblas_thread_timeout", env_or("OPENBLAS_THREAD_TIMEOUT", "unset")}};
    if (!map_pan_ms_.empty()) {  // flash: the Attention map panel (every tile computed within the frame)
        j["map_pan_frame_ms"] = median(map_pan_ms_);
        j["map_pan_frame_max_ms"] = *std::max_element(map_pan_ms_.begin(), map_pan_ms_.end());
        j["map_head_switch_frame_ms"] = median(map_head_ms_);
        j["map_pan_panel_ms"] = median(map_pan_panel_ms_);
        j["map_pan_panel_max_ms"] =
            map_pan_panel_ms_.empty() ? 0.0 : *std::max_element(map_pan_panel_ms_.begin(), map_pan_panel_ms_.end());
        j["map_head_switch_panel_ms"] = median(map_head_panel_ms_);
    }
    return j.dump();
}

}  // namespace attnscope
