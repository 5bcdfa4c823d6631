// RGB pictures (the ViT's input, attention overlays) as RGBA8 GL textures, one per named slot.
// A slot's picture is made (on the CPU) and uploaded only when its key changes; the upload happens
// in flush(), which the frame loop calls after ImGui::Render() and before drawing ImGui. Owns its
// textures and restores the GL state it changes (texture binding, unpack alignment).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "image.hpp"

namespace attnscope::gfx {

class RgbTextures {
public:
    RgbTextures() = default;
    ~RgbTextures() = default;  // call shutdown() while the context is current
    RgbTextures(const RgbTextures&) = delete;
    RgbTextures& operator=(const RgbTextures&) = delete;

    // The slot's texture (ImTextureID-compatible integer); `make` runs only when key differs from
    // the slot's last key. Sampled nearest (a 64 x 64 picture shown large keeps crisp pixels).
    std::uintptr_t texture(const std::string& slot, const std::string& key, const std::function<RgbImage()>& make);

    void flush();     // uploads what changed
    void collect();   // frees slots not used since the last collect (call once per frame)
    void shutdown();  // frees every texture (context still current)

    std::size_t uploads() const { return uploads_; }  // uploads so far (upload-once check)

private:
    struct Slot {
        unsigned id = 0;
        std::string key;
        RgbImage pending;  // waiting for flush()
        bool dirty = false;
        bool used = true;
    };
    std::map<std::string, Slot> slots_;
    std::size_t uploads_ = 0;
};

}  // namespace attnscope::gfx
