// GUI smoke test checker: every PNG given on the command line must load, be non-blank (many
// distinct colours, not one flat fill) and differ from every other one.
#include <doctest/doctest.h>
#include <stb_image.h>

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace {

// The smoke test writes these (tests/gui/CMakeLists.txt); ATTNSCOPE_SHOT_DIR is set there.
const std::vector<std::string> g_paths = {ATTNSCOPE_SHOT_DIR "/qkv_heads.png",
                                          ATTNSCOPE_SHOT_DIR "/attn.png",
                                          ATTNSCOPE_SHOT_DIR "/merged.png",
                                          ATTNSCOPE_SHOT_DIR "/file_bug_softmax.png",
                                          ATTNSCOPE_SHOT_DIR "/vit_square.png",
                                          ATTNSCOPE_SHOT_DIR "/vit_positions.png",
                                          ATTNSCOPE_SHOT_DIR "/torch_save_acts.png",
                                          ATTNSCOPE_SHOT_DIR "/vit_torchvision.png",
                                          ATTNSCOPE_SHOT_DIR "/beyond_flash.png",
                                          ATTNSCOPE_SHOT_DIR "/beyond_kv_cache.png",
                                          ATTNSCOPE_SHOT_DIR "/beyond_windows_shift.png",
                                          ATTNSCOPE_SHOT_DIR "/beyond_flash_map.png",
                                          ATTNSCOPE_SHOT_DIR "/classroom_zh.png",
                                          ATTNSCOPE_SHOT_DIR "/classroom_presentation_zh.png"};

struct Image {
    int w = 0, h = 0;
    std::vector<std::uint8_t> rgb;
};

Image load(const std::string& path) {
    Image img;
    int n = 0;
    unsigned char* data = stbi_load(path.c_str(), &img.w, &img.h, &n, 3);
    if (data) {
        img.rgb.assign(data, data + static_cast<std::size_t>(img.w) * img.h * 3);
        stbi_image_free(data);
    }
    return img;
}

}  // namespace

TEST_CASE("screenshots are non-blank and differ") {
    REQUIRE_MESSAGE(g_paths.size() >= 2, "pass at least two PNG paths");
    std::vector<Image> images;
    for (const auto& p : g_paths) {
        CAPTURE(p);
        Image img = load(p);
        REQUIRE_MESSAGE(!img.rgb.empty(), "cannot read " << p);
        CHECK(img.w >= 320);
        CHECK(img.h >= 240);
        // Non-blank: many distinct colours (an ImGui UI with heatmaps has hundreds).
        std::set<std::uint32_t> colours;
        for (std::size_t i = 0; i + 2 < img.rgb.size() && colours.size() < 2000; i += 3 * 7)
            colours.insert(img.rgb[i] << 16 | img.rgb[i + 1] << 8 | img.rgb[i + 2]);
        CHECK_MESSAGE(colours.size() > 50, p << " has only " << colours.size() << " colours");
        images.push_back(std::move(img));
    }
    for (std::size_t a = 0; a < images.size(); ++a)
        for (std::size_t b = a + 1; b < images.size(); ++b) {
            CAPTURE(g_paths[a]);
            CAPTURE(g_paths[b]);
            std::size_t differing = 0;
            const std::size_t n = std::min(images[a].rgb.size(), images[b].rgb.size());
            for (std::size_t i = 0; i < n; i += 3)
                if (images[a].rgb[i] != images[b].rgb[i] || images[a].rgb[i + 1] != images[b].rgb[i + 1] ||
                    images[a].rgb[i + 2] != images[b].rgb[i + 2])
                    ++differing;
            CHECK_MESSAGE(differing > n / 3 / 100, "less than 1% of the pixels differ");
        }
}
