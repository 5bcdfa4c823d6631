#include "softgl/cached_drawing.hpp"

#include <glad/gl.h>
#include <backends/imgui_impl_opengl3.h>

#include <cmath>
#include <cstdio>

namespace attnscope::gfx {

struct CachedDrawings::Piece {
    std::string key;
    ImVec2 min, max;
    int x0 = 0, y0 = 0, w = 0, h = 0;  // the whole-pixel rectangle the texture covers
    GLuint texture = 0, fbo = 0;
    int tex_w = 0, tex_h = 0;
    std::unique_ptr<ImDrawList> list;  // recorded, waiting for flush()
    bool ready = false;                // the texture holds the piece
    bool used = true;
};

namespace {

void FreePiece(CachedDrawings* /*unused*/, GLuint& texture, GLuint& fbo) {
    if (fbo) glDeleteFramebuffers(1, &fbo);
    if (texture) glDeleteTextures(1, &texture);
    texture = fbo = 0;
}

// ImDrawList callbacks around the image: premultiplied blending, then ImGui's own state again.
void PremultipliedBlend(const ImDrawList*, const ImDrawCmd*) {
    glBlendFuncSeparate(GL_ONE, GL_ONE_MINUS_SRC_ALPHA, GL_ONE, GL_ONE_MINUS_SRC_ALPHA);
}

}  // namespace

CachedDrawings::CachedDrawings() = default;
CachedDrawings::~CachedDrawings() = default;  // shutdown() must have run while the context lived

void CachedDrawings::draw(ImDrawList* target, const std::string& slot, const std::string& key, ImVec2 min, ImVec2 max,
                          const std::function<void(ImDrawList*)>& record) {
    auto& p = pieces_[slot];
    if (!p) p = std::make_unique<Piece>();
    Piece& piece = *p;
    piece.used = true;
    const bool same_place =
        piece.min.x == min.x && piece.min.y == min.y && piece.max.x == max.x && piece.max.y == max.y;
    if (!piece.ready || piece.key != key || !same_place) {
        piece.key = key;
        piece.min = min;
        piece.max = max;
        piece.x0 = static_cast<int>(std::floor(min.x));
        piece.y0 = static_cast<int>(std::floor(min.y));
        piece.w = static_cast<int>(std::ceil(max.x)) - piece.x0;
        piece.h = static_cast<int>(std::ceil(max.y)) - piece.y0;
        piece.ready = false;
        if (piece.w <= 0 || piece.h <= 0) return;
        piece.list = std::make_unique<ImDrawList>(ImGui::GetDrawListSharedData());
        ImDrawList& list = *piece.list;
        list._ResetForNewFrame();
        list.Flags = target->Flags;  // the same anti-aliasing as the window's own list
        list.PushTextureID(ImGui::GetIO().Fonts->TexID);
        list.PushClipRect(ImVec2(static_cast<float>(piece.x0), static_cast<float>(piece.y0)),
                          ImVec2(static_cast<float>(piece.x0 + piece.w), static_cast<float>(piece.y0 + piece.h)));
        record(&list);
        if (!piece.texture) glGenTextures(1, &piece.texture);  // valid this frame; filled in flush()
    }
    const ImVec2 a(static_cast<float>(piece.x0), static_cast<float>(piece.y0));
    const ImVec2 b(static_cast<float>(piece.x0 + piece.w), static_cast<float>(piece.y0 + piece.h));
    target->AddCallback(PremultipliedBlend, nullptr);
    target->AddImage(reinterpret_cast<ImTextureID>(static_cast<std::uintptr_t>(piece.texture)), a, b, ImVec2(0, 1),
                     ImVec2(1, 0));  // the texture's row 0 is the bottom
    target->AddCallback(ImDrawCallback_ResetRenderState, nullptr);
}

void CachedDrawings::flush() {
    GLint last_draw_fbo = 0, last_read_fbo = 0;
    GLfloat last_clear[4] = {};
    bool saved = false;
    for (auto& [slot, p] : pieces_) {
        Piece& piece = *p;
        if (!piece.list || !piece.texture) continue;
        if (!saved) {
            glGetIntegerv(GL_DRAW_FRAMEBUFFER_BINDING, &last_draw_fbo);
            glGetIntegerv(GL_READ_FRAMEBUFFER_BINDING, &last_read_fbo);
            glGetFloatv(GL_COLOR_CLEAR_VALUE, last_clear);
            saved = true;
        }
        GLint last_texture = 0;
        glGetIntegerv(GL_TEXTURE_BINDING_2D, &last_texture);
        if (piece.tex_w != piece.w || piece.tex_h != piece.h) {
            glBindTexture(GL_TEXTURE_2D, piece.texture);
            glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
            glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
            glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
            glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
            glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA8, piece.w, piece.h, 0, GL_RGBA, GL_UNSIGNED_BYTE, nullptr);
            if (!piece.fbo) glGenFramebuffers(1, &piece.fbo);
            glBindFramebuffer(GL_FRAMEBUFFER, piece.fbo);
            glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, piece.texture, 0);
            piece.tex_w = piece.w;
            piece.tex_h = piece.h;
        }
        glBindTexture(GL_TEXTURE_2D, static_cast<GLuint>(last_texture));
        glBindFramebuffer(GL_FRAMEBUFFER, piece.fbo);
        if (glCheckFramebufferStatus(GL_FRAMEBUFFER) == GL_FRAMEBUFFER_COMPLETE) {
            glClearColor(0.0f, 0.0f, 0.0f, 0.0f);
            glClear(GL_COLOR_BUFFER_BIT);
            ImDrawList* lists[] = {piece.list.get()};
            ImDrawData data;
            data.Valid = true;
            data.CmdLists = lists;
            data.CmdListsCount = 1;
            data.TotalVtxCount = piece.list->VtxBuffer.Size;
            data.TotalIdxCount = piece.list->IdxBuffer.Size;
            data.DisplayPos = ImVec2(static_cast<float>(piece.x0), static_cast<float>(piece.y0));
            data.DisplaySize = ImVec2(static_cast<float>(piece.w), static_cast<float>(piece.h));
            data.FramebufferScale = ImVec2(1.0f, 1.0f);
            ImGui_ImplOpenGL3_RenderDrawData(&data);  // restores the GL state it changes but the framebuffer
            piece.ready = true;
            ++renders_;
        }
        piece.list.reset();
    }
    if (saved) {
        glBindFramebuffer(GL_DRAW_FRAMEBUFFER, static_cast<GLuint>(last_draw_fbo));
        glBindFramebuffer(GL_READ_FRAMEBUFFER, static_cast<GLuint>(last_read_fbo));
        glClearColor(last_clear[0], last_clear[1], last_clear[2], last_clear[3]);
    }
}

void CachedDrawings::collect() {
    for (auto it = pieces_.begin(); it != pieces_.end();) {
        if (!it->second->used) {
            FreePiece(this, it->second->texture, it->second->fbo);
            it = pieces_.erase(it);
        } else {
            it->second->used = false;
            ++it;
        }
    }
}

void CachedDrawings::shutdown() {
    for (auto& [slot, p] : pieces_) FreePiece(this, p->texture, p->fbo);
    pieces_.clear();
}

}  // namespace attnscope::gfx
