// The Attention map panel of the flash path: attn[b, head] although the flash run never stored it.
// At overview zoom each pixel is the max of a block of weights (core attention_overview, computed
// band by band within a frame budget); zoomed in, exact tiles of the visible cells only
// (core attention_tile through the tile cache of logic/flash_map). Hover: one exact weight.
// Everything comes from core/paths/attention_tiles; nothing is computed here.
#include <imgui.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>

#include "attention_tiles.hpp"
#include "beyond.hpp"
#include "fonts.hpp"
#include "gfx/heatmap_renderer.hpp"
#include "logic/flash_map.hpp"
#include "logic/i18n.hpp"
#include "panels/panels.hpp"
#include "widgets.hpp"

namespace attnscope {

using ui::_;

namespace {

constexpr double kFrameBudget = 0.008;  // seconds of map computation per frame (the rest waits for the next)

// Screen x or y of map cell coordinate v (fractional), for a view panned to pan with cells of size cell.
float CellPos(float origin, float v, float pan, float cell) { return origin + (v - pan) * cell; }

}  // namespace

void DrawFlashMapPanel(const Trace& trace, UiState& ui) {
    if (!trace.beyond || !trace.beyond->flash || !ui.flash_map.visible) return;
    const auto frame_start = std::chrono::steady_clock::now();
    ui::FlashMapView& v = ui.flash_map;
    if (!ui.flash_map_state) ui.flash_map_state = std::make_shared<ui::FlashMap>();
    ui::FlashMap& map = *ui.flash_map_state;
    const AttentionConfig& cfg = trace.config;
    const std::size_t N = cfg.tokens;
    if (v.generation != ui.frame.trace_generation) {  // a new trace: new tiles, the whole map in view
        v.generation = ui.frame.trace_generation;
        map.reset();
        v.batch = std::min(v.batch, cfg.batch - 1), v.head = std::min(v.head, cfg.heads - 1);
        v.zoom = 1.0f, v.pan_x = v.pan_y = 0.0f;
        // A still frame of a large map shows exact tiles (the first 128 queries and keys) and the
        // overview in the corner.
        if (ui.frame.screenshot && N > ui::kExactMaxSide) v.zoom = static_cast<float>(N) / 128.0f;
    }
    PlaceWindow(ui, ui::Panel::AttentionMap);
    if (!ImGui::Begin(ui::window_title(_("Attention map (flash)"), "Attention map").c_str(), &v.visible)) {
        ImGui::End();
        return;
    }
    std::string why;
    const FlashAttentionSource src = flash_attention_source(trace, &why);
    if (!src.ok()) {
        EmptyState(_("No attention map"), why.c_str());
        ImGui::End();
        return;
    }

    // ---- which map: batch item, head; colour scale
    int b = static_cast<int>(v.batch), head = static_cast<int>(v.head);
    if (cfg.batch > 1) {
        ImGui::SetNextItemWidth(ImGui::GetFontSize() * 5.0f);
        if (ImGui::SliderInt(_("batch item##map"), &b, 0, static_cast<int>(cfg.batch) - 1)) v.batch = std::size_t(b);
        ImGui::SameLine();
    }
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 6.0f);
    if (ImGui::SliderInt(_("head##map"), &head, 0, static_cast<int>(cfg.heads) - 1)) v.head = std::size_t(head);
    ImGui::SameLine();
    ImGui::Checkbox(_("log##map"), &v.log);
    ImGui::SameLine();
    HelpMarker(_("The flash path never stores attn [B, h, N, N']. This map is recomputed from q, k and the final "
                  "row max m and sum l the flash run kept: attn = exp(q k^T * scale - m) / l, only for the tiles "
                  "on screen (exact, 256 x 256 per tile, a cache of 64 MiB). Zoomed out, each pixel shows the MAX "
                  "of the weights it covers, so peaks stay visible. Wheel: zoom, drag: pan, double-click: fit."));

    const double budget = ui.frame.screenshot ? -1.0 : kFrameBudget;
    map.advance_overview(src, v.batch, v.head, budget);

    // ---- the map: a square area, the legend beside it
    const ImVec2 avail = ImGui::GetContentRegionAvail();
    const float text_h = ImGui::GetTextLineHeightWithSpacing() * (ui.frame.screenshot ? 3.0f : 5.0f);
    const float side = std::max(40.0f, std::min(avail.x - ColorLegendWidth() - ImGui::GetStyle().ItemSpacing.x,
                                                 avail.y - text_h));
    const ImVec2 a = ImGui::GetCursorScreenPos(), z(a.x + side, a.y + side);
    ImGui::InvisibleButton("##flash_map", ImVec2(side, side));
    const bool hovered = ImGui::IsItemHovered();
    const ImGuiIO& io = ImGui::GetIO();
    const float base = side / static_cast<float>(N);
    const float max_zoom = std::max(1.0f, static_cast<float>(N) / 8.0f);  // at least 8 x 8 cells in view
    if (hovered) {
        TakeMouseWheel();             // the wheel zooms the map
        if (io.MouseWheel != 0.0f) {  // zoom around the mouse
            const float mx = v.pan_x + (io.MousePos.x - a.x) / (base * v.zoom);
            const float my = v.pan_y + (io.MousePos.y - a.y) / (base * v.zoom);
            v.zoom = std::clamp(v.zoom * std::pow(1.25f, io.MouseWheel), 1.0f, max_zoom);
            v.pan_x = mx - (io.MousePos.x - a.x) / (base * v.zoom);
            v.pan_y = my - (io.MousePos.y - a.y) / (base * v.zoom);
        }
        if (ImGui::IsMouseDoubleClicked(0)) v.zoom = 1.0f, v.pan_x = v.pan_y = 0.0f;
    }
    v.zoom = std::clamp(v.zoom, 1.0f, max_zoom);
    const float cell = base * v.zoom, visible = side / cell;
    if (ImGui::IsItemActive() && ImGui::IsMouseDragging(0)) {
        v.pan_x -= io.MouseDelta.x / cell;
        v.pan_y -= io.MouseDelta.y / cell;
    }
    v.pan_x = std::clamp(v.pan_x, 0.0f, std::max(0.0f, static_cast<float>(N) - visible));
    v.pan_y = std::clamp(v.pan_y, 0.0f, std::max(0.0f, static_cast<float>(N) - visible));

    // Exact tiles when zoomed in far enough; the overview meanwhile and when zoomed out.
    ui::MapPlan plan = ui::plan_viewport(N, map.overview_block(), v.pan_x, v.pan_y, visible, visible, side, side);
    std::size_t pending = 0;
    if (plan.exact) {
        // what is left of this frame's budget after the overview (at least one tile)
        const double spent = std::chrono::duration<double>(std::chrono::steady_clock::now() - frame_start).count();
        pending = map.compute_tiles(src, v.batch, v.head, plan, budget < 0 ? -1.0 : std::max(0.0, budget - spent));
        if (pending) plan = ui::plan_viewport(N, map.overview_block(), v.pan_x, v.pan_y, visible, visible, side, side, false);
    }
    if (pending || !map.overview_done()) ui.frame.animating = true;  // more bands or tiles to compute next frame
    char key[192];
    std::snprintf(key, sizeof key, "%llu/%zu/%zu/%d/%zu:%zu/%zu:%zu/%zu/%zu",
                  static_cast<unsigned long long>(ui.frame.trace_generation), v.batch, v.head, plan.exact ? 1 : 0,
                  plan.r0, plan.r1, plan.c0, plan.c1, plan.factor, plan.exact ? 0 : map.overview_bands_done());
    static const ui::Slice2D kEmpty;
    const ui::Slice2D& picture = ui.heatmaps ? ui.heatmaps->slice("flash_map", key, [&] {
        return plan.exact ? map.exact_picture(N, v.batch, v.head, plan) : map.overview_picture(plan);
    }) : kEmpty;
    // Colour range 0 .. the largest weight on screen (the legend says which), so a zoomed-in region of
    // small weights is not all dark.
    const float hi = std::max(picture.max, 1e-12f);
    const ui::ColorRange range{0.0f, hi, ui::Colormap::Sequential, v.log ? ui::ScaleMode::Log : ui::ScaleMode::Linear};
    const std::uintptr_t tex = ui.heatmaps ? ui.heatmaps->texture("flash_map", range) : 0;

    ImDrawList* dl = ImGui::GetWindowDrawList();
    dl->AddRectFilled(a, z, IM_COL32(30, 30, 34, 255));
    dl->PushClipRect(a, z, true);
    if (tex && !picture.empty()) {
        const float x0 = CellPos(a.x, float(plan.c0), v.pan_x, cell), y0 = CellPos(a.y, float(plan.r0), v.pan_y, cell);
        const float x1 = CellPos(a.x, float(plan.c0 + picture.cols * plan.factor), v.pan_x, cell);
        const float y1 = CellPos(a.y, float(plan.r0 + picture.rows * plan.factor), v.pan_y, cell);
        dl->AddImage(reinterpret_cast<ImTextureID>(tex), ImVec2(x0, y0), ImVec2(x1, y1));
    }
    // The overview's rows not computed yet: veiled.
    if (!map.overview_done() && !plan.exact) {
        const float y = CellPos(a.y, float(map.overview_bands_done() * map.overview_block()), v.pan_y, cell);
        dl->AddRectFilled(ImVec2(a.x, std::max(a.y, y)), z, IM_COL32(30, 30, 34, 220));
    }
    // Tile boundaries of the cache (exact view) and cell lines when cells are large.
    if (plan.exact) {
        const std::size_t T = map.cache().tile_side();
        for (std::size_t t = (plan.c0 / T + 1) * T; t < plan.c1; t += T) {
            const float x = CellPos(a.x, float(t), v.pan_x, cell);
            dl->AddLine(ImVec2(x, a.y), ImVec2(x, z.y), IM_COL32(240, 160, 40, 160));
        }
        for (std::size_t t = (plan.r0 / T + 1) * T; t < plan.r1; t += T) {
            const float y = CellPos(a.y, float(t), v.pan_y, cell);
            dl->AddLine(ImVec2(a.x, y), ImVec2(z.x, y), IM_COL32(240, 160, 40, 160));
        }
        if (cell >= 12.0f)
            for (std::size_t k = plan.c0; k <= plan.c1; ++k) {
                const float x = CellPos(a.x, float(k), v.pan_x, cell), y = CellPos(a.y, float(k), v.pan_y, cell);
                dl->AddLine(ImVec2(x, a.y), ImVec2(x, z.y), IM_COL32(0, 0, 0, 70));
                dl->AddLine(ImVec2(a.x, y), ImVec2(z.x, y), IM_COL32(0, 0, 0, 70));
            }
    }
    dl->PopClipRect();
    // The overview in the corner when zoomed in, with the visible region outlined.
    if (v.zoom > 1.0f && ui.heatmaps && map.overview_block()) {
        const float mini = std::floor(side * 0.3f);
        const ui::MapPlan whole =
            ui::plan_viewport(N, map.overview_block(), 0, 0, float(N), float(N), mini, mini, false);
        char mini_key[96];
        std::snprintf(mini_key, sizeof mini_key, "%llu/%zu/%zu/%zu/%zu",
                      static_cast<unsigned long long>(ui.frame.trace_generation), v.batch, v.head, whole.factor,
                      map.overview_bands_done());
        ui.heatmaps->slice("flash_map_overview", mini_key, [&] { return map.overview_picture(whole); });
        ui::ColorRange mini_range = range;  // its own 0 .. max: the whole map's peaks
        mini_range.hi = std::max(map.overview().max, 1e-12f);
        const std::uintptr_t mini_tex = ui.heatmaps->texture("flash_map_overview", mini_range);
        const ImVec2 m0(z.x - mini - 6, a.y + 6), m1(z.x - 6, a.y + 6 + mini);
        const float s = mini / float(whole.rows() * whole.factor);  // pixels per map cell in the inset
        dl->AddRectFilled(ImVec2(m0.x - 2, m0.y - 2), ImVec2(m1.x + 2, m1.y + 2), IM_COL32(20, 20, 20, 230));
        if (mini_tex) dl->AddImage(reinterpret_cast<ImTextureID>(mini_tex), m0, m1);
        dl->AddRect(ImVec2(m0.x + v.pan_x * s, m0.y + v.pan_y * s),
                    ImVec2(m0.x + std::max((v.pan_x + visible) * s, v.pan_x * s + 3), m0.y + std::max((v.pan_y + visible) * s, v.pan_y * s + 3)),
                    IM_COL32(255, 255, 255, 255), 0.0f, 0, 1.5f);
    }
    dl->AddRect(a, z, IM_COL32(200, 200, 200, 255));
    ImGui::SameLine();
    ColorLegend(range, side, false, false);

    // ---- what is on screen, the hovered weight
    ImGui::PushTextWrapPos(0.0f);
    if (plan.exact && plan.factor == 1)
        WrappedTextF(_("exact tiles: queries %zu..%zu, keys %zu..%zu, one weight per cell"), plan.r0, plan.r1 - 1,
                    plan.c0, plan.c1 - 1);
    else if (plan.exact)
        WrappedTextF(_("exact tiles: queries %zu..%zu, keys %zu..%zu; each pixel the max of %zu x %zu weights"),
                    plan.r0, plan.r1 - 1, plan.c0, plan.c1 - 1, plan.factor, plan.factor);
    else
        WrappedTextF(_("overview of %zu x %zu: each pixel the max of %zu x %zu weights; zoom in for exact tiles"), N, N,
                    plan.factor, plan.factor);
    ImGui::PopTextWrapPos();
    ImGui::PushFont(fonts().mono);
    if (hovered && io.MousePos.x >= a.x && io.MousePos.y >= a.y && io.MousePos.x < z.x && io.MousePos.y < z.y) {
        const std::size_t row = std::min(N - 1, static_cast<std::size_t>(v.pan_y + (io.MousePos.y - a.y) / cell));
        const std::size_t col = std::min(N - 1, static_cast<std::size_t>(v.pan_x + (io.MousePos.x - a.x) / cell));
        const float w = attention_weight(src, v.batch, v.head, row, col);  // exact: one dot product
        ImGui::Text("attn[%zu, %zu, %zu, %zu] = %s", v.batch, v.head, row, col, ui::format_value(w).c_str());
        ImGui::BeginTooltip();
        ImGui::Text("attn[%zu, %zu, %zu, %zu] = %.7g", v.batch, v.head, row, col, static_cast<double>(w));
        if (attention_hidden(src, v.batch, row, col))
            ImGui::TextDisabled("%s", _("hidden by the mask: exactly 0"));
        else
            ImGui::TextDisabled("%s", _("exact: exp(q_i . k_j * scale - m_i) / l_i"));
        if (plan.factor > 1 && !picture.empty()) {
            const std::size_t pi = std::min(picture.rows - 1, (row - std::min(row, plan.r0)) / plan.factor);
            const std::size_t pj = std::min(picture.cols - 1, (col - std::min(col, plan.c0)) / plan.factor);
            const std::size_t r0 = plan.r0 + pi * plan.factor, c0 = plan.c0 + pj * plan.factor;
            ImGui::TextDisabled(_("this pixel: max over queries %zu..%zu, keys %zu..%zu = %.4g"), r0,
                                std::min(N, r0 + plan.factor) - 1, c0, std::min(N, c0 + plan.factor) - 1,
                                static_cast<double>(picture.at(pi, pj)));
        }
        ImGui::EndTooltip();
    } else if (pending) {
        ImGui::TextDisabled(_("computing %zu exact tiles ..."), pending);
    } else if (!map.overview_done()) {
        ImGui::TextDisabled(_("overview: %zu of %zu rows"), std::min(N, map.overview_bands_done() * map.overview_block()), N);
    } else {
        ImGui::TextDisabled("%s", _("hover: the exact weight; wheel: zoom; drag: pan"));
    }
    ImGui::PopFont();
    const double frame_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - frame_start).count();
    v.frame_ms = frame_ms;
    v.frame_ms_max = std::max(v.frame_ms_max, frame_ms);
    if (!ui.frame.screenshot) {  // timings vary between runs: never in a screenshot
        const AttentionTileCache& c = map.cache();
        ImGui::PushTextWrapPos(0.0f);
        ImGui::TextDisabled(_("tile %.2f ms, overview %.0f ms, panel %.1f ms (max %.1f); cache %zu tiles, %s of %s"),
                            map.last_tile_seconds() * 1e3, map.overview_seconds() * 1e3, frame_ms, v.frame_ms_max,
                            c.size(), format_bytes(c.bytes()).c_str(), format_bytes(c.byte_cap()).c_str());
        ImGui::PopTextWrapPos();
    }
    ImGui::End();
}

}  // namespace attnscope
