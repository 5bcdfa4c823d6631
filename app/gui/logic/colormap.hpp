// Colour ranges and colormaps, on the CPU: the LUT data the shader samples, and a CPU mirror of
// the shader's value -> [0, 1] mapping for legends, exports and tests.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace attnscope::ui {

enum class Colormap { Sequential = 0, Diverging = 1 };  // = the LUT texture's row
enum class ColormapChoice { Auto = 0, Sequential = 1, Diverging = 2 };
enum class RangeMode { PerSlice = 0, PerTensor = 1, Fixed = 2 };
enum class ScaleMode { Linear = 0, Log = 1 };

constexpr int kLutSize = 256;

// Sequential (viridis-like, dark -> bright) for non-negative data; diverging (blue - white - red)
// centred at 0 for signed data.
Colormap auto_colormap(float min, float max);
Colormap resolve_colormap(ColormapChoice choice, float min, float max);
const char* colormap_name(Colormap c);

// kLutSize RGBA8 entries.
std::vector<std::uint8_t> colormap_lut(Colormap c);
// One colour for t in [0, 1] (clamped), as the LUT holds it.
std::array<std::uint8_t, 4> colormap_color(Colormap c, float t);

struct ColorRange {
    float lo = 0.0f;
    float hi = 1.0f;
    Colormap colormap = Colormap::Sequential;
    ScaleMode scale = ScaleMode::Linear;
};

// The range to show: the slice's or the tensor's finite min/max, or the fixed one. A diverging
// map is made symmetric around 0 (white = 0). A zero-width range is widened so it draws.
ColorRange make_range(RangeMode mode, float slice_min, float slice_max, float tensor_min, float tensor_max,
                      float fixed_lo, float fixed_hi, Colormap colormap, ScaleMode scale);

// The log scale is a symmetric log, sign(x) * log10(1 + |x| / k) with k = kLogLinearFraction *
// max(|lo|, |hi|): it spreads the many tiny attention weights apart and also works for signed data.
constexpr float kLogLinearFraction = 1e-3f;

// value -> [0, 1] exactly as shaders/heatmap.frag does it (NaN stays NaN).
float normalize_value(float v, const ColorRange& range);

// Values at n evenly spaced legend positions t = 0 .. 1 (inverse of normalize_value).
std::vector<float> legend_values(const ColorRange& range, int n);
float denormalize(float t, const ColorRange& range);

// A short, readable number: "0.0625", "-1.3e-05", "768".
std::string format_value(double v);

// A colour bar's tick label, as short as the bar's span allows: two or three significant digits of
// the span ("0.169", "-0.59", "2304"), and "0" for a value that is 0 at that precision (7.45e-07 on
// a bar up to 0.67). Presentation mode's bar, read from the back of a room.
std::string format_tick(double v, double span);

}  // namespace attnscope::ui
