// Where the panels are, as ImGui's internal window records say: one panel's window (for placing
// it), and the report of where the last frame put each panel (--layout-json, ATTNSCOPE_STATE_JSON):
// ImGui's plain top-level windows, back to front, each with the share of it that the windows in
// front leave in sight, whether it scrolls and what it cuts off with no scrollbar to reach it (its
// windows' and table columns' content past their clip, in pixels); the main menu bar as its
// height. The panels read ImGui's window records only through here.
#pragma once

#include <optional>
#include <string>

#include "logic/layout.hpp"

namespace attnscope {

// A panel's ImGui window, found by its English ID whatever its title.
struct PanelWindow {
    ui::Rect rect;  // where it is, at its size when not collapsed
    bool active;    // drawn in the last frame
};
// nullopt before the panel's first Begin (a window saved in imgui.ini is made by its first Begin).
std::optional<PanelWindow> FindPanelWindow(ui::Panel p);

// The report as JSON (ui::layout_report_json).
std::string LayoutReport();

}  // namespace attnscope
