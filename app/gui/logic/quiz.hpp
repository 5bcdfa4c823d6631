// "Predict the next shape": the student types the shape of the next step before it is shown.
// Parsing and scoring only (no ImGui); the Quiz window in panels/classroom_panel.cpp asks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "config.hpp"
#include "tensor.hpp"

namespace attnscope::ui {

// A typed shape: "[2, 8, 16, 96]", "2,8,16,96", "(2 8 16 96)", "torch.Size([2, 8])", or symbols of
// the config: "B, h, N, c", "[B, N, 3*C]", "C/h" (B batch, N and N' tokens, C dim, h heads, c head
// dim; * and / between terms). Returns the shape, or nullopt and a one-line *error.
std::optional<Shape> parse_shape_answer(const std::string& text, const AttentionConfig& config, std::string* error);

struct QuizFeedback {
    bool correct = false;
    Shape expected;
    std::optional<Shape> given;  // nullopt: the text did not parse (error says why)
    std::string error;
};

// Grades an answer against the step's real shape.
QuizFeedback grade_answer(const std::string& text, const Shape& expected, const AttentionConfig& config);

// The answer field's hint: one example typed in numbers and one in symbols of the config, neither
// of which is the shape of any of `shapes` (the trace's steps), so the hint gives no answer away.
struct QuizHint {
    std::string numbers;  // "[2, 3, 5]"
    std::string symbols;  // "N, B, C"
};
QuizHint quiz_hint(const std::vector<Shape>& shapes, const AttentionConfig& config);

// The score of one session: every step is asked at most once per trace (asked again after reset()).
struct QuizScore {
    int right = 0;
    int asked = 0;
    std::set<std::string> answered;  // steps already asked: they are shown without a question

    bool was_asked(const std::string& step) const { return answered.count(step) > 0; }
    void record(const std::string& step, bool correct);
    void reset();
    std::string text() const;  // "3 / 5"
};

// The classroom's UI state (UiState::classroom): presentation mode and the quiz.
struct ClassroomState {
    bool presentation = false;        // F5: full screen, 2x fonts, only the current step
    bool quiz = false;                // ask the next step's shape before showing it
    bool quiz_was_on = false;         // the quiz was on last frame (turning it on asks at once)
    QuizScore score;                  // this session's score
    int asking = -1;                  // the step index whose shape is being asked (-1: none)
    char answer[128] = {};            // the text field
    bool focus_answer = false;        // give the text field the keyboard once
    std::string answered_step;        // the last graded step (its feedback is shown)
    std::optional<QuizFeedback> feedback;
    std::string font_message;         // why Chinese is unavailable ("" when it is)
    std::string slide_title;          // presentation mode's title of the step on the slide (the state report)
    float narrative_h = 0.0f;         // the slide's narrative's height on the last frame (the quiz gets the rest)
    float quiz_h = 0.0f;              // the slide's quiz region's height on the last frame
    float window_h = 0.0f;            // the Quiz window's height on the last frame
    bool window_on_floor = false;     // its bottom edge was on the display's on the last frame
    std::uint64_t trace_generation = 0;  // the trace the score, question and feedback belong to

    // A new trace on screen (a file opened, the config changed): the score, the question and the
    // last answer's feedback belonged to the old one and are dropped. Returns true when it reset.
    bool show_trace(std::uint64_t generation);
};

}  // namespace attnscope::ui
