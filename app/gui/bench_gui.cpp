#include "bench_gui.hpp"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "beyond.hpp"
#include "logic/flash_map.hpp"
#include "logic/slice.hpp"

namespace attnscope {

namespace {

constexpr int kSettleFrames = 5, kSwitches = 16, kIdleFrames = 30;

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

double median(std::vector<double> v) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

}  // namespace

GuiBench::GuiBench() = default;

void GuiBench::before_frame(const Trace& trace, UiState& ui) {
    ui.animate = false;
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
        ui.stepper.select((ui.stepper.selected + 1) % static_cast<int>(trace.steps.size()));
    if (phase_ == Phase::Heads) {
        if (const Step* attn = trace.find("attn")) {
            ui.stepper.select(static_cast<int>(attn - trace.steps.data()));
            const Shape shape = attn->shape();
            const std::size_t heads = shape.size() == 4 ? shape[1] : 1;
            const std::size_t head = static_cast<std::size_t>(frame_ + 1) % heads;
            InspectorView& view = ui.views[attn->name];
            view.spec = ui::head_slice(attn->tensor().axes, shape, view.spec, head);
            view.has_spec = true;
            ui.focused_head = static_cast<int>(head);
        }
    }
    wall_start_ = clock_ms(CLOCK_MONOTONIC);
    cpu_start_ = clock_ms(CLOCK_THREAD_CPUTIME_ID);
    process_cpu_start_ = clock_ms(CLOCK_PROCESS_CPUTIME_ID);
}

bool GuiBench::after_frame(std::size_t uploads) {
    const double wall = clock_ms(CLOCK_MONOTONIC) - wall_start_;
    switch (phase_) {
    case Phase::First:
        first_frame_ms_ = ms_since_process_start();
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
        (phase_ == Phase::Steps ? step_ms_ : head_ms_).push_back(wall);
        if (++frame_ >= kSwitches) {
            phase_ = phase_ == Phase::Steps ? Phase::Heads : Phase::Idle;
            frame_ = 0;
        }
        if (phase_ == Phase::Idle) switch_uploads_ = uploads - uploads_before_;
        return true;
    }
    case Phase::Idle:
        if (frame_ > 1) {  // the first frames after the last switch may still settle
            idle_ms_.push_back(wall);
            idle_cpu_ms_.push_back(clock_ms(CLOCK_THREAD_CPUTIME_ID) - cpu_start_);
            idle_process_cpu_ms_.push_back(clock_ms(CLOCK_PROCESS_CPUTIME_ID) - process_cpu_start_);
        }
        if (++frame_ >= kIdleFrames) phase_ = flash_ ? Phase::MapPans : Phase::Done;
        if (phase_ == Phase::MapPans) frame_ = 0;
        return phase_ != Phase::Done;
    case Phase::MapPans:
    case Phase::MapHeads:
        (phase_ == Phase::MapPans ? map_pan_ms_ : map_head_ms_).push_back(wall);
        if (++frame_ >= kSwitches) {
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
    std::vector<double> switches = step_ms_;
    switches.insert(switches.end(), head_ms_.begin(), head_ms_.end());
    nlohmann::json j{{"first_frame_ms", first_frame_ms_},
                          {"switch_ms", median(switches)},
                          {"step_switch_ms", median(step_ms_)},
                          {"head_switch_ms", median(head_ms_)},
                          {"switch_max_ms", switches.empty() ? 0.0 : *std::max_element(switches.begin(), switches.end())},
                          {"switch_uploads", switch_uploads_},
                          {"idle_frame_ms", median(idle_ms_)},
                          {"idle_frame_cpu_ms", median(idle_cpu_ms_)},
                          {"idle_frame_process_cpu_ms", median(idle_process_cpu_ms_)}};
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
