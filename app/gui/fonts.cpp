#include "fonts.hpp"

#include <imgui.h>

#include <sys/stat.h>

#include <string>

#include "logic/i18n.hpp"

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

// Known CJK fonts (Debian paths) and the face of a .ttc that has Simplified Chinese.
struct CjkFont {
    const char* path;
    int face;
};
const CjkFont kCjkFonts[] = {
    {"/usr/share/fonts/truetype/wqy/wqy-microhei.ttc", 0},             // fonts-wqy-microhei
    {"/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc", 2},     // fonts-noto-cjk (face 2 = SC)
    {"/usr/share/fonts/truetype/wqy/wqy-zenhei.ttc", 0},               // fonts-wqy-zenhei
};

const CjkFont* find_cjk() {
    for (const CjkFont& f : kCjkFonts)
        if (exists(f.path)) return &f;
    return nullptr;
}

// Only the glyphs the UI shows (a few thousand at most, not all of CJK): a far smaller atlas.
// Kept alive until the atlas is built (ImGui reads the ranges then).
ImVector<ImWchar> g_cjk_ranges;

void build_cjk_ranges(bool chinese) {
    ImFontGlyphRangesBuilder b;
    b.AddText("\u4e2d\u6587\uff08\u7b80\u4f53\uff09");  // the Language menu's label, always
    if (chinese)
        for (const std::string& t : ui::chinese_texts()) b.AddText(t.c_str());  // labels, narratives, core's texts
    g_cjk_ranges.clear();
    b.BuildRanges(&g_cjk_ranges);
}

}  // namespace

const char* cjk_font_path() {
    const CjkFont* f = find_cjk();
    return f ? f->path : nullptr;
}

void build_fonts(float scale, bool chinese) {
    ImGuiIO& io = ImGui::GetIO();
    io.Fonts->Clear();
    const char* sans = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";
    const char* mono = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf";
    ImFontConfig cfg;
    cfg.OversampleH = 2;
    cfg.OversampleV = 1;
    g_fonts = Fonts{};
    const CjkFont* cjk = find_cjk();
    if (cjk) build_cjk_ranges(chinese);
    // Each font gets the CJK glyphs merged in at the same pixel size; in English only the body font,
    // for the Language menu's label (each merge reads and copies the 5 MB font file).
    auto merge_cjk = [&](float size, bool body) {
        if (!cjk || (!chinese && !body)) return;
        ImFontConfig m;
        m.MergeMode = true;
        m.FontNo = cjk->face;
        m.OversampleH = 1;
        m.OversampleV = 1;
        m.PixelSnapH = true;
        if (io.Fonts->AddFontFromFileTTF(cjk->path, size, &m, g_cjk_ranges.Data)) g_fonts.cjk = true;
    };
    if (exists(sans) && exists(mono)) {
        g_fonts.body = io.Fonts->AddFontFromFileTTF(sans, kBaseFontSize * scale, &cfg, kRanges);
        merge_cjk(kBaseFontSize * scale, true);
        g_fonts.mono = io.Fonts->AddFontFromFileTTF(mono, (kBaseFontSize - 1.0f) * scale, &cfg, kRanges);
        merge_cjk((kBaseFontSize - 1.0f) * scale, false);
        g_fonts.small = io.Fonts->AddFontFromFileTTF(sans, (kBaseFontSize - 3.0f) * scale, &cfg, kRanges);
        merge_cjk((kBaseFontSize - 3.0f) * scale, false);
        g_fonts.mono_small = io.Fonts->AddFontFromFileTTF(mono, (kBaseFontSize - 3.0f) * scale, &cfg, kRanges);
        merge_cjk((kBaseFontSize - 3.0f) * scale, false);
        g_fonts.dejavu = g_fonts.body && g_fonts.mono && g_fonts.small && g_fonts.mono_small;
    }
    if (!g_fonts.dejavu) {
        io.Fonts->Clear();
        ImFontConfig def;
        def.SizePixels = 13.0f * scale;
        g_fonts.body = io.Fonts->AddFontDefault(&def);
        merge_cjk(13.0f * scale, true);
        g_fonts.mono = g_fonts.body;
        g_fonts.small = g_fonts.body;
        g_fonts.mono_small = g_fonts.body;
    }
    io.FontDefault = g_fonts.body;
    io.Fonts->Build();
}

const Fonts& fonts() { return g_fonts; }

}  // namespace attnscope
