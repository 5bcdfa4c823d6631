// Fonts: DejaVu Sans / Sans Mono from fonts-dejavu-core when present, ImGui's default otherwise.
#pragma once

struct ImFont;

namespace attnscope {

struct Fonts {
    ImFont* body = nullptr;   // DejaVu Sans
    ImFont* mono = nullptr;   // DejaVu Sans Mono (code, numbers)
    ImFont* small = nullptr;  // for dense labels (heads grid, axis ticks)
    ImFont* mono_small = nullptr;  // the code listing
    bool dejavu = false;      // false: ImGui's built-in font
};

// (Re)builds the font atlas at base size * scale. Call between frames; the caller re-creates
// the renderer backend's font texture afterwards.
void build_fonts(float scale);
const Fonts& fonts();

constexpr float kBaseFontSize = 16.0f;

}  // namespace attnscope
