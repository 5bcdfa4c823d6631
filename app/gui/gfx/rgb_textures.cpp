#include "gfx/rgb_textures.hpp"

#include <glad/gl.h>

#include <vector>

namespace attnscope::gfx {

std::uintptr_t RgbTextures::texture(const std::string& slot, const std::string& key,
                                    const std::function<RgbImage()>& make) {
    Slot& s = slots_[slot];
    s.used = true;
    if (s.key != key || s.id == 0) {
        s.key = key;
        s.pending = make();
        s.dirty = true;
        if (s.id == 0) glGenTextures(1, &s.id);
    }
    return s.id;
}

void RgbTextures::flush() {
    bool any = false;
    for (auto& kv : slots_) any |= kv.second.dirty;
    if (!any) return;
    GLint bound = 0, alignment = 4;
    glGetIntegerv(GL_TEXTURE_BINDING_2D, &bound);
    glGetIntegerv(GL_UNPACK_ALIGNMENT, &alignment);
    glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
    std::vector<std::uint8_t> rgba;
    for (auto& kv : slots_) {
        Slot& s = kv.second;
        if (!s.dirty) continue;
        s.dirty = false;
        const RgbImage& img = s.pending;
        const std::size_t n = img.width * img.height;
        rgba.assign(n * 4, 255);
        for (std::size_t i = 0; i < n && 3 * i + 2 < img.pixels.size(); ++i)
            for (std::size_t c = 0; c < 3; ++c) rgba[4 * i + c] = img.pixels[3 * i + c];
        glBindTexture(GL_TEXTURE_2D, s.id);
        glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
        glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
        glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
        glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
        glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA8, static_cast<GLsizei>(img.width), static_cast<GLsizei>(img.height), 0,
                     GL_RGBA, GL_UNSIGNED_BYTE, n ? rgba.data() : nullptr);
        s.pending = RgbImage{};
        ++uploads_;
    }
    glBindTexture(GL_TEXTURE_2D, static_cast<GLuint>(bound));
    glPixelStorei(GL_UNPACK_ALIGNMENT, alignment);
}

void RgbTextures::collect() {
    for (auto it = slots_.begin(); it != slots_.end();) {
        if (!it->second.used) {
            if (it->second.id) glDeleteTextures(1, &it->second.id);
            it = slots_.erase(it);
        } else {
            it->second.used = false;
            ++it;
        }
    }
}

void RgbTextures::shutdown() {
    for (auto& kv : slots_)
        if (kv.second.id) glDeleteTextures(1, &kv.second.id);
    slots_.clear();
}

}  // namespace attnscope::gfx
