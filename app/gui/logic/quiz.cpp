#include "logic/quiz.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdint>
#include <vector>

#include "logic/i18n.hpp"

namespace attnscope::ui {

namespace {

// A translated message with its one argument: with(_("'%s' is too large"), term).
std::string with(const char* format, const std::string& arg) {
    char text[512];
    std::snprintf(text, sizeof text, format, arg.c_str());
    return text;
}

// The value of a symbol of the config, or nullopt.
std::optional<std::uint64_t> symbol_value(const std::string& s, const AttentionConfig& c) {
    if (s == "B") return c.batch;
    if (s == "N" || s == "N'" || s == "T") return c.tokens;
    if (s == "C" || s == "D") return c.dim;
    if (s == "h" || s == "H") return c.heads;
    if (s == "c" || s == "d") return c.heads ? c.dim / c.heads : 0;
    return std::nullopt;
}

// One axis: terms joined by * or / ("3*C", "C/h", "B", "96"), evaluated left to right.
std::optional<std::uint64_t> eval_axis(const std::string& text, const AttentionConfig& config, std::string* error) {
    std::uint64_t value = 0;
    char op = 0;  // 0: first term
    std::size_t i = 0;
    const auto fail = [&](const std::string& why) {
        *error = why;
        return std::optional<std::uint64_t>();
    };
    while (i < text.size()) {
        std::string term;
        if (std::isdigit(static_cast<unsigned char>(text[i]))) {
            while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) term += text[i++];
        } else if (std::isalpha(static_cast<unsigned char>(text[i]))) {
            while (i < text.size() && (std::isalnum(static_cast<unsigned char>(text[i])) || text[i] == '_' || text[i] == '\'')) term += text[i++];
        } else {
            return fail(with(_("'%s' is not a number, a symbol (B, N, C, h, c) or * /"), std::string(1, text[i])));
        }
        std::uint64_t v = 0;
        if (std::isdigit(static_cast<unsigned char>(term[0]))) {
            if (term.size() > 12) return fail(with(_("'%s' is too large"), term));
            v = std::stoull(term);
        } else if (auto s = symbol_value(term, config)) {
            v = *s;
        } else {
            return fail(with(_("unknown symbol '%s' (use B, N, C, h, c or numbers)"), term));
        }
        if (op == 0) value = v;
        else if (op == '*') value *= v;
        else if (v == 0 || value % v != 0) return fail(with(_("'%s' does not divide evenly"), text));
        else value /= v;
        if (i == text.size()) return value;
        op = text[i];
        if (op != '*' && op != '/') return fail(with(_("'%s' between terms: use * or /"), std::string(1, op)));
        if (++i == text.size()) return fail(with(_("'%s' ends with an operator"), text));
    }
    return fail(_("an empty axis"));
}

}  // namespace

std::optional<Shape> parse_shape_answer(const std::string& raw, const AttentionConfig& config, std::string* error) {
    std::string text = raw;
    // torch.Size([2, 8]) and Size(...) are what print(x.shape) shows.
    for (const char* prefix : {"torch.Size", "Size"})
        if (text.find(prefix) != std::string::npos) text.erase(text.find(prefix), std::string(prefix).size());
    // Brackets are decoration; commas and blanks separate axes; blanks around * / are ignored.
    std::vector<std::string> axes;
    std::string current;
    bool after_op = false;
    auto flush = [&] {
        if (!current.empty()) axes.push_back(current);
        current.clear();
    };
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char ch = text[i];
        if (ch == '[' || ch == ']' || ch == '(' || ch == ')') {
            flush();
        } else if (ch == ',' || ch == ';') {
            flush();
            after_op = false;
        } else if (std::isspace(static_cast<unsigned char>(ch))) {
            // "3 * C" is one axis; "2 8 16" are three.
            std::size_t j = i;
            while (j < text.size() && std::isspace(static_cast<unsigned char>(text[j]))) ++j;
            const bool next_is_op = j < text.size() && (text[j] == '*' || text[j] == '/');
            if (!after_op && !next_is_op) flush();
        } else {
            current += ch;
            after_op = ch == '*' || ch == '/';
        }
    }
    flush();
    if (axes.empty()) {
        *error = _("type a shape: numbers, or the symbols B, N, C, h, c");
        return std::nullopt;
    }
    Shape shape;
    for (const std::string& a : axes) {
        auto v = eval_axis(a, config, error);
        if (!v) return std::nullopt;
        shape.push_back(static_cast<std::size_t>(*v));
    }
    return shape;
}

QuizFeedback grade_answer(const std::string& text, const Shape& expected, const AttentionConfig& config) {
    QuizFeedback f;
    f.expected = expected;
    f.given = parse_shape_answer(text, config, &f.error);
    f.correct = f.given && *f.given == expected;
    return f;
}

QuizHint quiz_hint(const std::vector<Shape>& shapes, const AttentionConfig& config) {
    const auto is_answer = [&](const std::string& text) {
        std::string error;
        const std::optional<Shape> shape = parse_shape_answer(text, config, &error);
        return !shape || std::find(shapes.begin(), shapes.end(), *shape) != shapes.end();
    };
    // Shapes no attention step has in the usual configs come first; the check makes it certain.
    static const char* const numbers[] = {"[2, 3, 5]", "[7, 5, 3]", "[5, 7]", "[3, 2, 7, 5]", "[11, 13]"};
    static const char* const symbols[] = {"N, B, C", "c, h, B", "C, N", "h, B, N, c", "c, C, N, h"};
    QuizHint hint;
    for (const char* n : numbers)
        if (!is_answer(n)) {
            hint.numbers = n;
            break;
        }
    for (const char* s : symbols)
        if (!is_answer(s)) {
            hint.symbols = s;
            break;
        }
    return hint;
}

bool ClassroomState::show_trace(std::uint64_t generation) {
    if (generation == trace_generation) return false;
    trace_generation = generation;
    score.reset();
    asking = -1;
    answer[0] = '\0';
    focus_answer = false;
    answered_step.clear();
    feedback.reset();
    return true;
}

void QuizScore::record(const std::string& step, bool correct) {
    if (!answered.insert(step).second) return;  // asked once per step
    ++asked;
    if (correct) ++right;
}

void QuizScore::reset() { *this = QuizScore{}; }

std::string QuizScore::text() const { return std::to_string(right) + " / " + std::to_string(asked); }

}  // namespace attnscope::ui
