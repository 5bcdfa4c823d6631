#include "settings.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <nlohmann/json.hpp>

namespace attnscope::ui {

using nlohmann::json;

namespace {

// Every field of the file, once, with its key: f(key, field) for the config's numbers and flags,
// the panels' visibility and the view options (the enums, the reference and the clamps are
// written and read beside them).
template <typename Config, typename F>
void config_fields(Config& c, F&& f) {
    f("batch", c.batch);
    f("tokens", c.tokens);
    f("dim", c.dim);
    f("heads", c.heads);
    f("qkv_bias", c.qkv_bias);
    f("seed", c.seed);
    f("training", c.training);
    f("attn_drop", c.attn_drop);
    f("proj_drop", c.proj_drop);
}

template <typename Panels, typename F>
void panel_fields(Panels& p, F&& f) {
    f("pipeline", p.pipeline);
    f("shape", p.shape);
    f("inspector", p.inspector);
    f("heads", p.heads);
    f("row_sums", p.row_sums);
    f("config", p.config);
}

template <typename S, typename F>
void view_fields(S& s, F&& f) {
    f("step", s.step);
    f("ui_scale", s.ui_scale);
    f("heads_shared_scale", s.heads_shared_scale);
    f("play_interval", s.play_interval);
    f("recent_files", s.recent_files);
    f("browser_folder", s.browser_folder);
    f("language", s.language);
}

}  // namespace

std::string settings_to_json(const Settings& s) {
    json j;
    j["version"] = 1;
    auto into = [](json& object) { return [&object](const char* key, const auto& value) { object[key] = value; }; };
    json config = json::object();
    config_fields(s.config, into(config));
    config["reference"] = s.config.reference == Reference::mha ? "mha" : "vit";
    j["config"] = config;
    json panels = json::object();
    panel_fields(s.panels, into(panels));
    j["panels"] = panels;
    view_fields(s, into(j));
    j["range_mode"] = static_cast<int>(s.range_mode);
    j["scale_mode"] = static_cast<int>(s.scale_mode);
    j["colormap"] = static_cast<int>(s.colormap);
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
        auto from = [](const json& object) {
            return [&object](const char* key, auto& field) { read(object, key, field); };
        };
        if (j.contains("config")) {
            const json& c = j.at("config");
            if (!c.is_object()) throw std::runtime_error("\"config\" is not an object");
            config_fields(s.config, from(c));
            std::string reference = "vit";
            read(c, "reference", reference);
            s.config.reference = reference == "mha" ? Reference::mha : Reference::vit;
            s.has_config = true;
        }
        if (j.contains("panels")) panel_fields(s.panels, from(j.at("panels")));
        view_fields(s, from(j));
        s.ui_scale = std::clamp(s.ui_scale, 0.5f, 3.0f);
        s.play_interval = std::clamp(s.play_interval, 0.1, 10.0);
        if (s.recent_files.size() > 10) s.recent_files.resize(10);
        int range = static_cast<int>(s.range_mode), scale = static_cast<int>(s.scale_mode),
            cmap = static_cast<int>(s.colormap);
        read(j, "range_mode", range);
        read(j, "scale_mode", scale);
        read(j, "colormap", cmap);
        s.range_mode = static_cast<RangeMode>(std::clamp(range, 0, 2));
        s.scale_mode = static_cast<ScaleMode>(std::clamp(scale, 0, 1));
        s.colormap = static_cast<ColormapChoice>(std::clamp(cmap, 0, 2));
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
