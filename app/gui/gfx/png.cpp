#include "png.hpp"

#include <glad/gl.h>
#include <stb_image_write.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace attnscope::gfx {

void flip_rows(std::vector<std::uint8_t>& rgba, int width, int height) {
    const std::size_t row = static_cast<std::size_t>(width) * 4;
    for (int y = 0; y < height / 2; ++y)
        std::swap_ranges(rgba.begin() + y * row, rgba.begin() + (y + 1) * row, rgba.begin() + (height - 1 - y) * row);
}

std::vector<std::uint8_t> read_pixels_top_down(int width, int height) {
    std::vector<std::uint8_t> pixels(static_cast<std::size_t>(width) * height * 4);
    GLint pack = 4;
    glGetIntegerv(GL_PACK_ALIGNMENT, &pack);
    glPixelStorei(GL_PACK_ALIGNMENT, 1);
    glReadPixels(0, 0, width, height, GL_RGBA, GL_UNSIGNED_BYTE, pixels.data());
    glPixelStorei(GL_PACK_ALIGNMENT, pack);
    flip_rows(pixels, width, height);
    return pixels;
}

bool write_png_atomic(const std::string& path, int width, int height, const std::vector<std::uint8_t>& rgba,
                      std::string* error) {
    const std::string tmp = path + ".tmp";
    // Opaque RGB (the UI has no transparency to keep) at the strongest zlib level: smaller files.
    std::vector<std::uint8_t> rgb(static_cast<std::size_t>(width) * height * 3);
    for (std::size_t i = 0, n = static_cast<std::size_t>(width) * height; i < n; ++i)
        std::copy_n(&rgba[i * 4], 3, &rgb[i * 3]);
    stbi_write_png_compression_level = 9;
    if (!stbi_write_png(tmp.c_str(), width, height, 3, rgb.data(), width * 3)) {
        if (error) *error = "cannot write " + tmp + ": " + std::strerror(errno ? errno : EIO);
        std::remove(tmp.c_str());
        return false;
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
        if (error) *error = "cannot rename " + tmp + " to " + path + ": " + std::strerror(errno);
        std::remove(tmp.c_str());
        return false;
    }
    return true;
}

}  // namespace attnscope::gfx
