// Shared drawing helpers for the panels: axis boxes and coloured shapes, the heatmap widget
// (zoom, pan, cell grid, hover, highlighted rows), the colour legend, empty states.
#pragma once

#include <imgui.h>

#include <cstdint>
#include <string>
#include <vector>

#include "logic/colormap.hpp"
#include "logic/core_text.hpp"
#include "logic/i18n.hpp"
#include "logic/slice.hpp"
#include "tensor.hpp"
#include "ui_state.hpp"

namespace attnscope {

using ui::_;  // every user-visible label: _("English text")

ImU32 AxisColorU32(const std::string& label, float alpha = 1.0f);
ImVec4 AxisColorVec4(const std::string& label);

// "[2, 16, 3, 8, 96]" with every number in its axis colour (hover: the axis labels).
void ColoredShape(const Shape& shape, const Axes& axes);

// One labelled axis box (label on top, size below) at pos; returns its size.
ImVec2 AxisBoxSize(const std::string& label, std::size_t dim);
void DrawAxisBox(ImDrawList* dl, ImVec2 pos, const std::string& label, std::size_t dim, float alpha = 1.0f,
                 bool outline = false);

// A drawn empty state: a framed, centred message in the remaining space (never a blank panel).
void EmptyState(const char* title, const char* detail);

// Text wrapped at the right edge of the content region with logic/wrap's line breaks: code, shapes
// and numbers stay whole, Chinese breaks between characters (ImGui's wrapping splits "attn @ v").
void WrappedText(const char* text);
void WrappedText(const ImVec4& color, const char* text);
// WrappedText of a printf format (the text up to 4 KiB).
void WrappedTextF(const char* format, ...) IM_FMTARGS(1);

// Rows of fields that fold on a narrow panel instead of running past its edge: the next item goes on
// this line, `spacing` after the last (the style's item spacing when negative), when its `width`
// pixels still fit before the region's right edge; else on the next line.
void SameLineIfFits(float width, float spacing = -1.0f);
// Whether `width` more pixels fit on the line of the last item, `spacing` after it, before the
// region's right edge.
bool FitsOnThisLine(float width, float spacing = -1.0f);
// The width of a widget whose frame (an input field, a check box's square) is `frame_width` wide,
// followed by its label (the text before "##").
float LabeledWidth(float frame_width, const char* label);
// The width of a button (or small button) showing this label.
float ButtonWidth(const char* label);

// A small (?) that shows text on hover.
void HelpMarker(const char* text);
// A tooltip of text wrapped at `width` font sizes (call when the item is hovered).
void WrappedTooltip(const char* text, float width = 28.0f);
// The last item takes the mouse wheel (call while it is hovered): the wheel zooms it instead of
// scrolling the window. ImGui 1.86 has this among its internals only, which widgets.cpp includes.
void TakeMouseWheel();

struct HeatmapOptions {
    const char* id = "heatmap";
    ImVec2 size{0, 0};
    InspectorView* view = nullptr;              // zoom/pan state; nullptr: fit, no interaction
    const std::vector<bool>* marked_rows = nullptr;  // rows outlined (and flagged at the left edge)
    ImU32 marked_color = IM_COL32(255, 40, 40, 255);
    bool outline_marked_rows = true;            // false: flags at the left edge only
    bool selected = false;                      // draw a highlight frame
    bool square_cells = false;                  // keep cells square, also for a slice that is not square
    bool fill = false;                          // a square slice too fills the whole size (the heads grid's
                                                // tiles, whose cells' aspect the grid bounds)
    bool fit_item = false;                      // the item as large as the map at zoom 1 (logic/map_fit.hpp:
                                                // fitted_map), so what follows on its line sits beside the map
    const std::vector<std::uint8_t>* cell_marks = nullptr;  // rows x cols: 0, or an index into mark_colors
    const ImU32* mark_colors = nullptr;         // outline colours, index 1 and up
};

struct HeatmapHover {
    bool hovered = false;
    bool clicked = false;  // released without dragging
    std::size_t row = 0, col = 0;
    ImVec2 image_min{0, 0}, image_max{0, 0};
    float cell_stretch = 1.0f;  // fit_item: how many times longer than wide the cells are (logic/map_fit.hpp)
};

// Draws slice (texture from HeatmapRenderer) into the area; returns what the mouse does.
HeatmapHover DrawHeatmap(std::uintptr_t texture, const ui::Slice2D& slice, const HeatmapOptions& options);

// A vertical colour bar with value labels (height = available or given).
void ColorLegend(const ui::ColorRange& range, float height, bool has_nan, bool has_inf, bool short_ticks = false);
float ColorLegendWidth();

// A log10 axis from x0 to x1 over whole decades covering the positive finite values in [lo, hi]
// (one decade when there are none: lo > hi). A bar plot of norms draws its grid with DrawDecades.
struct LogAxis {
    double d0 = 0, d1 = 1;  // the first and last decade: 10^d0 .. 10^d1
    float x0 = 0, x1 = 1;
    LogAxis(double lo, double hi, float x0, float x1);
    float x(double value) const;
};
// A faint line per decade from top to bottom, with "1e<d>" under bottom (every other one when many).
void DrawDecades(ImDrawList* dl, const LogAxis& axis, float top, float bottom);

// Text in the colour used for good / bad / warning states.
ImVec4 OkColor();
ImVec4 BadColor();
ImVec4 WarnColor();
ImVec4 DimColor();
// The steps read from the user's file (the others are computed by the reference).
ImVec4 LoadedColor();

}  // namespace attnscope
