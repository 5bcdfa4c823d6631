#include "settings.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <nlohmann/json.hpp>

namespace attnscope::ui {

using nlohmann::json;

std::string settings_to_json(const Settings& s) {
    json j;
    j["version"] = 1;
    j["config"] = {{"batch", s.config.batch},       {"tokens", s.config.tokens},
                   {"dim", s.config.dim},           {"heads", s.config.heads},
                   {"qkv_bias", s.config.qkv_bias}, {"seed", s.config.seed},
                   {"training", s.config.training}, {"attn_drop", s.config.attn_drop},
                   {"proj_drop", s.config.proj_drop},
                   {"reference", s.config.reference == Reference::mha ? "mha" : "vit"}};
    j["step"] = s.step;
    j["ui_scale"] = s.ui_scale;
    j["panels"] = {{"pipeline", s.panels.pipeline}, {"shape", s.panels.shape},
                   {"inspector", s.panels.inspector}, {"heads", s.panels.heads},
                   {"row_sums", s.panels.row_sums}, {"config", s.panels.config}};
    j["range_mode"] = static_cast<int>(s.range_mode);
    j["scale_mode"] = static_cast<int>(s.scale_mode);
    j["colormap"] = static_cast<int>(s.colormap);
    j["heads_shared_scale"] = s.heads_shared_scale;
    j["play_interval"] = s.play_interval;
    j["recent_files"] = s.recent_files;
    j["browser_folder"] = s.browser_folder;
    j["language"] = s.language;
    return j.dump(2) + "\n";
}

namespace {

// A JSON number as T, clamped to T's range: nlohmann's get<T>() casts a double like 1e86 to
// size_t or float unchecked (undefined behaviour, found by tests/fuzz/fuzz_settings.cpp).
template <typename T>
T clamped_number(double d) {
    constexpr bool integral = std::is_integral_v<T>;
    const double hi = integral ? std::nextafter(std::ldexp(1.0, std::numeric_limits<T>::digits), 0.0)
                               : static_cast<double>(std::numeric_limits<T>::max());
    const double lo = integral && !std::is_signed_v<T> ? 0.0 : -hi;
    return static_cast<T>(std::clamp(d, lo, hi));
}

template <typename T>
void read(const json& j, const char* key, T& out) {
    if (!j.is_object() || !j.contains(key)) return;
    const json& value = j.at(key);
    if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
        if (value.is_number_float()) {
            out = clamped_number<T>(value.get<double>());
            return;
        }
    }
    out = value.get<T>();  // type errors throw, caught below
}

}  // namespace

std::optional<Settings> settings_from_json(const std::string& text, std::string* error) {
    try {
        const json j = json::parse(text);
        if (!j.is_object()) throw std::runtime_error("the top level is not a JSON object");
        Settings s;
        if (j.contains("config")) {
            const json& c = j.at("config");
            if (!c.is_object()) throw std::runtime_error("\"config\" is not an object");
            read(c, "batch", s.config.batch);
            read(c, "tokens", s.config.tokens);
            read(c, "dim", s.config.dim);
            read(c, "heads", s.config.heads);
            read(c, "qkv_bias", s.config.qkv_bias);
            read(c, "seed", s.config.seed);
            read(c, "training", s.config.training);
            read(c, "attn_drop", s.config.attn_drop);
            read(c, "proj_drop", s.config.proj_drop);
            std::string reference = "vit";
            read(c, "reference", reference);
            s.config.reference = reference == "mha" ? Reference::mha : Reference::vit;
            s.has_config = true;
        }
        read(j, "step", s.step);
        read(j, "ui_scale", s.ui_scale);
        s.ui_scale = std::clamp(s.ui_scale, 0.5f, 3.0f);
        if (j.contains("panels")) {
            const json& p = j.at("panels");
            read(p, "pipeline", s.panels.pipeline);
            read(p, "shape", s.panels.shape);
            read(p, "inspector", s.panels.inspector);
            read(p, "heads", s.panels.heads);
            read(p, "row_sums", s.panels.row_sums);
            read(p, "config", s.panels.config);
        }
        int range = static_cast<int>(s.range_mode), scale = static_cast<int>(s.scale_mode),
            cmap = static_cast<int>(s.colormap);
        read(j, "range_mode", range);
        read(j, "scale_mode", scale);
        read(j, "colormap", cmap);
        s.range_mode = static_cast<RangeMode>(std::clamp(range, 0, 2));
        s.scale_mode = static_cast<ScaleMode>(std::clamp(scale, 0, 1));
        s.colormap = static_cast<ColormapChoice>(std::clamp(cmap, 0, 2));
        read(j, "heads_shared_scale", s.heads_shared_scale);
        read(j, "play_interval", s.play_interval);
        s.play_interval = std::clamp(s.play_interval, 0.1, 10.0);
        read(j, "recent_files", s.recent_files);
        if (s.recent_files.size() > 10) s.recent_files.resize(10);
        read(j, "browser_folder", s.browser_folder);
        read(j, "language", s.language);
        if (s.language != "zh") s.language = "en";
        return s;
    } catch (const std::exception& e) {
        if (error) *error = e.what();
        return std::nullopt;
    }
}

std::string settings_dir(const char* xdg_config_home, const char* home) {
    if (xdg_config_home && *xdg_config_home) return std::string(xdg_config_home) + "/attnscope";
    if (home && *home) return std::string(home) + "/.config/attnscope";
    return "";
}

}  // namespace attnscope::ui
