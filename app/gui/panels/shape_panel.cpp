// Shape view: the selected step's axes as colour-coded boxes (input row -> output row, with
// lines showing where every axis went and an animated move when stepping), the reference's
// forward() with the current expression highlighted and each operand's shape written under it
// (the way TensorSensor annotates code), the einops formula and the contiguity note.
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "beyond.hpp"
#include "fonts.hpp"
#include "logic/axes.hpp"
#include "logic/narrative.hpp"
#include "panels/panels.hpp"
#include "widgets.hpp"

namespace attnscope {

namespace {

// The line of forward_lines(reference) a step sits on, or -1; a second stage's step sits on its first-stage line.
int LineOf(const std::string& step, Reference reference) {
    const bool stage2 = step.rfind(kStage2Prefix, 0) == 0;
    const StepInfo* info =
        step_info(stage2 ? step.substr(std::char_traits<char>::length(kStage2Prefix)) : step, reference);
    return info ? info->line : -1;
}

bool IsIdentChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.'; }

// Position of expr in line as a whole token (not inside a longer name), searching from `from`.
std::size_t FindToken(const std::string& line, const std::string& expr, std::size_t from = 0) {
    for (std::size_t p = line.find(expr, from); p != std::string::npos; p = line.find(expr, p + 1)) {
        const bool left_ok = p == 0 || !IsIdentChar(line[p - 1]) || line[p - 1] == '.';
        const std::size_t e = p + expr.size();
        const bool right_ok = e >= line.size() || !(std::isalnum(static_cast<unsigned char>(line[e])) || line[e] == '_');
        if (left_ok && right_ok && (p == 0 || line[p - 1] != '.')) return p;
    }
    return std::string::npos;
}

const Axes* AxesOf(const Trace& trace, const std::string& expr) {
    if (const Step* s = trace.find(expr)) return &s->axes();
    return nullptr;
}

// Where an operand is written in the line: its own name, or k.transpose(...) for k_t, or the
// variable the line uses for it.
std::pair<std::size_t, std::size_t> LocateOperand(const std::string& line, const std::string& expr,
                                                  std::size_t span_begin, std::size_t span_end) {
    auto within = [&](std::size_t p) { return p != std::string::npos && p >= span_begin && p < span_end; };
    std::size_t p = FindToken(line, expr, span_begin);
    if (within(p)) return {p, expr.size()};
    if (expr.size() > 2 && expr.compare(expr.size() - 2, 2, "_t") == 0) {
        const std::string base = expr.substr(0, expr.size() - 2) + ".transpose(";
        p = line.find(base, span_begin);
        if (within(p)) {
            const std::size_t close = line.find(')', p);
            if (close != std::string::npos) return {p, close + 1 - p};
        }
    }
    // What the reference's lines call the step: attn_drop is attn, context is (attn @ v) ...
    if (const StepInfo* info = step_info(expr); info && !info->written_as.empty()) {
        p = line.find(info->written_as, span_begin);
        if (within(p)) return {p, info->written_as.size()};
    }
    if (expr.rfind("self.", 0) == 0) {  // self.qkv.weight -> self.qkv
        const std::string module = expr.substr(0, expr.rfind('.'));
        p = line.find(module, span_begin);
        if (within(p)) return {p, module.size()};
    }
    return {std::string::npos, 0};
}

// One row of axis boxes: a step's name and its axes, laid out from the left.
struct Row {
    std::string name;
    Shape shape;
    Axes axes;
    std::vector<float> x;  // left edges
    std::vector<float> w;
};

// The colour of index k along an axis in the memory strips (neighbouring indices differ).
ImU32 IndexColor(std::size_t k) {
    static const ImU32 colors[] = {IM_COL32(80, 150, 255, 255), IM_COL32(255, 150, 50, 255), IM_COL32(90, 200, 110, 255),
                                   IM_COL32(215, 95, 200, 255), IM_COL32(240, 220, 80, 255), IM_COL32(120, 220, 230, 255)};
    return colors[k % (sizeof colors / sizeof colors[0])];
}

// A reshape that reads like a permute: the input flattened into its memory order, coloured by the
// index each number has on `axis` before (upper strip) and as the reshape reads it (lower strip),
// then cut into the output's boxes. Different stripes in the two strips are the bug made visible.
void DrawMemoryReshape(ImDrawList* dl, const Row& in, const Row& out, std::size_t axis, float x0, float x1, float top,
                       float bottom) {
    const float fs = ImGui::GetFontSize();
    const ImU32 dim = ImGui::GetColorU32(ImGuiCol_TextDisabled);
    const std::string label = axis < out.axes.size() ? out.axes[axis] : "?";
    auto in_axis = std::find(in.axes.begin(), in.axes.end(), label);
    if (in_axis == in.axes.end()) return;
    char caption[160];
    std::snprintf(caption, sizeof caption, _("memory order \u2192, by the %s index: above before, below after"),
                  label.c_str());
    const float strip_h = fs * 0.9f;
    const float y0 = top + fs * 1.65f, y1 = y0 + strip_h, y2 = y1 + strip_h;
    const float width = std::max(x1 - x0, fs * 4.0f);
    const std::size_t samples = static_cast<std::size_t>(width);
    auto strip = [&](const Shape& shape, std::size_t a, float ya, float yb) {
        for (const ui::MemoryRun& r : ui::memory_runs(shape, a, samples)) {
            const float rx0 = x0 + width * static_cast<float>(r.begin) / static_cast<float>(samples);
            const float rx1 = x0 + width * static_cast<float>(r.end) / static_cast<float>(samples);
            dl->AddRectFilled(ImVec2(rx0, ya), ImVec2(rx1, yb), IndexColor(r.index));
            const std::string k = std::to_string(r.index);
            const ImVec2 ks = ImGui::CalcTextSize(k.c_str());
            if (rx1 - rx0 > ks.x + 4.0f)
                dl->AddText(ImVec2((rx0 + rx1 - ks.x) / 2, ya + (yb - ya - ks.y) / 2), IM_COL32(0, 0, 0, 255), k.c_str());
        }
        dl->AddRect(ImVec2(x0, ya), ImVec2(x0 + width, yb), dim);
    };
    strip(in.shape, static_cast<std::size_t>(in_axis - in.axes.begin()), y0, y1);
    strip(out.shape, axis, y1, y2);
    // Flatten: each input box pours straight down into the strip; refill: the strip is cut into
    // the output's boxes in order, so the lines do not cross.
    for (std::size_t i = 0; i < in.x.size(); ++i) {
        const float cx = in.x[i] + in.w[i] / 2;
        dl->AddLine(ImVec2(cx, top), ImVec2(cx, y0), AxisColorU32(in.axes[i], 0.8f), 1.5f);
    }
    for (std::size_t i = 0; i < out.x.size(); ++i) {
        const float cx = out.x[i] + out.w[i] / 2;
        dl->AddLine(ImVec2(cx, y2), ImVec2(cx, bottom), AxisColorU32(out.axes[i], 0.8f), 1.5f);
    }
    const ImVec2 caption_at(x0, top + fs * 0.35f);
    const ImVec2 caption_size = ImGui::CalcTextSize(caption);
    // On top of the pouring lines, on the window's own background.
    dl->AddRectFilled(ImVec2(caption_at.x - 2, caption_at.y), ImVec2(caption_at.x + caption_size.x + 2, caption_at.y + caption_size.y),
                      ImGui::GetColorU32(ImGuiCol_WindowBg));
    dl->AddText(caption_at, dim, caption);
}

void DrawAxisRows(const Trace& trace, const Step& step, const UiState& ui) {
    ImDrawList* dl = ImGui::GetWindowDrawList();
    const float fs = ImGui::GetFontSize();
    const float gap = fs * 0.45f;
    const float row_h = fs * 2.6f;
    // The step names on the left: as wide as the longest (patch_merge_x0 …), within 6.5 to 12 fonts.
    float name_w = ImGui::CalcTextSize(step.name.c_str()).x;
    for (const auto& name : step.inputs) name_w = std::max(name_w, ImGui::CalcTextSize(name.c_str()).x);
    const float label_w = std::clamp(name_w + fs * 0.6f, fs * 6.5f, fs * 12.0f);

    auto layout = [&](const std::string& name, const Shape& shape, const Axes& axes, float x0) {
        Row r{name, shape, axes, {}, {}};
        float x = x0;
        for (std::size_t i = 0; i < shape.size(); ++i) {
            const ImVec2 s = AxisBoxSize(i < axes.size() ? axes[i] : "?", shape[i]);
            r.x.push_back(x);
            r.w.push_back(s.x);
            x += s.x + gap;
        }
        return r;
    };
    const ImVec2 origin = ImGui::GetCursorScreenPos();
    const float x0 = origin.x + label_w;
    std::vector<Row> inputs;
    for (const auto& name : step.inputs)
        if (const Step* in = trace.find(name)) inputs.push_back(layout(name, in->shape(), in->axes(), x0));
    const Row out = layout(step.name, step.shape(), step.axes(), x0);
    // A reshape whose labels read like a permute keeps every number where it is in memory: drawn
    // as what it does (flatten, then refill in memory order), never as axes moving.
    const int memory_axis =
        step.op == Op::reshape && inputs.size() == 1 ? ui::relabelled_axis(inputs[0].axes, out.axes) : -1;
    const float between = memory_axis >= 0 ? fs * 4.8f : fs * 1.9f;  // vertical space for the move lines

    float y = origin.y;
    dl->ChannelsSplit(2);  // 0: lines, 1: boxes on top
    dl->ChannelsSetCurrent(1);
    const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text);
    const ImU32 dim = ImGui::GetColorU32(ImGuiCol_TextDisabled);
    // Input rows (a matmul has two: the second sits beside the first when it fits).
    float in_y = y;
    for (std::size_t k = 0; k < inputs.size(); ++k) {
        const Row& r = inputs[k];
        dl->AddText(ImVec2(origin.x, y + fs * 0.7f), dim, r.name.c_str());
        for (std::size_t i = 0; i < r.x.size(); ++i) DrawAxisBox(dl, ImVec2(r.x[i], y), r.axes[i], r.shape[i]);
        if (k == 0) in_y = y;
        y += row_h + (k + 1 < inputs.size() ? fs * 0.5f : 0.0f);
        if (k + 1 < inputs.size()) {
            // Right-aligned before the boxes, between the two rows (below one name, above the next).
            const float symbol_w = ImGui::CalcTextSize(op_symbol(step.op)).x;
            dl->AddText(ImVec2(origin.x + label_w - symbol_w - fs * 0.3f, y - fs * 0.45f), text, op_symbol(step.op));
        }
    }
    // Lines from where each output axis came from (first input) to where it is now.
    const float out_y = inputs.empty() ? y : y + between;
    std::vector<ui::AxisMove> moves;
    if (!inputs.empty()) moves = ui::axis_moves(inputs[0].axes, out.axes);
    auto input_centre = [&](float pos) {
        const Row& r = inputs[0];
        if (r.x.empty()) return x0;
        const float clamped = std::clamp(pos, 0.0f, static_cast<float>(r.x.size() - 1));
        const std::size_t i = static_cast<std::size_t>(std::floor(clamped));
        const std::size_t j = std::min(i + 1, r.x.size() - 1);
        const float f = clamped - static_cast<float>(i);
        const float ci = r.x[i] + r.w[i] / 2, cj = r.x[j] + r.w[j] / 2;
        return ci + (cj - ci) * f;
    };
    const float first_row_bottom = in_y + row_h;
    const float last_input_bottom = y;
    dl->ChannelsSetCurrent(0);
    // With two operands, an axis the second one has comes from there (N', c of v).
    std::vector<int> from_second(out.axes.size(), -1);
    if (inputs.size() > 1) {
        std::vector<bool> used(inputs[1].axes.size(), false);
        for (std::size_t i = 0; i < out.axes.size(); ++i)
            for (std::size_t j = 0; j < inputs[1].axes.size(); ++j)
                if (!used[j] && inputs[1].axes[j] == out.axes[i] && out.axes[i] != "N") {
                    used[j] = true;
                    from_second[i] = static_cast<int>(j);
                    break;
                }
    }
    float right = x0;
    for (const Row& r : inputs)
        if (!r.x.empty()) right = std::max(right, r.x.back() + r.w.back());
    if (!out.x.empty()) right = std::max(right, out.x.back() + out.w.back());
    if (memory_axis >= 0) {
        DrawMemoryReshape(dl, inputs[0], out, static_cast<std::size_t>(memory_axis), x0, right, first_row_bottom, out_y);
    } else if (!inputs.empty()) {
        for (std::size_t i = 0; i < out.x.size(); ++i) {
            if (from_second[i] >= 0) {
                const Row& r2 = inputs[1];
                const std::size_t j = static_cast<std::size_t>(from_second[i]);
                dl->AddLine(ImVec2(r2.x[j] + r2.w[j] / 2, last_input_bottom), ImVec2(out.x[i] + out.w[i] / 2, out_y),
                            AxisColorU32(out.axes[i], 0.8f), 2.0f);
                continue;
            }
            const ImU32 col = AxisColorU32(out.axes[i], 0.8f);
            const ImVec2 to(out.x[i] + out.w[i] / 2, out_y);
            if (moves[i].matched || moves[i].derived) {
                const ImVec2 from(input_centre(moves[i].from), first_row_bottom);
                dl->AddBezierCubic(from, ImVec2(from.x, from.y + (to.y - from.y) * 0.5f),
                                   ImVec2(to.x, to.y - (to.y - from.y) * 0.5f), to, col, 2.0f);
            } else {
                // A new axis (split, merge, matmul result): lines from the axes it replaces.
                const Row& r = inputs[0];
                std::vector<bool> used(r.axes.size(), false);
                for (const auto& m : moves)
                    if (m.matched || m.derived) used[static_cast<std::size_t>(m.from)] = true;
                bool any = false;
                for (std::size_t j = 0; j < r.axes.size(); ++j)
                    if (!used[j]) {
                        any = true;
                        const ImVec2 from(r.x[j] + r.w[j] / 2, first_row_bottom);
                        dl->AddLine(from, to, col, 1.5f);
                    }
                if (!any && inputs.size() > 1) {  // e.g. N' of a matmul comes from the second operand
                    const Row& r2 = inputs[1];
                    for (std::size_t j = 0; j < r2.axes.size(); ++j)
                        if (r2.axes[j] == out.axes[i])
                            dl->AddLine(ImVec2(r2.x[j] + r2.w[j] / 2, last_input_bottom), to, col, 1.5f);
                }
            }
        }
    }
    dl->ChannelsSetCurrent(1);
    // The output row, animated from the input positions for a moment after a step change.
    const float t =
        ui.frame.animate ? ui::ease_in_out(static_cast<float>((ui.frame.now - ui.selection.changed_at) / 0.7)) : 1.0f;
    dl->AddText(ImVec2(origin.x, out_y + fs * 0.7f), text, step.name.c_str());
    for (std::size_t i = 0; i < out.x.size(); ++i) {
        float x = out.x[i];
        float yy = out_y;
        float alpha = 1.0f;
        if (memory_axis >= 0) {
            alpha = 0.3f + 0.7f * t;  // refilled in place: nothing moves
        } else if (!inputs.empty() && t < 1.0f) {
            const float from_x = input_centre(moves[i].from) - out.w[i] / 2;
            x = from_x + (out.x[i] - from_x) * t;
            yy = first_row_bottom - row_h + (out_y - (first_row_bottom - row_h)) * t;
            if (!moves[i].matched) alpha = 0.3f + 0.7f * t;
        }
        DrawAxisBox(dl, ImVec2(x, yy), out.axes[i], out.shape[i], alpha, true);
    }
    dl->ChannelsMerge();
    ImGui::Dummy(ImVec2(right - origin.x, out_y + row_h - origin.y + fs * 0.3f));
}

void DrawForwardListing(const Trace& trace, const Step& step) {
    const Reference reference = trace.config.reference;
    const int current = LineOf(step.name, reference);
    const char* heading = _("ViTAttention.forward(self, x), the reference:");
    if (reference == Reference::mha) heading = _("MultiHeadAttention.forward(self, x), the reference:");
    if (reference == Reference::hf)
        heading = _("Hugging Face's ViTSelfAttention, then ViTSelfOutput:");
    ImGui::TextDisabled("%s", heading);
    // The code in a region that scrolls sideways: on a narrow panel the current step's expression is
    // scrolled into view when the step changes, and a scrollbar reaches the rest of the long lines.
    // The region is as high as its content was on the last frame (the shapes under the current line
    // take one or more rows).
    ImGuiStorage* storage = ImGui::GetStateStorage();
    const ImGuiID height_key = ImGui::GetID("##listing height"), step_key = ImGui::GetID("##listing step");
    const ImGuiID step_id = ImGui::GetID(step.name.c_str());
    const bool step_changed = static_cast<ImGuiID>(storage->GetInt(step_key, 0)) != step_id;
    storage->SetInt(step_key, static_cast<int>(step_id));
    const std::vector<std::string_view>& forward = forward_lines(reference);
    ImGui::PushFont(fonts().mono_small);
    const float first_guess = static_cast<float>(forward.size() + 3) * (ImGui::GetFontSize() + 1.0f);
    ImGui::PopFont();
    const float height = storage->GetFloat(height_key, first_guess);
    ImGui::BeginChild("##listing", ImVec2(0, height), false, ImGuiWindowFlags_HorizontalScrollbar);
    ImGui::PushStyleVar(ImGuiStyleVar_ItemSpacing, ImVec2(ImGui::GetStyle().ItemSpacing.x, 1.0f));
    ImGui::PushFont(fonts().mono_small);
    ImDrawList* dl = ImGui::GetWindowDrawList();
    const float fs = ImGui::GetFontSize();
    for (int i = 0; i < static_cast<int>(forward.size()); ++i) {
        const std::string line(forward[i]);
        const ImVec2 p = ImGui::GetCursorScreenPos();
        if (i != current) {
            ImGui::TextDisabled("%s", line.c_str());
            continue;
        }
        // Highlight the expression of this step inside its line.
        std::size_t b = line.find(step.code), len = step.code.size();
        if (b == std::string::npos) b = 0, len = line.size();
        const float hx0 = p.x + ImGui::CalcTextSize(line.substr(0, b).c_str()).x;
        const float hx1 = hx0 + ImGui::CalcTextSize(line.substr(b, len).c_str()).x;
        dl->AddRectFilled(ImVec2(p.x - 2, p.y - 1), ImVec2(p.x + ImGui::CalcTextSize(line.c_str()).x + 2, p.y + fs + 1),
                          IM_COL32(255, 255, 255, 18));
        dl->AddRectFilled(ImVec2(hx0 - 2, p.y - 1), ImVec2(hx1 + 2, p.y + fs + 1), IM_COL32(255, 200, 60, 70), 3.0f);
        if (step_changed && (hx0 < ImGui::GetWindowPos().x || hx1 > ImGui::GetWindowPos().x + ImGui::GetWindowWidth()))
            ImGui::SetScrollX(std::max(0.0f, hx0 - p.x - fs));
        ImGui::TextUnformatted(line.c_str());
        // TensorSensor-style: each operand's shape under where it is written.
        struct Note {
            float x0, x1;
            std::string expr;
            Shape shape;
            const Axes* axes;
        };
        std::vector<Note> notes;
        const std::size_t eq = line.find(" = ");
        const std::size_t rhs = eq == std::string::npos ? 0 : eq + 3;
        const std::size_t from = step.code.empty() || step.code[0] == '.' || step.code[0] == '*' ? rhs : b;
        for (const auto& op : step.operands) {
            const auto [pos, n] = LocateOperand(line, op.expr, from, b + len + 1);
            if (pos == std::string::npos) continue;
            const float a0 = p.x + ImGui::CalcTextSize(line.substr(0, pos).c_str()).x;
            const float a1 = a0 + ImGui::CalcTextSize(line.substr(pos, n).c_str()).x;
            notes.push_back({a0, a1, op.expr, op.shape, AxesOf(trace, op.expr)});
        }
        ImGui::PopFont();
        ImGui::PushFont(fonts().small);
        const float sfs = ImGui::GetFontSize();
        const float base_y = ImGui::GetCursorScreenPos().y;
        std::vector<float> row_end;  // stack labels that would overlap
        float max_rows = 0, notes_right = p.x;
        for (const Note& n : notes) {
            const std::string s = format_shape(n.shape);
            const float w = ImGui::CalcTextSize(s.c_str()).x;
            const float cx = (n.x0 + n.x1) / 2;
            float lx = std::max(cx - w / 2, p.x);
            std::size_t row = 0;
            while (row < row_end.size() && row_end[row] > lx - 6) ++row;
            if (row == row_end.size()) row_end.push_back(0);
            row_end[row] = lx + w;
            max_rows = std::max(max_rows, static_cast<float>(row + 1));
            const float y = base_y + 2 + row * (sfs + 2);
            const ImU32 col = ImGui::GetColorU32(ImGuiCol_Text);
            dl->AddLine(ImVec2(n.x0, base_y), ImVec2(n.x1, base_y), IM_COL32(255, 200, 60, 200), 1.5f);
            dl->AddLine(ImVec2(cx, base_y), ImVec2(cx, y + 2), IM_COL32(255, 200, 60, 120), 1.0f);
            // Numbers in their axis colours.
            float x = lx;
            dl->AddText(ImVec2(x, y), col, "[");
            x += ImGui::CalcTextSize("[").x;
            for (std::size_t d = 0; d < n.shape.size(); ++d) {
                const std::string num = std::to_string(n.shape[d]);
                const ImU32 c = n.axes && d < n.axes->size() ? AxisColorU32((*n.axes)[d]) : col;
                dl->AddText(ImVec2(x, y), c, num.c_str());
                x += ImGui::CalcTextSize(num.c_str()).x;
                const char* sep = d + 1 < n.shape.size() ? ", " : "]";
                dl->AddText(ImVec2(x, y), col, sep);
                x += ImGui::CalcTextSize(sep).x;
            }
            notes_right = std::max(notes_right, x);
        }
        ImGui::Dummy(ImVec2(notes_right - p.x, max_rows * (sfs + 2) + 4));
        ImGui::PopFont();
        ImGui::PushFont(fonts().mono_small);
    }
    ImGui::PopFont();
    ImGui::PopStyleVar();
    const float used = ImGui::GetCursorPosY() + (ImGui::GetScrollMaxX() > 0.0f ? ImGui::GetStyle().ScrollbarSize : 0.0f);
    ImGui::EndChild();
    ImGui::GetStateStorage()->SetFloat(height_key, used);
}

}  // namespace

void DrawShapePanel(const Trace& trace, UiState& ui) {
    if (!ui.panels.shape) return;
    PlaceWindow(ui, ui::Panel::Shape);
    if (!ImGui::Begin(ui::window_title(_("Shape view"), "Shape view").c_str(), &ui.panels.shape)) {
        ImGui::End();
        return;
    }
    const Step* step = SelectedStep(trace, ui);
    if (!step) {
        EmptyState(_("No step selected"), _("Run the engine from the config panel to record a trace."));
        ImGui::End();
        return;
    }
    // Title line: name, op, view/copy, contiguity.
    ImGui::Text("%s", step->name.c_str());
    ImGui::SameLine();
    ImGui::TextDisabled("= %s", op_name(step->op));
    const char* copy = step->is_view ? _("  view (no copy)") : _("  new tensor");
    SameLineIfFits(ImGui::CalcTextSize(copy).x);
    ImGui::TextColored(step->is_view ? OkColor() : WarnColor(), "%s", copy);
    const char* layout = step->contiguous ? _("  contiguous") : _("  not contiguous");
    SameLineIfFits(ImGui::CalcTextSize(layout).x);
    ImGui::TextColored(step->contiguous ? OkColor() : WarnColor(), "%s", layout);

    // What the step does in plain words (presentation mode tells all of it), and where to begin.
    const ui::StepNarrative story = ui::step_narrative(step->name, ui::language(), trace.config.reference);
    // A zoo bug's rewritten line does something else than the story tells: the Bug zoo explains it.
    const bool buggy_line = step->code.find("# BUG") != std::string::npos;
    if (!story.text.empty() && !buggy_line) WrappedText(ui::narrative_lead(story.text).c_str());
    if (ui.selection.start_hint)
        WrappedText(OkColor(), _("Start here: press Play (in the pipeline list) or \u2192 to go through the layer one step at a time."));

    DrawAxisRows(trace, *step, ui);

    ImGui::Separator();
    ImGui::TextDisabled("einops");
    ImGui::SameLine();
    // The formula in code font; its remark ("(softmax over m)") after it, or under it when the panel
    // is narrow.
    const std::string formula = ui::tr_formula(step->formula);
    const std::size_t gap = formula.find("  ");
    ImGui::PushFont(fonts().mono);
    ImGui::TextUnformatted(formula.substr(0, gap).c_str());
    if (gap != std::string::npos) {
        const std::string remark = formula.substr(gap + 2);
        SameLineIfFits(ImGui::CalcTextSize(remark.c_str()).x);
        ImGui::TextUnformatted(remark.c_str());
    }
    ImGui::PopFont();
    ImGui::TextDisabled(_("strides"));
    ImGui::SameLine();
    ImGui::PushFont(fonts().mono);
    ImGui::Text("%s", format_strides(step->torch_strides).c_str());
    ImGui::PopFont();
    SameLineIfFits(ImGui::CalcTextSize("(?)").x);
    HelpMarker(_("The strides PyTorch's tensor has at this point (elements to skip per index step on each axis). "
                  "A view only changes shape and strides; the numbers stay where they are in memory."));
    WrappedText((std::string(_("note: ")) + ui::tr_core(step->note)).c_str());
    ImGui::Separator();
    DrawForwardListing(trace, *step);
    ImGui::End();
}

}  // namespace attnscope
