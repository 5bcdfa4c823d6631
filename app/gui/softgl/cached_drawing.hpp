// Pieces of the UI drawn once into a texture and shown as one image until their key changes.
//
// The row-sum plot is 197 anti-aliased dots and 196 line segments at ViT-B size: about 4,300
// triangles that Mesa llvmpipe (software GL) transforms, sets up and bins on the app thread every
// frame, a sixth of an idle frame. Cached, it is two triangles.
//
// A piece is recorded into its own ImDrawList and rendered by Dear ImGui's OpenGL3 backend (same
// shader, same blending) into an RGBA8 texture of the piece's whole-pixel rectangle cleared to
// transparent black. That texture holds the piece's colours premultiplied by their coverage; it is
// drawn back with premultiplied blending (ONE, ONE_MINUS_SRC_ALPHA), which gives the pixels drawing
// the piece directly gives: exactly where the piece is opaque or absent, within one level of 255
// at anti-aliased edges over the window behind. Panels see no GL; the GL work happens in flush().
#pragma once

#include <imgui.h>

#include <functional>
#include <map>
#include <memory>
#include <string>

namespace attnscope::gfx {

class CachedDrawings {
public:
    CachedDrawings();
    ~CachedDrawings();
    CachedDrawings(const CachedDrawings&) = delete;
    CachedDrawings& operator=(const CachedDrawings&) = delete;

    // Draws into `target` the piece that `record` draws (in screen coordinates) inside [min, max]:
    // from the slot's texture when its key and rectangle are unchanged, else records it now and
    // renders it in flush(). The piece must lie inside [min, max]: whatever `record` draws outside
    // is cut off.
    void draw(ImDrawList* target, const std::string& slot, const std::string& key, ImVec2 min, ImVec2 max,
              const std::function<void(ImDrawList*)>& record);

    void flush();     // after ImGui::Render(), before the frame is drawn: renders the pieces recorded
    void collect();   // frees the pieces not drawn since the last collect (call once per frame)
    void shutdown();  // frees every GL object (context still current)
    std::size_t renders() const { return renders_; }  // pieces rendered so far (render-once check)

private:
    struct Piece;
    std::map<std::string, std::unique_ptr<Piece>> pieces_;
    std::size_t renders_ = 0;
};

}  // namespace attnscope::gfx
