// The small settings file ($XDG_CONFIG_HOME/attnscope/settings.json): last config and view options.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "colormap.hpp"
#include "config.hpp"

namespace attnscope::ui {

struct PanelVisibility {
    bool pipeline = true, shape = true, inspector = true, heads = true, row_sums = true, config = true;
};

struct Settings {
    AttentionConfig config;
    bool has_config = false;  // false: the file had no (valid) config; keep the demo
    std::string step;         // last selected step ("" = the default)
    float ui_scale = 1.0f;
    PanelVisibility panels;
    RangeMode range_mode = RangeMode::PerSlice;
    ScaleMode scale_mode = ScaleMode::Linear;
    ColormapChoice colormap = ColormapChoice::Auto;
    bool heads_shared_scale = true;
    double play_interval = 1.2;
    std::vector<std::string> recent_files;  // File > Open Recent: most recent first, at most 10
    std::string browser_folder;             // the folder File > Open starts in ("" = working folder)
    std::string language = "en";            // "en" or "zh" (View > Language)
};

std::string settings_to_json(const Settings& s);

// nullopt and a one-line *error when the text is not a settings file; unknown keys are ignored,
// out-of-range values are clamped.
std::optional<Settings> settings_from_json(const std::string& text, std::string* error);

// The folder: $XDG_CONFIG_HOME/attnscope, else $HOME/.config/attnscope; "" when neither is set.
std::string settings_dir(const char* xdg_config_home, const char* home);

}  // namespace attnscope::ui
