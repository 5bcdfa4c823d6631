// PNG output for screenshots and heatmap exports (stb_image_write from Debian's libstb).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace attnscope::gfx {

// Writes top-down RGBA8 pixels as an opaque RGB PNG to path via path + ".tmp" and a rename.
// false + *error on failure.
bool write_png_atomic(const std::string& path, int width, int height, const std::vector<std::uint8_t>& rgba,
                      std::string* error);

// Reverses the row order in place (GL reads bottom-up, PNG is top-down).
void flip_rows(std::vector<std::uint8_t>& rgba, int width, int height);

// Reads the currently bound read framebuffer (0, 0, width, height) as top-down RGBA8.
std::vector<std::uint8_t> read_pixels_top_down(int width, int height);

}  // namespace attnscope::gfx
