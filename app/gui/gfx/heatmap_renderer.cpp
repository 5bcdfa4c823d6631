#include "gfx/heatmap_renderer.hpp"

#include <glad/gl.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "embedded_shaders.hpp"
#include "gfx/png.hpp"

namespace attnscope::gfx {

struct HeatmapRenderer::Slot {
    std::string data_key;
    ui::Slice2D slice;
    ui::ColorRange range;
    bool has_range = false;
    bool data_dirty = true;
    bool look_dirty = true;
    bool used = true;
    std::string problem;
    GLuint values = 0, color = 0, fbo = 0;
    int tex_w = 0, tex_h = 0;  // allocated texture size (cols x rows)
};

namespace {

GLuint compile(GLenum type, const char* source, std::string* error) {
    GLuint shader = glCreateShader(type);
    glShaderSource(shader, 1, &source, nullptr);
    glCompileShader(shader);
    GLint ok = GL_FALSE;
    glGetShaderiv(shader, GL_COMPILE_STATUS, &ok);
    if (!ok) {
        char log[2048] = {};
        glGetShaderInfoLog(shader, sizeof log, nullptr, log);
        *error = std::string(type == GL_VERTEX_SHADER ? "heatmap.vert" : "heatmap.frag") + ": " + log;
        glDeleteShader(shader);
        return 0;
    }
    return shader;
}

// Saves the GL state flush() touches and puts it back on scope exit.
struct SavedState {
    GLint program = 0, vao = 0, fbo_draw = 0, fbo_read = 0, active_texture = 0, tex0 = 0, tex1 = 0,
          unpack_alignment = 4;
    GLint viewport[4] = {};
    GLboolean blend = GL_FALSE, scissor = GL_FALSE, depth = GL_FALSE, cull = GL_FALSE;
    SavedState() {
        glGetIntegerv(GL_CURRENT_PROGRAM, &program);
        glGetIntegerv(GL_VERTEX_ARRAY_BINDING, &vao);
        glGetIntegerv(GL_DRAW_FRAMEBUFFER_BINDING, &fbo_draw);
        glGetIntegerv(GL_READ_FRAMEBUFFER_BINDING, &fbo_read);
        glGetIntegerv(GL_ACTIVE_TEXTURE, &active_texture);
        glActiveTexture(GL_TEXTURE0);
        glGetIntegerv(GL_TEXTURE_BINDING_2D, &tex0);
        glActiveTexture(GL_TEXTURE1);
        glGetIntegerv(GL_TEXTURE_BINDING_2D, &tex1);
        glGetIntegerv(GL_UNPACK_ALIGNMENT, &unpack_alignment);
        glGetIntegerv(GL_VIEWPORT, viewport);
        blend = glIsEnabled(GL_BLEND);
        scissor = glIsEnabled(GL_SCISSOR_TEST);
        depth = glIsEnabled(GL_DEPTH_TEST);
        cull = glIsEnabled(GL_CULL_FACE);
    }
    ~SavedState() {
        glUseProgram(static_cast<GLuint>(program));
        glBindVertexArray(static_cast<GLuint>(vao));
        glBindFramebuffer(GL_DRAW_FRAMEBUFFER, static_cast<GLuint>(fbo_draw));
        glBindFramebuffer(GL_READ_FRAMEBUFFER, static_cast<GLuint>(fbo_read));
        glActiveTexture(GL_TEXTURE1);
        glBindTexture(GL_TEXTURE_2D, static_cast<GLuint>(tex1));
        glActiveTexture(GL_TEXTURE0);
        glBindTexture(GL_TEXTURE_2D, static_cast<GLuint>(tex0));
        glActiveTexture(static_cast<GLenum>(active_texture));
        glPixelStorei(GL_UNPACK_ALIGNMENT, unpack_alignment);
        glViewport(viewport[0], viewport[1], viewport[2], viewport[3]);
        auto set = [](GLenum cap, GLboolean on) { on ? glEnable(cap) : glDisable(cap); };
        set(GL_BLEND, blend);
        set(GL_SCISSOR_TEST, scissor);
        set(GL_DEPTH_TEST, depth);
        set(GL_CULL_FACE, cull);
    }
};

void free_slot_gl(HeatmapRenderer* /*unused*/, GLuint& values, GLuint& color, GLuint& fbo) {
    if (fbo) glDeleteFramebuffers(1, &fbo);
    if (values) glDeleteTextures(1, &values);
    if (color) glDeleteTextures(1, &color);
    values = color = fbo = 0;
}

void set_nearest(GLenum target) {
    glTexParameteri(target, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
    glTexParameteri(target, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
    glTexParameteri(target, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
    glTexParameteri(target, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
}

}  // namespace

HeatmapRenderer::HeatmapRenderer() = default;
HeatmapRenderer::~HeatmapRenderer() = default;  // shutdown() must have run while the context lived

bool HeatmapRenderer::init(std::string* error) {
    GLuint vs = compile(GL_VERTEX_SHADER, kHeatmapVert, error);
    if (!vs) return false;
    GLuint fs = compile(GL_FRAGMENT_SHADER, kHeatmapFrag, error);
    if (!fs) {
        glDeleteShader(vs);
        return false;
    }
    program_ = glCreateProgram();
    glAttachShader(program_, vs);
    glAttachShader(program_, fs);
    glLinkProgram(program_);
    glDeleteShader(vs);
    glDeleteShader(fs);
    GLint ok = GL_FALSE;
    glGetProgramiv(program_, GL_LINK_STATUS, &ok);
    if (!ok) {
        char log[2048] = {};
        glGetProgramInfoLog(program_, sizeof log, nullptr, log);
        *error = std::string("heatmap shader link: ") + log;
        glDeleteProgram(program_);
        program_ = 0;
        return false;
    }
    loc_values_ = glGetUniformLocation(program_, "u_values");
    loc_lut_ = glGetUniformLocation(program_, "u_lut");
    loc_lo_ = glGetUniformLocation(program_, "u_lo");
    loc_hi_ = glGetUniformLocation(program_, "u_hi");
    loc_log_ = glGetUniformLocation(program_, "u_log");
    loc_log_k_ = glGetUniformLocation(program_, "u_log_k");
    loc_colormap_ = glGetUniformLocation(program_, "u_colormap");
    loc_nan_ = glGetUniformLocation(program_, "u_nan_color");
    loc_inf_ = glGetUniformLocation(program_, "u_inf_color");

    glGenVertexArrays(1, &vao_);

    // The colormap LUT: 256 x 2 RGBA8, row 0 sequential, row 1 diverging (= ui::Colormap values).
    std::vector<std::uint8_t> lut = ui::colormap_lut(ui::Colormap::Sequential);
    const std::vector<std::uint8_t> div = ui::colormap_lut(ui::Colormap::Diverging);
    lut.insert(lut.end(), div.begin(), div.end());
    GLint last_tex = 0, last_align = 4;
    glGetIntegerv(GL_TEXTURE_BINDING_2D, &last_tex);
    glGetIntegerv(GL_UNPACK_ALIGNMENT, &last_align);
    glPixelStorei(GL_UNPACK_ALIGNMENT, 1);
    glGenTextures(1, &lut_);
    glBindTexture(GL_TEXTURE_2D, lut_);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_LINEAR);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_LINEAR);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
    glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA8, ui::kLutSize, 2, 0, GL_RGBA, GL_UNSIGNED_BYTE, lut.data());
    glBindTexture(GL_TEXTURE_2D, static_cast<GLuint>(last_tex));
    glPixelStorei(GL_UNPACK_ALIGNMENT, last_align);
    glGetIntegerv(GL_MAX_TEXTURE_SIZE, &max_texture_size_);
    ready_ = true;
    return true;
}

void HeatmapRenderer::shutdown() {
    for (auto& [name, s] : slots_) free_slot_gl(this, s->values, s->color, s->fbo);
    slots_.clear();
    if (lut_) glDeleteTextures(1, &lut_);
    if (vao_) glDeleteVertexArrays(1, &vao_);
    if (program_) glDeleteProgram(program_);
    lut_ = vao_ = program_ = 0;
    ready_ = false;
}

const ui::Slice2D& HeatmapRenderer::slice(const std::string& slot, const std::string& data_key,
                                          const std::function<ui::Slice2D()>& make) {
    auto& p = slots_[slot];
    if (!p) p = std::make_unique<Slot>();
    Slot& s = *p;
    s.used = true;
    if (s.data_key != data_key || (s.slice.empty() && s.data_key.empty())) {
        s.data_key = data_key;
        s.slice = make();
        s.data_dirty = true;
        s.problem.clear();
        if (s.slice.empty())
            s.problem = "empty slice (a dimension is 0)";
        else if (s.slice.rows > static_cast<std::size_t>(max_texture_size_) ||
                 s.slice.cols > static_cast<std::size_t>(max_texture_size_))
            s.problem = "slice " + std::to_string(s.slice.rows) + " x " + std::to_string(s.slice.cols) +
                        " is larger than this GPU's texture limit " + std::to_string(max_texture_size_);
    }
    return s.slice;
}

std::uintptr_t HeatmapRenderer::texture(const std::string& slot, const ui::ColorRange& range) {
    auto it = slots_.find(slot);
    if (it == slots_.end()) return 0;
    Slot& s = *it->second;
    s.used = true;
    if (!s.has_range || s.range.lo != range.lo || s.range.hi != range.hi || s.range.colormap != range.colormap ||
        s.range.scale != range.scale) {
        s.range = range;
        s.has_range = true;
        s.look_dirty = true;
    }
    if (!s.problem.empty() || !ready_) return 0;
    if (!s.color) {
        // Created now so the id is valid this frame; filled in flush() before ImGui draws.
        glGenTextures(1, &s.color);
    }
    return s.color;
}

std::string HeatmapRenderer::problem(const std::string& slot) const {
    auto it = slots_.find(slot);
    if (!ready_) return "the heatmap shader is not available";
    return it == slots_.end() ? std::string("no data") : it->second->problem;
}

void HeatmapRenderer::render(Slot& s) {
    const int w = static_cast<int>(s.slice.cols), h = static_cast<int>(s.slice.rows);
    if (s.data_dirty) {
        if (!s.values) glGenTextures(1, &s.values);
        glActiveTexture(GL_TEXTURE0);
        glBindTexture(GL_TEXTURE_2D, s.values);
        glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
        if (s.tex_w != w || s.tex_h != h) {
            set_nearest(GL_TEXTURE_2D);
            glTexImage2D(GL_TEXTURE_2D, 0, GL_R32F, w, h, 0, GL_RED, GL_FLOAT, s.slice.values.data());
            glBindTexture(GL_TEXTURE_2D, s.color);
            set_nearest(GL_TEXTURE_2D);
            glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA8, w, h, 0, GL_RGBA, GL_UNSIGNED_BYTE, nullptr);
            if (!s.fbo) glGenFramebuffers(1, &s.fbo);
            glBindFramebuffer(GL_FRAMEBUFFER, s.fbo);
            glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, s.color, 0);
            if (glCheckFramebufferStatus(GL_FRAMEBUFFER) != GL_FRAMEBUFFER_COMPLETE)
                s.problem = "the GPU refused a framebuffer for this heatmap";
            s.tex_w = w;
            s.tex_h = h;
        } else {
            glTexSubImage2D(GL_TEXTURE_2D, 0, 0, 0, w, h, GL_RED, GL_FLOAT, s.slice.values.data());
        }
        ++uploads_;
        s.data_dirty = false;
        s.look_dirty = true;
    }
    if (!s.look_dirty || !s.problem.empty()) return;
    glBindFramebuffer(GL_FRAMEBUFFER, s.fbo);
    glViewport(0, 0, w, h);
    glActiveTexture(GL_TEXTURE0);
    glBindTexture(GL_TEXTURE_2D, s.values);
    glActiveTexture(GL_TEXTURE1);
    glBindTexture(GL_TEXTURE_2D, lut_);
    glUniform1i(loc_values_, 0);
    glUniform1i(loc_lut_, 1);
    glUniform1f(loc_lo_, s.range.lo);
    glUniform1f(loc_hi_, s.range.hi);
    glUniform1i(loc_log_, s.range.scale == ui::ScaleMode::Log ? 1 : 0);
    const float m = std::max(std::fabs(s.range.lo), std::fabs(s.range.hi));
    glUniform1f(loc_log_k_, std::max(m * ui::kLogLinearFraction, 1e-30f));
    glUniform1i(loc_colormap_, static_cast<int>(s.range.colormap));
    glUniform4f(loc_nan_, 1.0f, 0.0f, 1.0f, 1.0f);  // magenta: NaN
    glUniform4f(loc_inf_, 0.0f, 1.0f, 1.0f, 1.0f);  // cyan: +-Inf
    glDrawArrays(GL_TRIANGLES, 0, 3);
    s.look_dirty = false;
}

void HeatmapRenderer::flush() {
    if (!ready_) return;
    bool any = false;
    for (auto& [name, s] : slots_)
        if (s->color && s->problem.empty() && (s->data_dirty || s->look_dirty)) any = true;
    if (!any) return;
    SavedState saved;
    glDisable(GL_BLEND);
    glDisable(GL_SCISSOR_TEST);
    glDisable(GL_DEPTH_TEST);
    glDisable(GL_CULL_FACE);
    glUseProgram(program_);
    glBindVertexArray(vao_);
    for (auto& [name, s] : slots_)
        if (s->color && s->problem.empty() && (s->data_dirty || s->look_dirty)) render(*s);
}

void HeatmapRenderer::collect() {
    for (auto it = slots_.begin(); it != slots_.end();) {
        if (!it->second->used) {
            free_slot_gl(this, it->second->values, it->second->color, it->second->fbo);
            it = slots_.erase(it);
        } else {
            it->second->used = false;
            ++it;
        }
    }
}

bool HeatmapRenderer::export_png(const std::string& slot, const std::string& path, int min_size, std::string* error) {
    auto it = slots_.find(slot);
    if (it == slots_.end() || !it->second->fbo || !it->second->problem.empty()) {
        *error = "no heatmap is shown";
        return false;
    }
    Slot& s = *it->second;
    GLint last_read = 0;
    glGetIntegerv(GL_READ_FRAMEBUFFER_BINDING, &last_read);
    glBindFramebuffer(GL_READ_FRAMEBUFFER, s.fbo);
    std::vector<std::uint8_t> cells(static_cast<std::size_t>(s.tex_w) * s.tex_h * 4);
    GLint pack = 4;
    glGetIntegerv(GL_PACK_ALIGNMENT, &pack);
    glPixelStorei(GL_PACK_ALIGNMENT, 1);
    glReadPixels(0, 0, s.tex_w, s.tex_h, GL_RGBA, GL_UNSIGNED_BYTE, cells.data());  // row 0 = slice row 0
    glPixelStorei(GL_PACK_ALIGNMENT, pack);
    glBindFramebuffer(GL_READ_FRAMEBUFFER, static_cast<GLuint>(last_read));
    const int scale =
        std::max(1, (min_size + std::max(s.tex_w, s.tex_h) - 1) / std::max(1, std::max(s.tex_w, s.tex_h)));
    const int W = s.tex_w * scale, H = s.tex_h * scale;
    std::vector<std::uint8_t> out(static_cast<std::size_t>(W) * H * 4);
    for (int y = 0; y < H; ++y)
        for (int x = 0; x < W; ++x)
            std::copy_n(&cells[(static_cast<std::size_t>(y / scale) * s.tex_w + x / scale) * 4], 4,
                        &out[(static_cast<std::size_t>(y) * W + x) * 4]);
    return write_png_atomic(path, W, H, out, error);
}

}  // namespace attnscope::gfx
