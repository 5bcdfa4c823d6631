// Fonts: DejaVu Sans / Sans Mono from fonts-dejavu-core when present, ImGui's default otherwise;
// Chinese glyphs merged in from fonts-wqy-microhei (or fonts-noto-cjk) when one is installed.
#pragma once

struct ImFont;

namespace attnscope {

struct Fonts {
    ImFont* body = nullptr;   // DejaVu Sans
    ImFont* mono = nullptr;   // DejaVu Sans Mono (code, numbers)
    ImFont* small = nullptr;  // for dense labels (heads grid, axis ticks)
    ImFont* mono_small = nullptr;  // the code listing
    bool dejavu = false;      // false: ImGui's built-in font
    bool cjk = false;         // Chinese glyphs are merged in (a CJK font was found)
};

// (Re)builds the font atlas at base size * scale. Call between frames; the caller re-creates
// the renderer backend's font texture afterwards.
// chinese: merge every glyph of the Chinese texts (else only those of the Language menu's label).
void build_fonts(float scale, bool chinese = false);
// The CJK font file (nullptr when none of the known packages is installed).
const char* cjk_font_path();
constexpr const char* kCjkPackage = "fonts-wqy-microhei";
const Fonts& fonts();

constexpr float kBaseFontSize = 16.0f;

}  // namespace attnscope
