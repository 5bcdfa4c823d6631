// GPU heatmaps: one R32F texture of values per shown slice (uploaded only when the slice changes)
// and one colormap shader pair (shaders/heatmap.{vert,frag}) that renders it into an RGBA8
// texture ImGui draws. Owns every GL object it uses and restores any GL state it changes.
//
// Panels see no GL: they ask for a slot's slice and texture by name; the GL work happens in
// flush(), which the frame loop calls after ImGui::Render() and before drawing ImGui.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "logic/colormap.hpp"
#include "logic/slice.hpp"

namespace attnscope::gfx {

class HeatmapRenderer {
public:
    HeatmapRenderer();
    ~HeatmapRenderer();
    HeatmapRenderer(const HeatmapRenderer&) = delete;
    HeatmapRenderer& operator=(const HeatmapRenderer&) = delete;

    bool init(std::string* error);  // needs a current GL 3.3 core context
    void shutdown();                // frees every GL object (context still current)

    // The cached slice of a slot; `make` runs only when data_key differs from the cached key.
    const ui::Slice2D& slice(const std::string& slot, const std::string& data_key,
                             const std::function<ui::Slice2D()>& make);

    // The colour texture of a slot (as ImTextureID-compatible integer); re-rendered in flush()
    // when the range or the data changed. 0 when the slot has no data or is too large.
    std::uintptr_t texture(const std::string& slot, const ui::ColorRange& range);
    // Why a slot has no texture ("" when it has one).
    std::string problem(const std::string& slot) const;

    void flush();    // uploads and renders what changed
    void collect();  // frees slots not used since the last collect (call once per frame)

    // Writes the slot's colour texture, each cell scaled up to at least min_size pixels overall.
    bool export_png(const std::string& slot, const std::string& path, int min_size, std::string* error);

    std::size_t uploads() const { return uploads_; }  // R32F uploads so far (upload-once check)

private:
    struct Slot;
    void render(Slot& s);
    std::map<std::string, std::unique_ptr<Slot>> slots_;
    unsigned program_ = 0, vao_ = 0, lut_ = 0;
    int loc_values_ = -1, loc_lut_ = -1, loc_lo_ = -1, loc_hi_ = -1, loc_log_ = -1, loc_log_k_ = -1, loc_colormap_ = -1,
        loc_nan_ = -1, loc_inf_ = -1;
    int max_texture_size_ = 4096;
    std::size_t uploads_ = 0;
    bool ready_ = false;
};

}  // namespace attnscope::gfx
