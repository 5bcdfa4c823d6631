// Gradients panel: the backward pass the engine ran with the forward (trace.gradients, see
// core/engine/backward.hpp). Gradient norm by step on a log scale (the gradient flows up from out_drop),
// the selected step's gradient as a heatmap, the parameter gradients, and the softmax-saturation
// demo: switch the scale off and raise C, watch attention turn one-hot and grad_scores vanish.
// Reads the Trace only; edits to the config go through ui.config.draft + command::Rerun.
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "backward.hpp"
#include "fonts.hpp"
#include "gfx/heatmap_renderer.hpp"
#include "logic/i18n.hpp"
#include "panels/panels.hpp"
#include "widgets.hpp"

namespace attnscope {

using ui::_;

namespace {

// One row per step, forward order top to bottom: a bar of log10 ||grad_<step>||. Click selects.
void PlotNormsByStep(const Trace& trace, const Gradients& g, UiState& ui) {
    const float fs = ImGui::GetFontSize();
    const float row_h = fs * 1.05f, label_w = fs * 5.6f, value_w = fs * 4.2f;
    const float width = ImGui::GetContentRegionAvail().x;
    const std::size_t n = g.steps.size();
    const ImVec2 p = ImGui::GetCursorScreenPos();
    const ImVec2 size(width, row_h * static_cast<float>(n) + fs * 1.4f);
    ImGui::InvisibleButton("##norms", size);
    const bool hovered = ImGui::IsItemHovered(), clicked = ImGui::IsItemClicked();
    ImDrawList* dl = ImGui::GetWindowDrawList();

    double lo = 1e300, hi = 0.0;  // decades covering every non-zero norm
    for (const auto& s : g.steps)
        if (s.norm > 0 && std::isfinite(s.norm)) lo = std::min(lo, s.norm), hi = std::max(hi, s.norm);
    const LogAxis axis(lo, hi, p.x + label_w, p.x + width - value_w);
    const float x0 = axis.x0, x1 = axis.x1;
    const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text);
    const float plot_bottom = p.y + row_h * static_cast<float>(n);
    DrawDecades(dl, axis, p.y, plot_bottom);
    const ImVec2 mouse = ImGui::GetIO().MousePos;
    for (std::size_t i = 0; i < n; ++i) {
        const GradStep& s = g.steps[i];
        const float y = p.y + row_h * static_cast<float>(i);
        const bool selected = s.step == ui.selection.step;
        const bool row_hovered = hovered && mouse.y >= y && mouse.y < y + row_h;
        if (selected || row_hovered)
            dl->AddRectFilled(ImVec2(p.x, y), ImVec2(p.x + width, y + row_h),
                              selected ? IM_COL32(70, 110, 180, 90) : IM_COL32(255, 255, 255, 20));
        dl->AddText(ImVec2(p.x + 2, y + (row_h - fs) / 2), text, s.step.c_str());
        const bool attention = is_attention_map(s.step);
        const ImU32 bar = attention ? IM_COL32(240, 160, 70, 230) : IM_COL32(110, 160, 240, 230);
        if (s.norm > 0 && std::isfinite(s.norm))
            dl->AddRectFilled(ImVec2(x0, y + row_h * 0.18f), ImVec2(std::max(axis.x(s.norm), x0 + 1.0f), y + row_h * 0.82f), bar);
        const std::string value = std::isfinite(s.norm) ? ui::format_value(s.norm) : std::string("NaN/Inf");
        dl->AddText(ImVec2(x1 + 4, y + (row_h - fs) / 2), s.norm > 0 ? text : IM_COL32(255, 90, 80, 255), value.c_str());
        if (row_hovered) {
            ImGui::SetTooltip(_("||grad_%s|| = %.6g\nd loss / d %s, shape %s\nclick: select the step"), s.step.c_str(),
                              s.norm, s.step.c_str(), format_shape(s.tensor.values.shape().size()
                                                                        ? shape_of(s.tensor.values)
                                                                        : Shape{}).c_str());
            if (clicked) SelectStep(trace, ui, s.step);
        }
    }
}

// The selected step's gradient, sliced as the inspector slices the step.
void GradientHeatmap(const Trace& trace, const GradStep& g, UiState& ui, float height) {
    const Step* step = trace.find(g.step);
    if (!step || !ui.heatmaps) return;
    const Shape shape = shape_of(g.tensor.values);
    const ui::SliceSpec spec = ui::normalized(ViewFor(ui, *step).spec, shape);
    char key[256];
    std::snprintf(key, sizeof key, "%llu/grad/%s/%s/%d,%d", static_cast<unsigned long long>(ui.frame.trace_generation),
                  g.step.c_str(), ui::describe_slice("", spec, shape.size()).c_str(), spec.row_axis, spec.col_axis);
    const ui::Slice2D& slice =
        ui.heatmaps->slice("gradients", key, [&] { return ui::extract_slice(g.tensor.values, spec); });
    const ui::ColorRange range = ui::make_range(ui::RangeMode::PerSlice, slice.min, slice.max, g.stats.min,
                                                g.stats.max, 0.0f, 1.0f, ui::Colormap::Diverging, ui::ScaleMode::Linear);
    const std::uintptr_t tex = ui.heatmaps->texture("gradients", range);
    ImGui::TextDisabled("%s", ui::describe_slice(g.name, spec, shape.size()).c_str());
    const float legend_w = ColorLegendWidth();
    HeatmapOptions opt;
    opt.id = "grad_heatmap";
    // Square-ish cells: no wider than the slice's aspect needs, so the legend sits next to it.
    const float avail = std::max(ImGui::GetContentRegionAvail().x - legend_w - ImGui::GetStyle().ItemSpacing.x, 50.0f);
    const float aspect = slice.rows ? static_cast<float>(slice.cols) / static_cast<float>(slice.rows) : 1.0f;
    opt.size = ImVec2(std::clamp(height * aspect, 50.0f, avail), height);
    const HeatmapHover hover = DrawHeatmap(tex, slice, opt);
    ImGui::SameLine();
    ColorLegend(range, height, slice.nan_count > 0, slice.inf_count > 0);
    if (hover.hovered) {
        const auto idx = ui::full_index(spec, shape.size(), hover.row, hover.col);
        ImGui::SetTooltip("%s%s = %.7g", g.name.c_str(), ui::format_index(idx).c_str(),
                          static_cast<double>(slice.at(hover.row, hover.col)));
    }
}

void RememberRun(const Trace& trace, const Gradients& g, UiState& ui) {
    if (!ui.grad_runs.empty() && ui.grad_runs.back().generation == ui.frame.trace_generation) return;
    const Step* attn = trace.find(StepId::attn);
    if (!attn) return;
    UiState::GradRun r;
    r.generation = ui.frame.trace_generation;
    r.dim = trace.config.dim;
    r.head_dim = trace.config.head_dim();
    r.scaled = trace.config.scaled;
    r.max_attn = attn->stats.max;
    r.saturated_fraction = g.attn_rows ? double(g.saturated_rows) / double(g.attn_rows) : 0.0;
    ui.grad_runs.push_back(r);
    if (ui.grad_runs.size() > 6) ui.grad_runs.erase(ui.grad_runs.begin());
}

void SaturationDemo(const Trace& trace, const Gradients& g, UiState& ui) {
    AttentionConfig& c = ui.config.draft;
    bool scaled = c.scaled;
    if (ImGui::Checkbox("##scaled", &scaled)) {  // its label wraps beside it on a narrow panel
        c.scaled = scaled;
        ui.ask(command::Rerun{});
    }
    ImGui::SameLine();
    ImGui::TextUnformatted(_("scale the scores by c^-0.5 (self.scale)"));
    SameLineIfFits(ImGui::CalcTextSize("(?)").x);
    HelpMarker(_("Without the scale, q.k grows like sqrt(c): larger scores push softmax towards a one-hot row. "
                  "Its backward is attn * (g - sum(g * attn)), which is 0 for a one-hot row whatever g is, so the "
                  "gradient into the scores (and on to q, k and qkv.weight) vanishes. self.scale = c^-0.5 keeps the "
                  "scores' spread near 1 for any c. Off: the `scaled` step multiplies by 1 (the CLI's --no-scale)."));
    ImGui::TextUnformatted(_("raise C:"));
    SameLineIfFits(ButtonWidth(_("C / 2")));
    if (ImGui::SmallButton(_("C / 2")) && c.dim / 2 >= c.heads && (c.dim / 2) % c.heads == 0) {
        c.dim /= 2;
        ui.ask(command::Rerun{});
    }
    SameLineIfFits(ButtonWidth(_("C x 2")));
    if (ImGui::SmallButton(_("C x 2")) && c.dim <= 4096) {
        c.dim *= 2;
        ui.ask(command::Rerun{});
    }
    if (ImGui::SmallButton(_("saturate: scale off, h = 1, C = 2048"))) {
        c.scaled = false;
        c.heads = 1;
        c.dim = 2048;
        ui.ask(command::Rerun{});
    }
    SameLineIfFits(ButtonWidth(_("reset")));
    if (ImGui::SmallButton(_("reset"))) {
        c.scaled = true;
        c.dim = 768;
        c.heads = 8;
        ui.ask(command::Rerun{});
    }

    const Step* attn = trace.find(StepId::attn);
    const GradStep *scores = g.find(StepId::scores), *ga = g.find(StepId::attn);
    if (!attn || !scores || !ga) return;
    const std::size_t keys = attn->shape().back();
    const AttentionConfig& s = trace.config;
    ImGui::PushTextWrapPos(0.0f);
    ImGui::TextDisabled("%s", _("Scale off, raise C: attention turns one-hot, and its rows pass no gradient back."));
    ImGui::PopTextWrapPos();
    ImGui::Text(_("C = %zu, c = %zu, scale %s"), s.dim, s.head_dim(),
                s.scaled ? ui::format_value(attention_scale(s)).c_str() : _("off (x 1)"));
    const bool saturated = attn->stats.max > 0.99f;
    ImGui::TextColored(saturated ? BadColor() : OkColor(), _("max attention weight %.4f"), attn->stats.max);
    ImGui::SameLine();
    ImGui::TextDisabled(_("(uniform: 1/N' = %.4f)"), keys ? 1.0 / static_cast<double>(keys) : 0.0);
    const GradStep* gs = g.find(StepId::scaled);
    ImGui::TextColored(g.saturated_rows ? BadColor() : OkColor(), _("saturated rows (max weight > 0.99): %zu of %zu"),
                       g.saturated_rows, g.attn_rows);
    ImGui::Text(_("||grad_attn|| = %s \u2192 softmax \u2192 ||grad_scaled|| = %s"), ui::format_value(ga->norm).c_str(),
                gs ? ui::format_value(gs->norm).c_str() : "?");
    const std::size_t others = g.attn_rows - g.saturated_rows;
    const double per_saturated = g.saturated_rows ? g.saturated_grad_norm / std::sqrt(double(g.saturated_rows)) : 0.0;
    const double per_other = others ? g.other_grad_norm / std::sqrt(double(others)) : 0.0;
    if (g.saturated_rows)
        ImGui::TextColored(BadColor(), _("gradient per row: saturated rows %s, others %s"),
                           ui::format_value(per_saturated).c_str(), others ? ui::format_value(per_other).c_str() : "-");
    else
        ImGui::TextColored(OkColor(), _("gradient per row: %s (no saturated rows)"),
                           ui::format_value(per_other).c_str());

    if (ui.grad_runs.size() > 1 &&
        ImGui::BeginTable("##runs", 5, ImGuiTableFlags_BordersInnerH | ImGuiTableFlags_SizingStretchProp)) {
        ImGui::TableSetupColumn(_("C"));
        ImGui::TableSetupColumn(_("c"));
        ImGui::TableSetupColumn(_("scale"));
        ImGui::TableSetupColumn(_("max attn"));
        ImGui::TableSetupColumn(_("saturated rows"));
        ImGui::TableHeadersRow();
        for (auto it = ui.grad_runs.rbegin(); it != ui.grad_runs.rend(); ++it) {
            ImGui::TableNextRow();
            ImGui::TableNextColumn();
            ImGui::Text("%zu", it->dim);
            ImGui::TableNextColumn();
            ImGui::Text("%zu", it->head_dim);
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(it->scaled ? _("on") : _("off"));
            ImGui::TableNextColumn();
            ImGui::Text("%.4f", it->max_attn);
            ImGui::TableNextColumn();
            ImGui::Text("%.0f%%", it->saturated_fraction * 100.0);
        }
        ImGui::EndTable();
    }
}

}  // namespace

void DrawGradientsPanel(const Trace& trace, UiState& ui) {
    if (!ui.panels.gradients) return;
    PlaceWindow(ui, ui::Panel::Gradients);
    const std::string title = std::string(_("Gradients")) + "###gradients";
    if (!ImGui::Begin(title.c_str(), &ui.panels.gradients)) {
        ImGui::End();
        return;
    }
    const Gradients* g = trace.gradients.get();
    if (!g) {
        if (ui.engine.busy) EmptyState(_("Running the engine ..."), _("forward, then backward"));
        else
            EmptyState(_("No gradients for this trace"),
                       _("The backward pass runs with the engine's own config (the Config panel), when its gradients "
                          "fit in memory next to the trace. A file's tensors or the ViT's blocks come without it; "
                          "use File > Back to the demo / config."));
        ImGui::End();
        return;
    }
    RememberRun(trace, *g, ui);
    ImGui::PushTextWrapPos(0.0f);  // every line wraps at the panel's edge (in a table: the column's)
    ImGui::TextUnformatted(_("loss = sum(out_drop * G)"));
    ImGui::SameLine();
    ImGui::TextDisabled(_("G: %s"), g->grad_output_source.c_str());
    SameLineIfFits(ImGui::CalcTextSize("(?)").x);
    HelpMarker(_("The backward pass of this layer for an upstream gradient G on its output, exactly as "
                  "PyTorch's autograd computes it. The CLI: attnscope run --grad-output G.npy --dump DIR."));

    if (ImGui::CollapsingHeader(_("Gradient norm by step (log scale)"), ImGuiTreeNodeFlags_DefaultOpen)) {
        ImGui::TextDisabled("%s", _("\u2191 the gradient flows up, from out_drop (= G) to input"));
        PlotNormsByStep(trace, *g, ui);
    }
    if (ImGui::CollapsingHeader(_("Softmax saturation demo"), ImGuiTreeNodeFlags_DefaultOpen))
        SaturationDemo(trace, *g, ui);
    if (ImGui::CollapsingHeader(_("Parameter gradients"), ImGuiTreeNodeFlags_DefaultOpen) &&
        ImGui::BeginTable("##params", 3, ImGuiTableFlags_BordersInnerH | ImGuiTableFlags_SizingStretchProp)) {
        ImGui::TableSetupColumn(_("parameter"));
        ImGui::TableSetupColumn(_("shape"));
        ImGui::TableSetupColumn(_("||grad||"));
        ImGui::TableHeadersRow();
        for (const ParamGrad& p : g->params) {
            ImGui::TableNextRow();
            ImGui::TableNextColumn();
            ImGui::Text("grad_%s", p.name.c_str());
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(format_shape(shape_of(p.values)).c_str());
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(ui::format_value(p.norm).c_str());
        }
        ImGui::EndTable();
    }
    if (const GradStep* s = g->find(ui.selection.step);
        s && ImGui::CollapsingHeader(_("Selected step's gradient"), ImGuiTreeNodeFlags_DefaultOpen)) {
        ImGui::PushFont(fonts().mono);
        ImGui::Text("%s %s", s->name.c_str(), format_shape(shape_of(s->tensor.values)).c_str());
        ImGui::PopFont();
        ImGui::TextDisabled(_("||.|| = %s   min %s   max %s"), ui::format_value(s->norm).c_str(),
                            ui::format_value(s->stats.min).c_str(), ui::format_value(s->stats.max).c_str());
        const float rest = ImGui::GetContentRegionAvail().y - ImGui::GetTextLineHeightWithSpacing() * 1.5f;
        GradientHeatmap(trace, *s, ui, std::max(rest, ImGui::GetFontSize() * 6.0f));
    }
    ImGui::PopTextWrapPos();
    ImGui::End();
}

}  // namespace attnscope
