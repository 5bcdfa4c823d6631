// The Beyond panel: what the paths beyond the textbook recorded (core/paths/beyond.hpp).
//   flash     the tiles filling the output (animated), the running max m and sum l of the current
//             block's rows, peak memory against the standard path and a memory-vs-N plot;
//   kv-cache  the cache growing token by token, the new token's attention row, FLOPs saved;
//   windowed  the window partition drawn on the patch grid and the selected window's heatmap; with
//             patch merging, on its steps the 2 x 2 gather, the halved grid and the channels C -> 4C -> 2C,
//             on the second stage's steps that stage's windows;
//   a mask    on the textbook path: which keys each query may see.
// Everything is read from the trace; nothing is recomputed here.
#include <imgui.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>

#include "beyond.hpp"
#include "gfx/rgb_textures.hpp"
#include "logic/beyond_view.hpp"
#include "logic/colormap.hpp"
#include "logic/i18n.hpp"
#include "panels/panels.hpp"
#include "widgets.hpp"

namespace attnscope {

using ui::_;

namespace {

ImU32 Col(const std::array<std::uint8_t, 3>& c, int alpha = 255) { return IM_COL32(c[0], c[1], c[2], alpha); }

// A picture of the panel as one textured quad over [p0, p1] (nothing without a texture store).
void DrawPicture(ImDrawList* dl, UiState& ui, const std::string& slot, const std::string& key, ImVec2 p0, ImVec2 p1,
                 ImVec2 uv1, const std::function<RgbImage()>& make) {
    if (!ui.pictures) return;
    const std::uintptr_t texture = ui.pictures->texture(slot, key, make);
    dl->AddImage(reinterpret_cast<ImTextureID>(texture), p0, p1, ImVec2(0, 0), uv1);
}

// A square heatmap of rows x cols values (row-major) as a picture, colour range [lo, hi]; -inf
// cells (hidden by a mask) dark grey.
RgbImage ValuesPicture(const float* v, std::size_t rows, std::size_t cols, float lo, float hi,
                       const float* hidden = nullptr) {
    return ui::cell_picture(rows, cols, 256, [&](std::size_t i, std::size_t j) -> std::array<std::uint8_t, 3> {
        const float x = hidden && std::isinf(hidden[i * cols + j]) ? hidden[i * cols + j] : v[i * cols + j];
        if (std::isinf(x)) return {60, 60, 60};
        const auto c = ui::colormap_color(ui::Colormap::Sequential, hi > lo ? (x - lo) / (hi - lo) : 0.0f);
        return {c[0], c[1], c[2]};
    });
}

// Lines between the blocks of a square of n x n units over [p0, p0 + side]: blocks of block_w
// units across and block_h down, the last ones cut at n; only where blocks are 4 px or more.
void BlockLines(ImDrawList* dl, ImVec2 p0, float side, std::size_t n, std::size_t block_w, std::size_t block_h,
                ImU32 colour) {
    const float unit = side / static_cast<float>(n);
    if (block_w * unit < 4.0f || block_h * unit < 4.0f) return;
    for (std::size_t k = 0; k * block_w < n + block_w; ++k) {
        const float x = std::floor(p0.x + std::min(n, k * block_w) * unit) + 0.5f;
        dl->AddLine(ImVec2(x, p0.y), ImVec2(x, p0.y + side), colour);
    }
    for (std::size_t k = 0; k * block_h < n + block_h; ++k) {
        const float y = std::floor(p0.y + std::min(n, k * block_h) * unit) + 0.5f;
        dl->AddLine(ImVec2(p0.x, y), ImVec2(p0.x + side, y), colour);
    }
}

void Animate(UiState& ui, std::size_t* position, std::size_t count, double interval) {
    if (!ui.beyond.playing || !ui.frame.animate || count == 0) return;
    ui.frame.animating = true;
    if (ui.frame.now - ui.beyond.last_advance >= interval) {
        *position = (*position + 1) % count;
        ui.beyond.last_advance = ui.frame.now;
    }
}

// ---- flash ------------------------------------------------------------------------------------
void DrawFlash(const Trace& trace, const FlashRecord& r, UiState& ui) {
    ui::BeyondView& v = ui.beyond;
    if (r.tiles.empty()) {
        EmptyState(_("No tiles recorded"), _("The flash path recorded no tiles for this config."));
        return;
    }
    Animate(ui, &v.tile, r.tiles.size(), 0.25);
    v.tile = std::min(v.tile, r.tiles.size() - 1);
    const FlashTile& t = r.tiles[v.tile];
    if (ImGui::SmallButton(v.playing ? _("pause") : _("play"))) v.playing = !v.playing;
    ImGui::SameLine();
    int tile = static_cast<int>(v.tile);
    ImGui::SetNextItemWidth(-1);
    if (ImGui::SliderInt("##tile", &tile, 0, static_cast<int>(r.tiles.size()) - 1, _("tile %d")))
        v.tile = static_cast<std::size_t>(tile), v.playing = false;
    ImGui::PushTextWrapPos(0.0f);
    WrappedTextF(_("tile (%zu, %zu) of %zu x %zu: query rows %zu..%zu, keys %zu..%zu%s"), t.row_block, t.col_block,
                r.row_blocks, r.col_blocks, t.row0, t.row0 + t.rows - 1, t.col0, t.col0 + t.cols - 1,
                t.skipped ? _(" (skipped: every key hidden)") : "");
    ImGui::PopTextWrapPos();
    ImGui::TextDisabled(_("batch item %zu, head %zu; Br x Bc = %zu x %zu"), r.batch_item, r.head, r.tile_rows,
                        r.tile_cols);
    if (r.tiles_truncated)
        ImGui::TextColored(WarnColor(), _("only the first %zu tiles were recorded (the others were computed the same way)"),
                           r.tiles.size());

    // The N x N' grid of tiles (never stored: only one Br x Bc tile exists at a time) and O [N, c].
    // The tiles are one picture, a pixel per tile (up to 512 a side), redrawn when the animation
    // moves on; lines between tiles where they are 4 px or more.
    ImDrawList* dl = ImGui::GetWindowDrawList();
    // (smaller while the Attention map panel shares the column, so the memory plot still fits)
    const float side = std::min(ImGui::GetContentRegionAvail().x * 0.5f,
                                (ui.flash_map.visible ? 110.0f : 170.0f) * ImGui::GetFontSize() / 15.0f);
    const ImVec2 p0 = ImGui::GetCursorScreenPos();
    const float scale = side / static_cast<float>(r.tokens);
    // the picture spans whole blocks; the last block is cut at N
    const ImVec2 uv1(static_cast<float>(r.tokens) / static_cast<float>(r.col_blocks * r.tile_cols),
                     static_cast<float>(r.tokens) / static_cast<float>(r.row_blocks * r.tile_rows));
    DrawPicture(dl, ui, "beyond/flash_tiles", std::to_string(ui.frame.trace_generation) + "/" + std::to_string(v.tile),
                p0, ImVec2(p0.x + side, p0.y + side), uv1, [&] {
                    const auto states = ui::tile_states(r, v.tile);
                    return ui::cell_picture(r.row_blocks, r.col_blocks, 512, [&](std::size_t rb, std::size_t cb) {
                        return ui::tile_colour(states[rb * r.col_blocks + cb]);
                    });
                });
    BlockLines(dl, p0, side, r.tokens, r.tile_cols, r.tile_rows, IM_COL32(20, 20, 20, 255));
    dl->AddRect(p0, ImVec2(p0.x + side, p0.y + side), IM_COL32(200, 200, 200, 255));
    // The current tile, at least 2 px a side so it shows among thousands of tiles.
    const ImVec2 c0(p0.x + t.col0 * scale, p0.y + t.row0 * scale);
    const ImVec2 c1(std::max(c0.x + 2.0f, p0.x + (t.col0 + t.cols) * scale),
                    std::max(c0.y + 2.0f, p0.y + (t.row0 + t.rows) * scale));
    dl->AddRectFilled(c0, c1, Col(ui::tile_colour(ui::TileState::Current)));
    dl->AddText(ImVec2(p0.x, p0.y + side + 2), ImGui::GetColorU32(ImGuiCol_TextDisabled), _("keys N' ->"));
    // O [N, c]: rows whose block is finished are final (O / l)
    const std::size_t done_rows = ui::finished_rows(r, v.tile);
    const float ox = p0.x + side + 14, ow = 36;
    dl->AddRectFilled(ImVec2(ox, p0.y), ImVec2(ox + ow, p0.y + side), Col(ui::tile_colour(ui::TileState::Pending)));
    if (done_rows)
        dl->AddRectFilled(ImVec2(ox, p0.y), ImVec2(ox + ow, p0.y + done_rows * scale),
                          Col(ui::tile_colour(ui::TileState::Done)));
    dl->AddRectFilled(ImVec2(ox, p0.y + t.row0 * scale), ImVec2(ox + ow, p0.y + (t.row0 + t.rows) * scale),
                      Col(ui::tile_colour(ui::TileState::Current), 160));
    dl->AddRect(ImVec2(ox, p0.y), ImVec2(ox + ow, p0.y + side), IM_COL32(200, 200, 200, 255));
    dl->AddText(ImVec2(ox, p0.y + side + 2), ImGui::GetColorU32(ImGuiCol_Text), "O [N, c]");
    // legend
    const float lx = ox + ow + 12;
    float ly = p0.y;
    auto legend = [&](ImU32 col, const char* text) {
        dl->AddRectFilled(ImVec2(lx, ly + 3), ImVec2(lx + 10, ly + 13), col);
        dl->AddText(ImVec2(lx + 14, ly), ImGui::GetColorU32(ImGuiCol_Text), text);
        ly += ImGui::GetTextLineHeightWithSpacing();
    };
    legend(Col(ui::tile_colour(ui::TileState::Current)), _("current tile"));
    legend(Col(ui::tile_colour(ui::TileState::Done)), _("done"));
    legend(Col(ui::tile_colour(ui::TileState::Skipped)), _("skipped (mask)"));
    legend(Col(ui::tile_colour(ui::TileState::Pending)), _("not yet"));
    ly += 4;
    char rows_text[96];
    std::snprintf(rows_text, sizeof rows_text, _("final rows: %zu / %zu"), done_rows, r.tokens);
    dl->AddText(ImVec2(lx, ly), ImGui::GetColorU32(ImGuiCol_Text), rows_text);
    ImGui::Dummy(ImVec2(side, side + ImGui::GetTextLineHeightWithSpacing() + 4));

    // m and l of the current block's rows after this tile
    const float plot_w = (ImGui::GetContentRegionAvail().x - ImGui::GetStyle().ItemSpacing.x) * 0.5f;
    // Titles above the plots, never over their lines.
    const float title_x = ImGui::GetCursorPosX();
    char m_title[64];
    std::snprintf(m_title, sizeof m_title, _("running max m (%zu rows)"), t.rows);
    ImGui::TextDisabled("%s", m_title);
    if (ImGui::CalcTextSize(m_title).x < plot_w)  // side by side when the first fits above its plot
        ImGui::SameLine(title_x + plot_w + ImGui::GetStyle().ItemSpacing.x);
    ImGui::TextDisabled("%s", _("running sum l"));
    std::vector<float> m(t.m);
    for (float& x : m) if (std::isinf(x)) x = 0.0f;
    ImGui::PlotLines("##m", m.data(), static_cast<int>(m.size()), 0, nullptr, FLT_MAX, FLT_MAX, ImVec2(plot_w, 54));
    ImGui::SameLine();
    ImGui::PlotLines("##l", t.l.data(), static_cast<int>(t.l.size()), 0, nullptr, 0.0f, FLT_MAX, ImVec2(plot_w, 54));
    ImGui::PushTextWrapPos(0.0f);
    ImGui::TextDisabled("%s", _("each tile: m_new = max(m, rowmax S); l = exp(m - m_new) l + rowsum exp(S - m_new); "
                                 "O = exp(m - m_new) O + exp(S - m_new) V"));
    ImGui::PopTextWrapPos();

    // memory
    ImGui::Separator();
    ImGui::PushTextWrapPos(0.0f);
    ImGui::TextColored(OkColor(), _("N x N matrix never materialized: peak %s vs %s (standard)"),
                       format_bytes(r.memory.flash_bytes).c_str(), format_bytes(r.memory.standard_bytes).c_str());
    ImGui::PopTextWrapPos();
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip("%s", _("working memory of the attention core, float32: q, k, v, output + (standard) the "
                                   "two [B, h, N, N] tensors alive at softmax, or (flash) m, l and one tile"));
    const std::vector<MemoryPoint>& pts = r.memory_vs_tokens;
    if (pts.size() >= 2) {
        const ImVec2 q0 = ImGui::GetCursorScreenPos();
        const float w = ImGui::GetContentRegionAvail().x - 84;
        const float h = std::max(90.0f, ImGui::GetContentRegionAvail().y - ImGui::GetTextLineHeightWithSpacing() - 6);
        const double x_lo = std::log2(double(pts.front().tokens)), x_hi = std::log2(double(pts.back().tokens));
        double y_lo = 1e300, y_hi = 0;
        for (const auto& p : pts) {
            y_lo = std::min({y_lo, std::log10(double(p.flash_bytes)), std::log10(double(p.standard_bytes))});
            y_hi = std::max({y_hi, std::log10(double(p.flash_bytes)), std::log10(double(p.standard_bytes))});
        }
        auto at = [&](std::size_t n, std::uint64_t bytes) {
            const float x = float((std::log2(double(n)) - x_lo) / std::max(1e-9, x_hi - x_lo));
            const float y = float((std::log10(double(bytes)) - y_lo) / std::max(1e-9, y_hi - y_lo));
            return ImVec2(q0.x + 8 + x * w, q0.y + h - y * (h - 8));
        };
        dl->AddRect(ImVec2(q0.x + 8, q0.y), ImVec2(q0.x + 8 + w, q0.y + h), IM_COL32(90, 90, 90, 255));
        const ImU32 std_col = IM_COL32(230, 90, 70, 255), flash_col = IM_COL32(80, 200, 140, 255);
        for (std::size_t i = 0; i + 1 < pts.size(); ++i) {
            dl->AddLine(at(pts[i].tokens, pts[i].standard_bytes), at(pts[i + 1].tokens, pts[i + 1].standard_bytes), std_col, 2);
            dl->AddLine(at(pts[i].tokens, pts[i].flash_bytes), at(pts[i + 1].tokens, pts[i + 1].flash_bytes), flash_col, 2);
        }
        const ImVec2 now_std = at(r.tokens, r.memory.standard_bytes), now_flash = at(r.tokens, r.memory.flash_bytes);
        dl->AddCircleFilled(now_std, 4, std_col);
        dl->AddCircleFilled(now_flash, 4, flash_col);
        dl->AddText(ImVec2(q0.x + 14, q0.y + 2), std_col, _("standard ~ N^2"));
        dl->AddText(ImVec2(q0.x + 14, q0.y + 2 + ImGui::GetTextLineHeight()), flash_col, _("flash ~ N"));
        const std::string right = format_bytes(pts.back().standard_bytes);
        dl->AddText(ImVec2(q0.x + 12 + w, q0.y), ImGui::GetColorU32(ImGuiCol_TextDisabled), right.c_str());
        const std::string low = format_bytes(pts.front().flash_bytes);
        dl->AddText(ImVec2(q0.x + 12 + w, q0.y + h - ImGui::GetTextLineHeight()), ImGui::GetColorU32(ImGuiCol_TextDisabled),
                    low.c_str());
        char axis[96];
        std::snprintf(axis, sizeof axis, _("N = %zu .. %zu (log), bytes (log); dots: this N = %zu"), pts.front().tokens,
                      pts.back().tokens, r.tokens);
        dl->AddText(ImVec2(q0.x + 8, q0.y + h + 2), ImGui::GetColorU32(ImGuiCol_TextDisabled), axis);
        ImGui::Dummy(ImVec2(w, h + ImGui::GetTextLineHeight() + 4));
    }
    (void)trace;
}

// ---- KV cache ---------------------------------------------------------------------------------
void DrawKv(const Trace& trace, const KvRecord& r, UiState& ui) {
    ui::BeyondView& v = ui.beyond;
    if (r.tokens.empty()) return;
    Animate(ui, &v.token, r.tokens.size(), 0.4);
    v.token = std::min(v.token, r.tokens.size() - 1);
    const KvToken& tok = r.tokens[v.token];
    const std::size_t N = r.tokens.size(), h = trace.config.heads;
    if (ImGui::SmallButton(v.playing ? _("pause") : _("play"))) v.playing = !v.playing;
    ImGui::SameLine();
    int t = static_cast<int>(v.token);
    // The value beside the slider, where its handle cannot cover it.
    ImGui::SetNextItemWidth(std::max(ImGui::GetContentRegionAvail().x - ImGui::GetFontSize() * 10.0f, ImGui::GetFontSize() * 4.0f));
    if (ImGui::SliderInt("##token", &t, 0, static_cast<int>(N) - 1, ""))
        v.token = static_cast<std::size_t>(t), v.playing = false;
    ImGui::SameLine();
    ImGui::Text(_("token t = %d arrives"), t);
    ImGui::Text(_("k_cache, v_cache: %s  (append k_t, v_t; nothing is recomputed)"),
                format_shape(tok.cache_shape).c_str());
    // the cache growing: one cell per token slot
    ImDrawList* dl = ImGui::GetWindowDrawList();
    const ImVec2 p0 = ImGui::GetCursorScreenPos();
    const float w = ImGui::GetContentRegionAvail().x, cell = std::min(22.0f, w / N);
    for (std::size_t i = 0; i < N; ++i) {
        const ImU32 col = i < tok.t ? IM_COL32(60, 150, 110, 255) : (i == tok.t ? IM_COL32(240, 160, 40, 255)
                                                                               : IM_COL32(38, 38, 42, 255));
        dl->AddRectFilled(ImVec2(p0.x + i * cell, p0.y), ImVec2(p0.x + (i + 1) * cell - 1, p0.y + 16), col);
    }
    ImGui::Dummy(ImVec2(w, 18));
    ImGui::TextDisabled("%s", _("green: cached keys/values, orange: the new token, grey: not arrived yet"));

    // the new token's attention row over the cache
    int head = static_cast<int>(std::min(v.head, h - 1));
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 8);
    if (ImGui::SliderInt(_("head"), &head, 0, static_cast<int>(h) - 1)) v.head = static_cast<std::size_t>(head);
    if (!tok.attn.empty()) {
        const float* row = tok.attn.data() + v.head * (tok.t + 1);
        ImGui::TextDisabled(_("attention of token %zu over %zu cached keys (batch item 0)"), tok.t, tok.t + 1);
        ImGui::PlotHistogram("##row", row, static_cast<int>(tok.t + 1), 0, nullptr, 0.0f, FLT_MAX,
                             ImVec2(ImGui::GetContentRegionAvail().x, 90));
    } else {
        ImGui::TextDisabled("%s", _("attention rows not kept for this size"));
    }
    // FLOPs
    ImGui::Separator();
    double cached = 0, recompute = 0;
    ui::kv_cumulative_flops(r, v.token, &cached, &recompute);
    ImGui::Text(_("this token: %.3g MFLOP with the cache, %.3g MFLOP recomputing tokens 0..%zu"),
                tok.flops_cached * 1e-6, tok.flops_recompute * 1e-6, tok.t);
    ImGui::Text(_("so far: %.3g vs %.3g MFLOP"), cached * 1e-6, recompute * 1e-6);
    const float bar_w = ImGui::GetContentRegionAvail().x;
    ImGui::ProgressBar(static_cast<float>(cached / std::max(1.0, recompute)), ImVec2(bar_w, 0), _("with cache"));
    ImGui::ProgressBar(1.0f, ImVec2(bar_w, 0), _("recompute everything"));
    ImGui::TextColored(OkColor(), _("whole sequence: %.3g vs %.3g GFLOP, %.1f%% saved (%.1fx fewer)"),
                       r.flops_cached * 1e-9, r.flops_recompute * 1e-9,
                       100.0 * (1.0 - double(r.flops_cached) / double(r.flops_recompute)),
                       double(r.flops_recompute) / double(r.flops_cached));
    ImGui::TextDisabled("%s", _("output row t equals row t of full causal attention (tested within 1e-5)"));
}

// ---- windows ----------------------------------------------------------------------------------
// One windowed stage: `prefix` "" for the first, kStage2Prefix for the one after patch merging.
void DrawWindows(const Trace& trace, const WindowRecord& r, std::size_t h, const std::string& prefix, UiState& ui) {
    ui::BeyondView& v = ui.beyond;
    const std::size_t B = trace.config.batch, nW = r.windows, M2 = r.window * r.window;
    v.window = std::min(v.window, B * nW - 1);
    v.head = std::min(v.head, h - 1);
    ImGui::PushTextWrapPos(0.0f);
    if (nW == 1)
        WrappedTextF(_("%zu x %zu patch grid, one window of %zu x %zu covers it whole"), r.grid, r.grid, r.window, r.window);
    else
        WrappedTextF(_("%zu x %zu patch grid, windows of %zu x %zu%s: %zu windows per image"), r.grid, r.grid, r.window,
                     r.window, r.shift ? _(", shifted by M/2") : "", nW);
    ImGui::PopTextWrapPos();
    // A slider of one choice is no choice: shown only when there are windows (or heads) to pick.
    int win = static_cast<int>(v.window), head = static_cast<int>(v.head);
    bool slider = false;
    if (B * nW > 1) {
        ImGui::SetNextItemWidth(ImGui::GetFontSize() * 10);
        if (ImGui::SliderInt(_("window"), &win, 0, static_cast<int>(B * nW) - 1)) v.window = std::size_t(win);
        slider = true;
    }
    if (h > 1) {
        if (slider) ImGui::SameLine();
        ImGui::SetNextItemWidth(ImGui::GetFontSize() * 6);
        if (ImGui::SliderInt(_("head##win"), &head, 0, static_cast<int>(h) - 1)) v.head = std::size_t(head);
    }
    const std::size_t item = v.window / nW, local = v.window % nW;

    // the patch grid coloured by window; the selected window outlined
    ImDrawList* dl = ImGui::GetWindowDrawList();
    const float side = std::min((ImGui::GetContentRegionAvail().x - 16) * 0.5f, 230.0f);
    const ImVec2 p0 = ImGui::GetCursorScreenPos();
    const float cell = side / r.grid;
    static const ImU32 palette[] = {IM_COL32(86, 180, 233, 255), IM_COL32(230, 159, 0, 255), IM_COL32(0, 158, 115, 255),
                                    IM_COL32(204, 121, 167, 255), IM_COL32(240, 228, 66, 255), IM_COL32(213, 94, 0, 255),
                                    IM_COL32(0, 114, 178, 255), IM_COL32(170, 170, 170, 255)};
    const ImVec4 bg = ImGui::GetStyleColorVec4(ImGuiCol_WindowBg);  // the other windows: 110 / 255 over the panel
    DrawPicture(dl, ui, "beyond/windows",
                prefix + std::to_string(ui.frame.trace_generation) + "/" + std::to_string(local), p0,
                ImVec2(p0.x + side, p0.y + side), ImVec2(1, 1), [&] {
                    return ui::cell_picture(r.grid, r.grid, 512, [&](std::size_t i, std::size_t j) {
                        const std::size_t w = ui::window_of_token(r, i, j);
                        const ImVec4 c = ImGui::ColorConvertU32ToFloat4(palette[w % 8]);
                        const float a = w == local ? 1.0f : 110.0f / 255.0f;
                        const auto mix = [a](float fg, float back) {
                            return static_cast<std::uint8_t>(std::lround(255.0f * (a * fg + (1.0f - a) * back)));
                        };
                        return std::array<std::uint8_t, 3>{mix(c.x, bg.x), mix(c.y, bg.y), mix(c.z, bg.z)};
                    });
                });
    BlockLines(dl, p0, side, r.grid, 1, 1, IM_COL32(20, 20, 20, 120));
    ImGui::InvisibleButton("##grid", ImVec2(side, side));
    if (ImGui::IsItemHovered()) {
        const ImVec2 m = ImGui::GetIO().MousePos;
        const std::size_t j = std::min(r.grid - 1, std::size_t(std::max(0.0f, (m.x - p0.x) / cell)));
        const std::size_t i = std::min(r.grid - 1, std::size_t(std::max(0.0f, (m.y - p0.y) / cell)));
        ImGui::SetTooltip(_("patch (%zu, %zu): window %zu"), i, j, ui::window_of_token(r, i, j));
        if (ImGui::IsItemClicked()) v.window = item * nW + ui::window_of_token(r, i, j);
    }
    // the selected window's attention [M*M, M*M]
    const Step* attn = trace.find(prefix + "attn");
    const ImVec2 q0(p0.x + side + 16, p0.y);
    float hi = 0.0f;
    if (attn) {
        const float* values = attn->tensor().values.data() + (v.window * h + v.head) * M2 * M2;
        for (std::size_t k = 0; k < M2 * M2; ++k) hi = std::max(hi, values[k]);
        const Step* masked = trace.find(prefix + "masked");  // shifted windows: -inf where Swin's mask hides a pair
        const float* hidden = masked ? masked->tensor().values.data() + (v.window * h + v.head) * M2 * M2 : nullptr;
        const std::string key = prefix + std::to_string(ui.frame.trace_generation) + "/" + std::to_string(v.window) +
                                "/" + std::to_string(v.head);
        DrawPicture(dl, ui, "beyond/window_attn", key, q0, ImVec2(q0.x + side, q0.y + side), ImVec2(1, 1),
                    [&] { return ValuesPicture(values, M2, M2, 0.0f, hi, hidden); });
        dl->AddRect(q0, ImVec2(q0.x + side, q0.y + side), IM_COL32(200, 200, 200, 255));
    }
    ImGui::TextDisabled("%s", r.shift ? _("grid rolled by -M/2") : _("one colour per window"));
    ImGui::SameLine(side + 16 + ImGui::GetStyle().WindowPadding.x);
    ImGui::Text(_("attn[%zu, %zu]: %zu x %zu, max %.3g"), v.window, v.head, M2, M2, hi);
    ImGui::TextDisabled(_("image %zu, window %zu of %zu (click a patch to pick its window)"), item, local, nW);
    ImGui::PushTextWrapPos(0.0f);
    if (r.shift)
        ImGui::TextDisabled("%s", _("dark cells: masked pairs (the two tokens were not neighbours before the roll; "
                                     "Swin's mask)"));
    ImGui::TextDisabled("%s", _("the partition is the steps grid .. windows, the reverse win_merge .. tokens_out; "
                                 "the Heads panel shows every head of the selected step's window (batch axis = window)"));
    ImGui::PopTextWrapPos();
}

// ---- patch merging ------------------------------------------------------------------------------
// The colour of each corner of a 2 x 2 patch: x0 top-left, x1 bottom-left, x2 top-right, x3 bottom-right.
constexpr std::array<std::uint8_t, 3> kCornerColours[4] = {
    {86, 180, 233}, {230, 159, 0}, {0, 158, 115}, {204, 121, 167}};

// Which of x0..x3 the token (row, col) of the grid goes to: torch.cat([x0, x1, x2, x3], -1)'s order.
std::size_t CornerOf(std::size_t row, std::size_t col) { return (row % 2) + 2 * (col % 2); }

// One token's channels as a bar of `parts` blocks (in the corners' colours when there are four),
// each `unit` pixels wide, and its label beside it (wrapped at the panel's edge).
void ChannelBar(float unit, std::size_t parts, const char* label, int lit_corner) {
    ImDrawList* dl = ImGui::GetWindowDrawList();
    const ImVec2 p = ImGui::GetCursorScreenPos();
    const float height = ImGui::GetFontSize();
    for (std::size_t k = 0; k < parts; ++k) {
        const std::size_t corner = parts == 4 ? k : 4;
        const std::array<std::uint8_t, 3> c =
            corner < 4 ? kCornerColours[corner] : std::array<std::uint8_t, 3>{150, 150, 150};
        const int alpha = lit_corner >= 0 && corner < 4 && int(corner) != lit_corner ? 90 : 255;
        dl->AddRectFilled(ImVec2(p.x + k * unit, p.y), ImVec2(p.x + (k + 1) * unit - 1, p.y + height), Col(c, alpha));
    }
    ImGui::Dummy(ImVec2(4 * unit, height));
    ImGui::SameLine();
    ImGui::TextUnformatted(label);
}

void DrawPatchMerge(const Trace& trace, const PatchMergeRecord& m, UiState& ui) {
    const std::size_t H = m.grid, H2 = m.merged_grid, C = m.dim;
    ImGui::Text(_("patch merging: %zu x %zu grid, C = %zu, %zu heads -> %zu x %zu grid, 2C = %zu, %zu heads"), H, H, C,
                m.heads, H2, H2, m.merged_dim, m.merged_heads);
    // The selected x0..x3 step lights up its corner of every patch.
    int corner = -1;
    for (int k = 0; k < 4; ++k)
        if (ui.selection.step == "patch_merge_x" + std::to_string(k)) corner = k;

    ImDrawList* dl = ImGui::GetWindowDrawList();
    const float side = std::min((ImGui::GetContentRegionAvail().x - 60) / 1.5f, 220.0f), half = side * 0.5f;
    const ImVec2 g0 = ImGui::GetCursorScreenPos();
    const std::string key = std::to_string(ui.frame.trace_generation) + "/" + std::to_string(corner);
    // Dimmed unless it is the selected corner (or none is selected).
    auto corner_colour = [corner](std::size_t k) {
        const float a = corner < 0 || int(k) == corner ? 1.0f : 0.3f;
        std::array<std::uint8_t, 3> c = kCornerColours[k];
        for (auto& x : c) x = static_cast<std::uint8_t>(std::lround(a * x + (1.0f - a) * 40.0f));
        return c;
    };
    DrawPicture(dl, ui, "beyond/merge_grid", key, g0, ImVec2(g0.x + side, g0.y + side), ImVec2(1, 1), [&] {
        return ui::cell_picture(H, H, 512, [&](std::size_t i, std::size_t j) { return corner_colour(CornerOf(i, j)); });
    });
    BlockLines(dl, g0, side, H, 1, 1, IM_COL32(20, 20, 20, 90));
    BlockLines(dl, g0, side, H, 2, 2, IM_COL32(255, 255, 255, 230));  // the 2 x 2 patches that merge
    // the arrow, then the merged grid: the same cell size, half the side, 4C numbers in each cell
    const float ax = g0.x + side + 8, ay = g0.y + half;
    dl->AddLine(ImVec2(ax, ay), ImVec2(ax + 34, ay), ImGui::GetColorU32(ImGuiCol_Text), 2.0f);
    dl->AddTriangleFilled(ImVec2(ax + 40, ay), ImVec2(ax + 32, ay - 5), ImVec2(ax + 32, ay + 5),
                          ImGui::GetColorU32(ImGuiCol_Text));
    const ImVec2 q0(ax + 48, g0.y + half * 0.5f);
    DrawPicture(dl, ui, "beyond/merge_cat", key, q0, ImVec2(q0.x + half, q0.y + half), ImVec2(1, 1), [&] {
        return ui::cell_picture(H2, 4 * H2, 512, [&](std::size_t, std::size_t j) { return corner_colour(j % 4); });
    });
    BlockLines(dl, q0, half, H2, 1, 1, IM_COL32(255, 255, 255, 230));
    ImGui::Dummy(ImVec2(side + 56 + half, side + 4));
    ImGui::TextDisabled("%s", _("left: the H x W grid, C numbers per token; right: the H/2 x W/2 grid at the same "
                                 "cell size, 4C numbers per token"));
    const float column = ImGui::GetContentRegionAvail().x * 0.5f;
    for (int k = 0; k < 4; ++k) {
        static const char* names[] = {"x0 [0::2, 0::2]", "x1 [1::2, 0::2]", "x2 [0::2, 1::2]", "x3 [1::2, 1::2]"};
        const ImVec2 c = ImGui::GetCursorScreenPos();
        const float s = ImGui::GetFontSize() * 0.8f;
        dl->AddRectFilled(ImVec2(c.x, c.y + 2), ImVec2(c.x + s, c.y + 2 + s), Col(kCornerColours[k]));
        ImGui::Dummy(ImVec2(s, s));
        ImGui::SameLine();
        ImGui::TextUnformatted(names[k]);
        if (k % 2 == 0) ImGui::SameLine(column);
    }

    // the channels of one token through the merge: C, cat 4C, LayerNorm(4C), reduction 2C
    const float unit = std::min(ImGui::GetContentRegionAvail().x * 0.3f / 4.0f, 40.0f);
    char label[96];
    std::snprintf(label, sizeof label, _("one token: C = %zu"), C);
    ChannelBar(unit, 1, label, -1);
    std::snprintf(label, sizeof label, _("cat: 4C = %zu, then LayerNorm(4C)"), 4 * C);
    ChannelBar(unit, 4, label, corner);
    std::snprintf(label, sizeof label, _("reduction: Linear(4C, 2C) -> 2C = %zu"), m.merged_dim);
    ChannelBar(unit, 2, label, -1);
    ImGui::TextDisabled(
        _("tokens: N = %zu -> N/4 = %zu; head dim c = %zu stays: Swin doubles the heads with the channels"), H * H,
        H2 * H2, trace.config.head_dim());
    if (m.stage2.window == H2)
        ImGui::TextDisabled(
            _("stage 2: one %zu x %zu window covers the merged grid, so it is not shifted (Swin's rule)"), H2, H2);
    else
        ImGui::TextDisabled(_("stage 2: windows of %zu x %zu on the merged grid%s"), m.stage2.window, m.stage2.window,
                            m.stage2.shift ? _(", shifted by M/2") : "");
}

// ---- a mask on the textbook path -----------------------------------------------------------------
void DrawMask(const Trace& trace, UiState& ui) {
    const AttentionConfig& c = trace.config;
    ImGui::Text(_("mask: %s"), ui::tr_core(mask_summary(c)));
    ImGui::PushTextWrapPos(0.0f);
    ImGui::TextDisabled("%s", _("hidden scores become -inf before softmax (the masked step), so their weights are exactly "
                                 "0. Padding queries still see the valid keys; the row-sum check covers the valid rows."));
    ImGui::PopTextWrapPos();
    const Step* masked = trace.find("masked");
    if (!masked) return;
    const Shape s = masked->shape();
    const std::size_t N = s[2];
    ImDrawList* dl = ImGui::GetWindowDrawList();
    const float side = std::min(ImGui::GetContentRegionAvail().x * 0.45f, 200.0f);
    for (std::size_t b = 0; b < std::min<std::size_t>(s[0], 2); ++b) {
        const ImVec2 p0 = ImGui::GetCursorScreenPos();
        // N x N' pairs as one picture (at most 256 pixels a side): seen or hidden.
        DrawPicture(dl, ui, "beyond/mask" + std::to_string(b), std::to_string(ui.frame.trace_generation), p0,
                    ImVec2(p0.x + side, p0.y + side), ImVec2(1, 1), [&] {
                        return ui::cell_picture(N, N, 256, [&](std::size_t i, std::size_t j) {
                            return std::isinf(masked->tensor().values(b, 0, i, j)) ? std::array<std::uint8_t, 3>{60, 60, 60}
                                                                                    : std::array<std::uint8_t, 3>{80, 200, 140};
                        });
                    });
        char label[64];
        std::snprintf(label, sizeof label, _("batch item %zu: keys seen"), b);
        dl->AddText(ImVec2(p0.x, p0.y + side + 2), ImGui::GetColorU32(ImGuiCol_Text), label);
        ImGui::Dummy(ImVec2(side, side + ImGui::GetTextLineHeightWithSpacing()));
        if (b == 0) ImGui::SameLine(0, 20);
    }
}

// The windows of the stage the selected step belongs to, or the patch merging between them.
void DrawWindowedPath(const Trace& trace, UiState& ui) {
    const PatchMergeRecord* merge = trace.beyond->merge.get();
    const std::string& step = ui.selection.step;
    if (merge && step.rfind("patch_merge_", 0) == 0) {
        DrawPatchMerge(trace, *merge, ui);
    } else if (merge && step.rfind(kStage2Prefix, 0) == 0) {
        ImGui::TextColored(OkColor(), _("stage 2, after patch merging: %zu x %zu grid, 2C = %zu, %zu heads"),
                           merge->merged_grid, merge->merged_grid, merge->merged_dim, merge->merged_heads);
        DrawWindows(trace, merge->stage2, merge->merged_heads, kStage2Prefix, ui);
    } else {
        DrawWindows(trace, *trace.beyond->windows, trace.config.heads, "", ui);
        if (merge)
            ImGui::TextDisabled(_("then patch merging halves the grid to %zu x %zu and doubles the channels to %zu "
                                   "(the patch_merge_ steps), and stage 2 repeats the block (the stage2_ steps)"),
                                merge->merged_grid, merge->merged_grid, merge->merged_dim);
    }
}

}  // namespace

void DrawBeyondPanel(const Trace& trace, UiState& ui) {
    const bool masked = trace.config.masked() && trace.find("masked");
    if (!trace.beyond && !masked) return;
    bool& visible = trace.beyond ? ui.beyond.visible : ui.beyond.mask_visible;
    if (!visible) return;
    if (ui.beyond.generation != ui.frame.trace_generation) {  // a new trace: start its animation again
        ui.beyond.generation = ui.frame.trace_generation;
        ui.beyond.tile = ui.beyond.token = ui.beyond.window = 0;
        ui.beyond.last_advance = ui.frame.now;
        // A screenshot: a still frame mid-animation, on a computed tile.
        if (ui.frame.screenshot && trace.beyond && trace.beyond->flash) {
            const auto& tiles = trace.beyond->flash->tiles;
            ui.beyond.tile = tiles.size() * 3 / 5;
            while (ui.beyond.tile > 0 && ui.beyond.tile < tiles.size() && tiles[ui.beyond.tile].skipped) --ui.beyond.tile;
        }
        if (ui.frame.screenshot && trace.beyond && trace.beyond->kv)
            ui.beyond.token = trace.beyond->kv->tokens.size() * 2 / 3;
        if (trace.beyond && trace.beyond->windows && trace.beyond->windows->shift)  // the window that wraps: masked pairs
            ui.beyond.window = trace.beyond->windows->windows - 1;
    }
    // One window per path (each remembers its place); on flash the Attention map panel takes the
    // Row sums panel's place (there is no softmax output to check).
    PlaceWindow(ui, ui::Panel::Beyond);
    char title[128];
    const char* path = trace.beyond ? path_name(trace.beyond->path) : "mask";
    std::snprintf(title, sizeof title, "%s: %s###Beyond_%s", _("Beyond the textbook"), trace.beyond ? ui::tr_core(path) : _("mask"),
                  path);
    if (!ImGui::Begin(title, &visible)) {
        ImGui::End();
        return;
    }
    ImGui::PushTextWrapPos(0.0f);  // long lines wrap at the panel's edge
    if (trace.beyond && trace.beyond->flash) DrawFlash(trace, *trace.beyond->flash, ui);
    else if (trace.beyond && trace.beyond->kv) DrawKv(trace, *trace.beyond->kv, ui);
    else if (trace.beyond && trace.beyond->windows) DrawWindowedPath(trace, ui);
    else DrawMask(trace, ui);
    ImGui::PopTextWrapPos();
    ImGui::End();
}

}  // namespace attnscope
