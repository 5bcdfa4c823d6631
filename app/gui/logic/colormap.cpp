#include "colormap.hpp"
#include "i18n.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace attnscope::ui {

namespace {

struct Stop {
    float t;
    std::uint8_t r, g, b;
};

// Control points of a perceptually ordered dark-purple -> teal -> yellow ramp (viridis' key colours).
const Stop kSequential[] = {
    {0.000f, 0x44, 0x01, 0x54}, {0.125f, 0x48, 0x28, 0x78}, {0.250f, 0x3E, 0x4A, 0x89},
    {0.375f, 0x31, 0x68, 0x8E}, {0.500f, 0x26, 0x82, 0x8E}, {0.625f, 0x1F, 0x9E, 0x89},
    {0.750f, 0x35, 0xB7, 0x79}, {0.875f, 0x6D, 0xCD, 0x59}, {1.000f, 0xFD, 0xE7, 0x25},
};
// Blue - white - red, white exactly at t = 0.5 (value 0 of a symmetric range).
const Stop kDiverging[] = {
    {0.00f, 0x05, 0x30, 0x61}, {0.15f, 0x21, 0x66, 0xAC}, {0.30f, 0x43, 0x93, 0xC3},
    {0.42f, 0x92, 0xC5, 0xDE}, {0.50f, 0xF7, 0xF7, 0xF7}, {0.58f, 0xF4, 0xA5, 0x82},
    {0.70f, 0xD6, 0x60, 0x4D}, {0.85f, 0xB2, 0x18, 0x2B}, {1.00f, 0x67, 0x00, 0x1F},
};

template <std::size_t N>
std::array<std::uint8_t, 4> sample(const Stop (&stops)[N], float t) {
    t = std::isnan(t) ? 0.0f : std::clamp(t, 0.0f, 1.0f);
    std::size_t i = 1;
    while (i + 1 < N && stops[i].t < t) ++i;
    const Stop& a = stops[i - 1];
    const Stop& b = stops[i];
    const float u = b.t > a.t ? std::clamp((t - a.t) / (b.t - a.t), 0.0f, 1.0f) : 0.0f;
    auto mix = [u](std::uint8_t x, std::uint8_t y) {
        return static_cast<std::uint8_t>(std::lround(x + (static_cast<float>(y) - x) * u));
    };
    return {mix(a.r, b.r), mix(a.g, b.g), mix(a.b, b.b), 255};
}

float symlog(float x, float k) { return std::copysign(std::log10(1.0f + std::fabs(x) / k), x); }

float log_k(const ColorRange& r) {
    const float m = std::max(std::fabs(r.lo), std::fabs(r.hi));
    return std::max(m * kLogLinearFraction, 1e-30f);
}

}  // namespace

Colormap auto_colormap(float min, float /*max*/) { return min < 0.0f ? Colormap::Diverging : Colormap::Sequential; }

Colormap resolve_colormap(ColormapChoice choice, float min, float max) {
    switch (choice) {
        case ColormapChoice::Sequential: return Colormap::Sequential;
        case ColormapChoice::Diverging: return Colormap::Diverging;
        case ColormapChoice::Auto: break;
    }
    return auto_colormap(min, max);
}

const char* colormap_name(Colormap c) {
    return c == Colormap::Diverging ? _("diverging (blue < 0 < red)") : _("sequential (dark = low, yellow = high)");
}

std::array<std::uint8_t, 4> colormap_color(Colormap c, float t) {
    return c == Colormap::Diverging ? sample(kDiverging, t) : sample(kSequential, t);
}

std::vector<std::uint8_t> colormap_lut(Colormap c) {
    std::vector<std::uint8_t> lut(kLutSize * 4);
    for (int i = 0; i < kLutSize; ++i) {
        const auto rgba = colormap_color(c, static_cast<float>(i) / (kLutSize - 1));
        std::copy(rgba.begin(), rgba.end(), lut.begin() + i * 4);
    }
    return lut;
}

ColorRange make_range(RangeMode mode, float slice_min, float slice_max, float tensor_min, float tensor_max,
                      float fixed_lo, float fixed_hi, Colormap colormap, ScaleMode scale) {
    ColorRange r;
    r.colormap = colormap;
    r.scale = scale;
    switch (mode) {
        case RangeMode::PerSlice: r.lo = slice_min, r.hi = slice_max; break;
        case RangeMode::PerTensor: r.lo = tensor_min, r.hi = tensor_max; break;
        case RangeMode::Fixed: r.lo = fixed_lo, r.hi = fixed_hi; break;
    }
    if (!std::isfinite(r.lo)) r.lo = 0.0f;
    if (!std::isfinite(r.hi)) r.hi = 0.0f;
    if (r.lo > r.hi) std::swap(r.lo, r.hi);
    if (colormap == Colormap::Diverging) {
        const float m = std::max(std::fabs(r.lo), std::fabs(r.hi));
        r.lo = -m;
        r.hi = m;
    }
    if (!(r.hi > r.lo)) {  // a constant slice still needs a range that draws
        if (colormap == Colormap::Diverging) {
            const float m = r.lo != 0.0f ? std::fabs(r.lo) : 1.0f;
            r.lo = -m;
            r.hi = m;
        } else if (r.lo > 0.0f) {
            r.lo = 0.0f;  // a constant positive slice shows at the top of the map
        } else if (r.lo < 0.0f) {
            r.hi = 0.0f;
        } else {
            r.hi = 1.0f;  // all zeros show at the bottom
        }
    }
    return r;
}

float normalize_value(float v, const ColorRange& r) {
    if (std::isnan(v)) return v;
    if (r.scale == ScaleMode::Log) {
        const float k = log_k(r);
        const float a = symlog(r.lo, k), b = symlog(r.hi, k);
        return std::clamp((symlog(v, k) - a) / (b - a), 0.0f, 1.0f);
    }
    return std::clamp((v - r.lo) / (r.hi - r.lo), 0.0f, 1.0f);
}

float denormalize(float t, const ColorRange& r) {
    if (r.scale == ScaleMode::Log) {
        const float k = log_k(r);
        const float a = symlog(r.lo, k), b = symlog(r.hi, k);
        const float s = a + (b - a) * t;
        return std::copysign((std::pow(10.0f, std::fabs(s)) - 1.0f) * k, s);
    }
    return r.lo + (r.hi - r.lo) * t;
}

std::vector<float> legend_values(const ColorRange& range, int n) {
    std::vector<float> out;
    for (int i = 0; i < n; ++i) out.push_back(denormalize(n > 1 ? static_cast<float>(i) / (n - 1) : 0.0f, range));
    return out;
}

std::string format_tick(double v, double span) {
    if (!std::isfinite(v) || !(span > 0.0) || !std::isfinite(span)) return format_value(v);
    if (std::fabs(v) < span * 1e-3) return "0";
    const int decimals = 2 - static_cast<int>(std::floor(std::log10(span)));
    char buf[32];
    if (std::fabs(v) >= 1e5 || decimals > 6)
        std::snprintf(buf, sizeof buf, "%.2g", v);
    else
        std::snprintf(buf, sizeof buf, "%.*f", std::max(decimals, 0), v);
    return buf;
}

std::string format_value(double v) {
    char buf[32];
    if (std::isnan(v)) return "NaN";
    if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
    const double a = std::fabs(v);
    if (v == 0.0)
        std::snprintf(buf, sizeof buf, "0");
    else if (a >= 1e5 || a < 1e-3)
        std::snprintf(buf, sizeof buf, "%.2e", v);
    else
        std::snprintf(buf, sizeof buf, "%.4g", v);
    return buf;
}

}  // namespace attnscope::ui
