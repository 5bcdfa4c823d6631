#include "stepper.hpp"

#include <algorithm>

namespace attnscope::ui {

void Stepper::set_count(int n) {
    count = std::max(n, 0);
    if (count == 0) {
        selected = 0;
        playing = false;
    } else {
        selected = std::clamp(selected, 0, count - 1);
    }
}

bool Stepper::select(int index) {
    if (count == 0) return false;
    index = std::clamp(index, 0, count - 1);
    elapsed = 0.0;
    if (index == selected) return false;
    selected = index;
    return true;
}

bool Stepper::key(StepKey k) {
    if (count == 0) return false;
    switch (k) {
        case StepKey::Prev: return select(selected - 1);
        case StepKey::Next: return select(selected + 1);
        case StepKey::First: return select(0);
        case StepKey::Last: return select(count - 1);
        case StepKey::TogglePlay:
            if (playing) {
                playing = false;
                return false;
            }
            playing = true;
            elapsed = 0.0;
            if (selected == count - 1) return select(0);  // replay from the start
            return false;
    }
    return false;
}

bool Stepper::tick(double dt) {
    if (!playing || count == 0) return false;
    elapsed += dt;
    if (elapsed < interval) return false;
    elapsed = 0.0;
    if (selected + 1 >= count) {
        playing = false;
        return false;
    }
    ++selected;
    if (selected == count - 1) playing = false;
    return true;
}

}  // namespace attnscope::ui
