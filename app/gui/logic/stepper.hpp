// Keyboard stepping and playback through the pipeline's steps (window-free state machine).
#pragma once

#include <cstddef>

namespace attnscope::ui {

enum class StepKey { Prev, Next, First, Last, TogglePlay };

struct Stepper {
    int count = 0;     // number of steps
    int selected = 0;  // always in [0, count) when count > 0
    bool playing = false;
    double interval = 1.2;  // seconds per step while playing
    double elapsed = 0.0;   // since the last automatic step

    void set_count(int n);  // keeps the selection in range; stops playing when empty
    // Returns true when the selection changed. Any manual move resets the play timer.
    bool select(int index);
    bool key(StepKey k);
    // Advances playback by dt seconds; returns true when the selection changed. Playback stops
    // on the last step.
    bool tick(double dt);
};

}  // namespace attnscope::ui
