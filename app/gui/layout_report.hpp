// Where the last frame put each panel (--layout-json, ATTNSCOPE_STATE_JSON): ImGui's plain
// top-level windows, back to front, each with the share of it that the windows in front leave in
// sight, whether it scrolls and what it cuts off with no scrollbar to reach it (its windows' and
// table columns' content past their clip, in pixels); the main menu bar as its height. The one
// file of the app that reads ImGui's internals for a report.
#pragma once

#include <string>

namespace attnscope {

// The report as JSON (ui::layout_report_json).
std::string LayoutReport();

}  // namespace attnscope
