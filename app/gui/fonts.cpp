#include "fonts.hpp"

#include <imgui.h>

#include <sys/stat.h>

namespace attnscope {

namespace {

Fonts g_fonts;

bool exists(const char* path) {
    struct stat st;
    return stat(path, &st) == 0;
}

// Latin-1, Greek, punctuation (— … ′), arrows (→ ←), math (× √ ≈ ≠ Σ), shapes, ⚠, ✓ ✗.
const ImWchar kRanges[] = {0x0020, 0x00FF, 0x0391, 0x03C9, 0x2010, 0x205E, 0x2190, 0x21FF,
                           0x2200, 0x22FF, 0x25A0, 0x25FF, 0x2600, 0x26FF, 0x2700, 0x27BF, 0};

}  // namespace

void build_fonts(float scale) {
    ImGuiIO& io = ImGui::GetIO();
    io.Fonts->Clear();
    const char* sans = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";
    const char* mono = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf";
    ImFontConfig cfg;
    cfg.OversampleH = 2;
    cfg.OversampleV = 1;
    g_fonts = Fonts{};
    if (exists(sans) && exists(mono)) {
        g_fonts.body = io.Fonts->AddFontFromFileTTF(sans, kBaseFontSize * scale, &cfg, kRanges);
        g_fonts.mono = io.Fonts->AddFontFromFileTTF(mono, (kBaseFontSize - 1.0f) * scale, &cfg, kRanges);
        g_fonts.small = io.Fonts->AddFontFromFileTTF(sans, (kBaseFontSize - 3.0f) * scale, &cfg, kRanges);
        g_fonts.mono_small = io.Fonts->AddFontFromFileTTF(mono, (kBaseFontSize - 3.0f) * scale, &cfg, kRanges);
        g_fonts.dejavu = g_fonts.body && g_fonts.mono && g_fonts.small && g_fonts.mono_small;
    }
    if (!g_fonts.dejavu) {
        io.Fonts->Clear();
        ImFontConfig def;
        def.SizePixels = 13.0f * scale;
        g_fonts.body = io.Fonts->AddFontDefault(&def);
        g_fonts.mono = g_fonts.body;
        g_fonts.small = g_fonts.body;
        g_fonts.mono_small = g_fonts.body;
    }
    io.FontDefault = g_fonts.body;
    io.Fonts->Build();
}

const Fonts& fonts() { return g_fonts; }

}  // namespace attnscope
