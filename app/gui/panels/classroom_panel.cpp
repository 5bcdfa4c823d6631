// The classroom: presentation mode (F5: full screen, large fonts, only the current step), the
// "predict the next shape" quiz, and the Language menu.
//
// [SECTION] keys and the quiz gate   [SECTION] presentation   [SECTION] quiz window   [SECTION] language
#include <imgui.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "fonts.hpp"
#include "gfx/heatmap_renderer.hpp"
#include "logic/core_text.hpp"
#include "logic/map_fit.hpp"
#include "logic/narrative.hpp"
#include "logic/quiz.hpp"
#include "logic/vit_view.hpp"
#include "panels/panels.hpp"
#include "widgets.hpp"

namespace attnscope {

namespace {

int StepIndex(const Trace& trace, const std::string& name) {
    for (std::size_t i = 0; i < trace.steps.size(); ++i)
        if (trace.steps[i].name == name) return static_cast<int>(i);
    return -1;
}

// The shape formula of a step ("[B, h, N, N]"), "" when the checks have none.
std::string ShapeFormula(const Trace& trace, const std::string& step) {
    for (const ShapeCheck& c : trace.checks.shapes)
        if (c.step == step) return c.formula;
    return "";
}

// A row of big axis boxes; returns its width. Draws nothing when dl is null (measure only).
float AxisBoxRow(ImDrawList* dl, ImVec2 pos, const Shape& shape, const Axes& axes) {
    const float gap = ImGui::GetFontSize() * 0.25f;
    float x = pos.x;
    for (std::size_t i = 0; i < shape.size(); ++i) {
        const std::string label = i < axes.size() ? axes[i] : "";
        if (dl) DrawAxisBox(dl, ImVec2(x, pos.y), label, shape[i]);
        x += AxisBoxSize(label, shape[i]).x + gap;
    }
    return x - pos.x - (shape.empty() ? 0.0f : gap);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// [SECTION] keys and the quiz gate
// ---------------------------------------------------------------------------------------------

void HandleClassroomKeys(UiState& ui, bool f5, bool escape) {
    if (f5) ui.classroom.presentation = !ui.classroom.presentation;
    if (ui.classroom.presentation && escape && ui.classroom.asking < 0)
        ui.classroom.presentation = false;
}

// With the quiz on, a move to the next step that was not asked yet is held back: the stepper
// goes back to the current step and the Quiz window asks for the next step's shape first.
void QuizGate(const Trace& trace, UiState& ui) {
    ui::ClassroomState& c = ui.classroom;
    c.show_trace(ui.frame.trace_generation);  // a new trace: a new quiz
    if (trace.steps.empty()) {  // the first run still going: the quiz asks once it is there
        c.asking = -1;
        return;
    }
    const bool turned_on = c.quiz && !c.quiz_was_on;
    c.quiz_was_on = c.quiz;
    if (!c.quiz) {
        c.asking = -1;
        return;
    }
    const int current = StepIndex(trace, ui.selection.step);
    int wanted = ui.selection.stepper.selected;
    if (turned_on && current >= 0 && current + 1 < static_cast<int>(trace.steps.size()))
        wanted = current + 1;  // the quiz starts with the next step's question
    if (current >= 0 && wanted == current + 1 && !c.score.was_asked(trace.steps[static_cast<std::size_t>(wanted)].name)) {
        ui.selection.stepper.select(current);
        ui.selection.stepper.playing = false;
        if (c.asking != wanted) {
            c.asking = wanted;
            c.answer[0] = '\0';
            c.focus_answer = true;
            c.feedback.reset();
            c.answered_step.clear();
        }
    } else if (c.asking >= 0 && current >= 0 && c.asking != current + 1) {
        c.asking = -1;  // the student went elsewhere
    }
}

bool QuizHidesShape(const UiState& ui, int index, const std::string& step) {
    return ui.classroom.quiz && index > ui.selection.stepper.selected && !ui.classroom.score.was_asked(step);
}

namespace {
void DrawQuizBody(const Trace& trace, UiState& ui, float wrap);
}  // namespace

// ---------------------------------------------------------------------------------------------
// [SECTION] presentation
// ---------------------------------------------------------------------------------------------

namespace {

// What the slide tells about a step: the pipeline's story, except on a bug of the zoo, where the
// buggy line gets the bug's own story (what the line does instead, the reference's line, what it
// breaks) and every step after it is said to carry the bug's numbers.
ui::StepNarrative SlideNarrative(const Trace& trace, const Step& step, const UiState& ui) {
    ui::StepNarrative n = ui::step_narrative(step.name, ui::language(), trace.config.reference);
    if (!ui.zoo.run || ui.zoo.bug == Bug::None) return n;
    const BugInfo& info = bug_info(ui.zoo.bug);
    if (step.code.find("# BUG") != std::string::npos) {
        char title[256];
        std::snprintf(title, sizeof title, _("the bug: %s"), ui::tr_core(info.title));
        n.title = title;
        n.text = std::string(_("This line is the bug. The reference writes it as")) + ":\n    " + info.right_line + "\n\n" +
                 ui::tr_core(info.symptom);
        return n;
    }
    const StepDifference* d = trace.difference(step.name);
    if (d && !d->ok) {
        char line[256];
        std::snprintf(line, sizeof line,
                      _("In this buggy run the numbers here differ from the correct pipeline's (largest difference %.3g): "
                         "the bug above changed them. What follows is what the correct step does."),
                      d->max_error);
        n.text = std::string(line) + "\n\n" + n.text;
    }
    return n;
}

}  // namespace

void DrawPresentation(const Trace& trace, const VitSnapshot* vit, UiState& ui) {
    const ImGuiIO& io = ImGui::GetIO();
    ImGui::SetNextWindowPos(ImVec2(0, 0));
    ImGui::SetNextWindowSize(io.DisplaySize);
    const ImGuiWindowFlags flags = ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove |
                                   ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_NoBringToFrontOnFocus;
    ImGui::PushStyleVar(ImGuiStyleVar_WindowPadding, ImVec2(ImGui::GetFontSize() * 1.2f, ImGui::GetFontSize() * 0.8f));
    const bool open = ImGui::Begin("###Presentation", nullptr, flags);
    ImGui::PopStyleVar();
    if (!open) {
        ImGui::End();
        return;
    }
    const Step* step = SelectedStep(trace, ui);
    if (!step) {
        EmptyState(_("No trace yet"), _("Press Esc to leave presentation mode."));
        ImGui::End();
        return;
    }
    const float fs = ImGui::GetFontSize();
    const float width = ImGui::GetContentRegionAvail().x;
    const ui::StepNarrative n = SlideNarrative(trace, *step, ui);
    ui.classroom.slide_title = n.title;

    // ---- where we are, and the step's title
    ImGui::TextDisabled(_("step %d / %zu"), ui.selection.stepper.selected + 1, trace.steps.size());
    ImGui::SameLine();
    ImGui::TextColored(WarnColor(), "%s", step->name.c_str());
    if (!n.title.empty()) {
        ImGui::SameLine();
        ImGui::TextUnformatted(n.title.c_str());
    }
    if (ui.classroom.quiz) {
        const std::string score = std::string(_("quiz score")) + " " + ui.classroom.score.text();
        ImGui::SameLine(std::max(width - ImGui::CalcTextSize(score.c_str()).x, 0.0f));
        ImGui::TextColored(OkColor(), "%s", score.c_str());
    }
    // ---- the PyTorch line
    ImGui::PushFont(fonts().mono);
    ImGui::TextColored(ImVec4(0.55f, 0.80f, 1.0f, 1.0f), "%s", ui::tr_code(step->code).c_str());
    ImGui::PopFont();
    ImGui::TextDisabled("%s", ui::tr_formula(step->formula).c_str());
    ImGui::Spacing();

    // ---- the shapes: each input that is a step, then the result (big axis boxes)
    ImDrawList* dl = ImGui::GetWindowDrawList();
    ImVec2 p = ImGui::GetCursorScreenPos();
    const float box_h = fs * 2.6f, label_h = ImGui::GetTextLineHeight();
    const float left = p.x, right = p.x + width;
    float x = left;
    float y = p.y + label_h;
    auto place = [&](const std::string& label, const Shape& shape, const Axes& axes) {
        const float w = std::max(AxisBoxRow(nullptr, ImVec2(0, 0), shape, axes), ImGui::CalcTextSize(label.c_str()).x);
        if (x > left && x + w > right) {  // next line
            x = left;
            y += box_h + label_h + fs * 0.6f;
        }
        dl->AddText(ImVec2(x, y - label_h), ImGui::GetColorU32(ImGuiCol_TextDisabled), label.c_str());
        AxisBoxRow(dl, ImVec2(x, y), shape, axes);
        x += w + fs * 0.6f;
    };
    auto symbol = [&](const char* s) {
        dl->AddText(ImVec2(x, y + (box_h - fs) * 0.5f), ImGui::GetColorU32(ImGuiCol_Text), s);
        x += ImGui::CalcTextSize(s).x + fs * 0.6f;
    };
    int shown_inputs = 0;
    for (const std::string& input : step->inputs) {
        const Step* in = trace.find(input);
        if (!in) continue;
        if (shown_inputs++ > 0) symbol(op_symbol(step->op));
        place(input, in->shape(), in->axes());
    }
    if (shown_inputs > 0) symbol("\u2192");
    place(step->name + "  " + format_shape(step->shape()), step->shape(), step->axes());
    ImGui::Dummy(ImVec2(width, y + box_h - p.y + fs * 0.4f));
    ImGui::TextColored(step->is_view ? OkColor() : WarnColor(), "%s",
                       step->is_view ? _("view (no copy)") : _("new tensor"));
    ImGui::SameLine();
    ImGui::TextColored(step->contiguous ? OkColor() : WarnColor(), "%s",
                       step->contiguous ? _("contiguous") : _("not contiguous"));
    ImGui::SameLine();
    ImGui::TextDisabled(_("strides %s"), format_strides(step->torch_strides).c_str());
    ImGui::Separator();

    // ---- the narrative (left) and the heatmap of one slice (right); for a ViT, its picture between
    // them and where the class token looks under the narrative (logic/vit_view.hpp)
    const float footer = ImGui::GetTextLineHeightWithSpacing() + fs * 0.3f;
    const float body_h = std::max(ImGui::GetContentRegionAvail().y - footer, fs * 4.0f);
    const ui::VitSlideLayout vit_layout =
        vit ? ui::vit_slide_layout(width - 2.0f * fs, body_h, io.DisplaySize.y, ImGui::GetTextLineHeightWithSpacing())
            : ui::VitSlideLayout{};
    const float text_w = vit ? vit_layout.text_w : width * 0.46f;
    // With the quiz on, the column's lower part is the quiz's own region (it scrolls, the narrative
    // stays): what the narrative left on the last frame, between 45% and 70% of the column.
    const float quiz_h =
        ui.classroom.quiz ? std::floor(std::clamp(body_h - ui.classroom.narrative_h, body_h * 0.45f, body_h * 0.7f)) : 0.0f;
    const float column_h = body_h - quiz_h;
    ImGui::BeginGroup();
    ImGui::BeginChild("##narrative", ImVec2(text_w, column_h), false);
    if (ui.frame.record_items) {  // the region and its first line (the live tests check the line stays in sight)
        const ImVec2 at = ImGui::GetCursorScreenPos();
        ui.frame.item_rects["slide:narrative"] =
            ui::Rect{ImGui::GetWindowPos().x, ImGui::GetWindowPos().y, text_w, column_h};
        ui.frame.item_rects["slide:narrative_first_line"] = ui::Rect{at.x, at.y, text_w, ImGui::GetTextLineHeight()};
    }
    WrappedText(n.text.empty() ? step->note.c_str() : n.text.c_str());  // Chinese breaks between characters
    // The engine's note on memory (English only), except on a ViT's slide, where the class token's
    // maps take its place.
    if (!n.text.empty() && ui::language() == ui::Language::English && !step->note.empty() && !vit) {
        ImGui::Spacing();
        ImGui::PushTextWrapPos(0.0f);
        ImGui::TextDisabled("%s", step->note.c_str());
        ImGui::PopTextWrapPos();
    }
    ui.classroom.narrative_h = ImGui::GetCursorPosY() + ImGui::GetStyle().ItemSpacing.y;  // the maps fill the rest
    if (vit)  // the scrollbar's room kept: its coming and going would resize the maps under the mouse
        DrawVitSlideMaps(*vit, ui, ImGui::GetContentRegionAvail().x - ImGui::GetStyle().ScrollbarSize,
                         column_h - ImGui::GetCursorPosY() - ImGui::GetStyle().WindowPadding.y);
    ImGui::EndChild();
    if (ui.classroom.quiz) {  // the quiz, under the narrative
        ImGui::BeginChild("##quiz", ImVec2(text_w, quiz_h), false);  // the footer stays under it
        ImGui::Separator();
        ImGui::TextColored(WarnColor(), "%s", _("Quiz: predict the next shape"));
        // The question in view when it comes and when the region's height changes under it.
        const bool scroll = ui.classroom.focus_answer || quiz_h != ui.classroom.quiz_h;
        ui.classroom.quiz_h = quiz_h;
        DrawQuizBody(trace, ui, ImGui::GetContentRegionAvail().x);
        if (scroll) ImGui::SetScrollHereY(1.0f);
        ImGui::EndChild();
    }
    ImGui::EndGroup();
    if (vit) {  // the picture, the point of a ViT's slide: large, whatever the narrative's length
        ImGui::SameLine(0, fs);
        ImGui::BeginChild("##vit_picture", ImVec2(vit_layout.side, body_h), false, ImGuiWindowFlags_NoScrollbar);
        DrawVitSlidePicture(*vit, ui, vit_layout.side);
        ImGui::EndChild();
    }
    ImGui::SameLine(0, fs);
    ImGui::BeginChild("##picture", ImVec2(0, body_h), false);
    const Shape shape = step->shape();
    const ui::SliceSpec spec = ui::default_slice(shape);
    const std::string slice_name = ui::describe_slice(step->name, spec, shape.size());
    ImGui::TextDisabled("%s", slice_name.c_str());
    char key[256];
    std::snprintf(key, sizeof key, "%llu/%s/%s", static_cast<unsigned long long>(ui.frame.trace_generation),
                  step->name.c_str(), slice_name.c_str());
    static const ui::Slice2D kEmpty;
    const ui::Slice2D& slice =
        ui.heatmaps ? ui.heatmaps->slice("presentation", key, [&] { return ui::extract_slice(step->tensor().values, spec); })
                    : kEmpty;
    const ui::Colormap cmap = ui::auto_colormap(step->stats.min, step->stats.max);
    const ui::ColorRange range = ui::make_range(ui::RangeMode::PerSlice, slice.min, slice.max, step->stats.min,
                                                step->stats.max, 0, 1, cmap, ui::ScaleMode::Linear);
    const std::uintptr_t tex = ui.heatmaps ? ui.heatmaps->texture("presentation", range) : 0;
    const ImVec2 avail = ImGui::GetContentRegionAvail();
    const float legend_w = ColorLegendWidth();
    if (!tex || slice.empty()) {
        EmptyState(_("Cannot draw this slice"), ui.heatmaps ? ui.heatmaps->problem("presentation").c_str() : "");
    } else {
        // The axes named: for an attention map, which tokens ask (rows) and which are asked (columns);
        // wrapped in a narrow column.
        const Axes& axes = step->axes();
        auto axis = [&](int a) { return a >= 0 && a < static_cast<int>(axes.size()) ? axes[static_cast<std::size_t>(a)] : std::string("1"); };
        const std::string rows = axis(spec.row_axis), cols = axis(spec.col_axis);
        char caption[192];
        if (rows == "N" && cols == "N'")
            std::snprintf(caption, sizeof caption, _("rows = queries N (%zu), columns = keys N' (%zu)"), slice.rows, slice.cols);
        else
            std::snprintf(caption, sizeof caption, _("rows = %s (%zu), columns = %s (%zu)"), rows.c_str(), slice.rows,
                          cols.c_str(), slice.cols);
        const float caption_h = ImGui::CalcTextSize(caption, nullptr, false, avail.x).y + ImGui::GetStyle().ItemSpacing.y;
        // As large as fits above the caption: an attention map square, a long slice (tokens x
        // features) stretched to use the slide rather than drawn as a thin strip (logic/map_fit.hpp).
        const ui::MapSize m = ui::presentation_map(slice.rows, slice.cols, avail.x - legend_w - fs, avail.y - caption_h);
        HeatmapOptions opt;
        opt.id = "presentation_heatmap";
        opt.size = ImVec2(std::max(m.w, 50.0f), std::max(m.h, 50.0f));
        DrawHeatmap(tex, slice, opt);
        ImGui::SameLine();
        ColorLegend(range, opt.size.y, slice.nan_count > 0, slice.inf_count > 0, /*short_ticks=*/true);
        ImGui::PushTextWrapPos(0.0f);
        ImGui::TextDisabled("%s", caption);
        ImGui::PopTextWrapPos();
    }
    ImGui::EndChild();

    // ---- footer: the keys
    ImGui::TextDisabled("%s", _("\u2190 / \u2192 step    F5 / Esc leave presentation mode    Ctrl+= / Ctrl+- zoom"));
    ImGui::End();
}

// ---------------------------------------------------------------------------------------------
// [SECTION] quiz window
// ---------------------------------------------------------------------------------------------

namespace {

// The quiz itself: score, the last answer's feedback, the question. Wraps at `wrap` pixels.
void DrawQuizBody(const Trace& trace, UiState& ui, float wrap) {
    ui::ClassroomState& c = ui.classroom;
    ImGui::TextColored(OkColor(), _("score %s"), c.score.text().c_str());
    ImGui::SameLine();
    if (ImGui::SmallButton(_("reset"))) {
        c.score.reset();
        c.feedback.reset();
        c.answered_step.clear();
    }
    ImGui::PushTextWrapPos(ImGui::GetCursorPosX() + wrap);

    // The last answer: right or wrong, the real shape and where it comes from.
    if (c.feedback && c.feedback->given && !c.answered_step.empty()) {
        if (c.feedback->correct) {
            ImGui::TextColored(OkColor(), _("\u2713 right: %s is %s"), c.answered_step.c_str(),
                               format_shape(c.feedback->expected).c_str());
        } else {
            ImGui::TextColored(BadColor(), _("\u2717 not quite: you typed %s; %s is %s"),
                               format_shape(*c.feedback->given).c_str(), c.answered_step.c_str(),
                               format_shape(c.feedback->expected).c_str());
        }
        if (const Step* s = trace.find(c.answered_step)) {
            const std::string formula = ShapeFormula(trace, s->name);
            ImGui::TextDisabled(_("why: %s gives %s"), s->code.c_str(),
                                formula.empty() ? format_shape(s->shape()).c_str() : formula.c_str());
            ImGui::PushFont(fonts().mono_small ? fonts().mono_small : ImGui::GetFont());
            ImGui::TextDisabled("einops: %s", ui::tr_formula(s->formula).c_str());
            ImGui::PopFont();
        }
    }

    if (c.asking >= 0 && c.asking < static_cast<int>(trace.steps.size())) {
        ImGui::Separator();
        const Step& next = trace.steps[static_cast<std::size_t>(c.asking)];
        ImGui::Text(_("Next step: %s"), next.name.c_str());
        ImGui::PushFont(fonts().mono);
        ImGui::TextColored(ImVec4(0.55f, 0.80f, 1.0f, 1.0f), "%s", next.code.c_str());
        ImGui::PopFont();
        for (const std::string& input : next.inputs)
            if (const Step* in = trace.find(input)) {
                ImGui::TextDisabled(_("input %s:"), input.c_str());
                ImGui::SameLine();
                ColoredShape(in->shape(), in->axes());
            }
        const AttentionConfig& cfg = trace.config;
        ImGui::TextDisabled(_("B = %zu, N = %zu, C = %zu, h = %zu, c = %zu"), cfg.batch, cfg.tokens, cfg.dim, cfg.heads,
                            cfg.head_dim());
        ImGui::Text(_("What is the shape of %s?"), next.name.c_str());
        if (c.focus_answer) {
            ImGui::SetKeyboardFocusHere();
            c.focus_answer = false;
        }
        const float field = std::min(ImGui::GetFontSize() * 14.0f, wrap);
        ImGui::SetNextItemWidth(field);
        std::vector<Shape> shapes;
        for (const Step& s : trace.steps) shapes.push_back(s.shape());
        const ui::QuizHint example = ui::quiz_hint(shapes, cfg);
        char hint[96];
        std::snprintf(hint, sizeof hint, _("e.g. %s or %s"), example.numbers.c_str(), example.symbols.c_str());
        bool submit = ImGui::InputTextWithHint("##answer", hint, c.answer, sizeof c.answer, ImGuiInputTextFlags_EnterReturnsTrue);
        MarkItem(ui, "quiz:answer");
        // The buttons beside the field when they fit in the wrap width, else on the line below.
        const ImGuiStyle& style = ImGui::GetStyle();
        const float buttons = ImGui::CalcTextSize(_("Check")).x + ImGui::CalcTextSize(_("Show me")).x +
                              4.0f * style.FramePadding.x + 2.0f * style.ItemSpacing.x;
        if (field + buttons <= wrap) ImGui::SameLine();
        submit |= ImGui::Button(_("Check"));
        MarkItem(ui, "quiz:check");
        ImGui::SameLine();
        const bool give_up = ImGui::Button(_("Show me"));
        if (submit || give_up) {
            ui::QuizFeedback f = give_up ? ui::QuizFeedback{} : ui::grade_answer(c.answer, next.shape(), cfg);
            if (give_up) {
                f.expected = next.shape();
                f.given = Shape{};
            }
            if (!f.given) {
                c.feedback = f;  // did not parse: ask again
                c.answered_step.clear();
                c.focus_answer = true;
            } else {
                c.score.record(next.name, f.correct);
                c.feedback = f;
                c.answered_step = next.name;
                const int reveal = c.asking;
                c.asking = -1;
                ui.selection.stepper.select(reveal);  // reveal the step
            }
        }
        if (c.feedback && !c.feedback->given)
            ImGui::TextColored(BadColor(), "%s %s", _("cannot read that:"), c.feedback->error.c_str());
    } else {
        ImGui::TextDisabled("%s", _("Press \u2192 (or Play) for the next step: you will be asked its shape first."));
    }
    ImGui::PopTextWrapPos();
}

}  // namespace

// The Quiz window (presentation mode draws the quiz inside its narrative column instead), in the
// bottom-right corner over Row sums: the pipeline, the Shape view's boxes and the inspector, which
// the answer needs, stay in sight. Its text wraps at Row sums' width (at most 30 lines of text
// wide), so it grows upwards rather than over the inspector.
void DrawQuizWindow(const Trace& trace, UiState& ui) {
    ui::ClassroomState& c = ui.classroom;
    if (!c.quiz || c.presentation) return;
    const ui::Rect place = DefaultRect(ui, ui::Panel::Quiz);
    const float em = ImGui::GetFontSize();
    const float wrap = std::clamp(place.w - 2.0f * ImGui::GetStyle().WindowPadding.x, 12.0f * em, 30.0f * em);
    ImGui::SetNextWindowPos(ImVec2(place.right(), place.bottom()),
                            TakeLayoutReset(ui, ui::Panel::Quiz) ? ImGuiCond_Always : ImGuiCond_Appearing, ImVec2(1.0f, 1.0f));
    if (c.asking >= 0 && c.focus_answer) ImGui::SetNextWindowFocus();  // once per question: menus stay usable
    bool open = true;
    const bool shown = ImGui::Begin(ui::window_title(_("Quiz: predict the next shape"), "Quiz").c_str(), &open,
                                    ImGuiWindowFlags_AlwaysAutoResize | ImGuiWindowFlags_NoCollapse);
    if (shown) {
        DrawQuizBody(trace, ui, wrap);
        // Grown by a question (auto-resized downwards from where it appeared): moved back up inside
        // the display, under the menu bar, so the field and Check stay in sight. Shrunk by an answer's
        // shorter text while on the display's bottom edge: moved down onto it, so Row sums' controls
        // under it do not peek out below.
        const ImVec2 d = ImGui::GetIO().DisplaySize, size = ImGui::GetWindowSize(), pos = ImGui::GetWindowPos();
        const float top = ImGui::GetFrameHeight();
        const float floor_y = std::max(d.y - size.y, top);
        const ImVec2 inside(std::clamp(pos.x, 0.0f, std::max(d.x - size.x, 0.0f)),
                            c.window_on_floor && size.y < c.window_h ? floor_y : std::clamp(pos.y, top, floor_y));
        if (inside.x != pos.x || inside.y != pos.y) ImGui::SetWindowPos(inside);
        c.window_h = size.y;
        c.window_on_floor = inside.y + size.y >= d.y - 1.0f;
    }
    ImGui::End();
    if (!open) c.quiz = false;
}

// ---------------------------------------------------------------------------------------------
// [SECTION] language
// ---------------------------------------------------------------------------------------------

void DrawLanguageMenu(UiState& ui) {
    if (!BeginMarkedMenu(ui, _("Language"), "Language")) return;
    if (ImGui::MenuItem("English", nullptr, ui::language() == ui::Language::English))
        ui::set_language(ui::Language::English);
    MarkItem(ui, "lang:en");
    const bool cjk = cjk_font_path() != nullptr;
    if (ImGui::MenuItem(cjk ? "\u4e2d\u6587\uff08\u7b80\u4f53\uff09" : "Chinese (simplified)", nullptr,
                        ui::language() == ui::Language::Chinese, cjk))
        ui::set_language(ui::Language::Chinese);
    MarkItem(ui, "lang:zh");
    if (!cjk && ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
        ImGui::SetTooltip(_("No Chinese font is installed: apt-get install %s (make run installs it)"), kCjkPackage);
    ImGui::EndMenu();
}

}  // namespace attnscope
