#include "logic/wrap.hpp"

#include <cstdint>

namespace attnscope::ui {

namespace {

// The code point at s[i]; *length its UTF-8 bytes (1 for a stray byte).
char32_t decode(std::string_view s, std::size_t i, std::size_t* length) {
    const auto b = [&s](std::size_t k) { return static_cast<unsigned char>(k < s.size() ? s[k] : 0); };
    const unsigned char c = b(i);
    if (c >= 0xF0 && i + 3 < s.size() + 0) {
        *length = 4;
        return ((c & 0x07u) << 18) | ((b(i + 1) & 0x3Fu) << 12) | ((b(i + 2) & 0x3Fu) << 6) | (b(i + 3) & 0x3Fu);
    }
    if (c >= 0xE0 && i + 2 < s.size()) {
        *length = 3;
        return ((c & 0x0Fu) << 12) | ((b(i + 1) & 0x3Fu) << 6) | (b(i + 2) & 0x3Fu);
    }
    if (c >= 0xC0 && i + 1 < s.size()) {
        *length = 2;
        return ((c & 0x1Fu) << 6) | (b(i + 1) & 0x3Fu);
    }
    *length = 1;
    return c;
}

// Chinese characters and the full-width punctuation set with them: a line may break around each.
bool is_cjk(char32_t c) {
    return (c >= 0x2E80 && c <= 0x9FFF) || (c >= 0xF900 && c <= 0xFAFF) || (c >= 0xFF00 && c <= 0xFFEF);
}

// Punctuation a line must not start with (it closes what stands before it) ...
bool closes(char32_t c) {
    switch (c) {
        case U'，': case U'。': case U'；': case U'：': case U'、': case U'）': case U'」': case U'』': case U'》':
        case U'！': case U'？': case U'…': case ',': case '.': case ';': case ':': case ')': case ']': case '!': case '?':
            return true;
        default: return false;
    }
}
// ... and punctuation a line must not end with (it opens what follows).
bool opens(char32_t c) { return c == U'（' || c == U'「' || c == U'『' || c == U'《' || c == '(' || c == '['; }

bool has_cjk(std::string_view s) {
    for (std::size_t i = 0, n = 0; i < s.size(); i += n)
        if (is_cjk(decode(s, i, &n))) return true;
    return false;
}

struct Piece {
    std::size_t begin, end;  // bytes of the text
    bool blank_before;       // a blank separates it from the piece before (dropped at a break)
};

// A bracket this short is a shape or an argument list ("[B, N, 3, h, c]"): its blanks do not break.
constexpr std::size_t kShortBracket = 24;

// The blanks of run [begin, end) that may break a line: those outside every short bracket.
std::vector<std::size_t> breakable_blanks(std::string_view text, std::size_t begin, std::size_t end) {
    std::vector<std::size_t> close_of(end - begin, std::string_view::npos), stack;
    for (std::size_t i = begin; i < end; ++i) {
        if (text[i] == '(' || text[i] == '[') stack.push_back(i);
        else if ((text[i] == ')' || text[i] == ']') && !stack.empty()) close_of[stack.back() - begin] = i, stack.pop_back();
    }
    std::vector<std::size_t> blanks;
    stack.clear();
    for (std::size_t i = begin; i < end; ++i) {
        if (text[i] == '(' || text[i] == '[') stack.push_back(i);
        else if ((text[i] == ')' || text[i] == ']') && !stack.empty()) stack.pop_back();
        else if (text[i] == ' ') {
            bool inside_short = false;
            for (std::size_t open : stack) {
                const std::size_t close = close_of[open - begin];
                inside_short = inside_short || (close != std::string_view::npos && close - open <= kShortBracket);
            }
            if (!inside_short) blanks.push_back(i);
        }
    }
    return blanks;
}

// The pieces of one paragraph (no '\n'): each Chinese character; each run of other text whole in
// Chinese text, word by word in English. Closing punctuation sticks to the piece before it, an
// opening one to the piece after it.
std::vector<Piece> pieces_of(std::string_view text) {
    const bool chinese = has_cjk(text);
    std::vector<Piece> pieces;
    bool blank = false, stick_next = false;
    auto add = [&pieces](std::size_t begin, std::size_t end, bool blank_before, bool stick) {
        if (stick && !pieces.empty() && !blank_before) pieces.back().end = end;
        else pieces.push_back({begin, end, blank_before});
    };
    std::size_t i = 0;
    while (i < text.size()) {
        std::size_t n = 0;
        const char32_t c = decode(text, i, &n);
        if (c == ' ') {
            blank = true;
            i += 1;
            continue;
        }
        if (is_cjk(c)) {
            add(i, i + n, blank, stick_next || closes(c));
            stick_next = opens(c);
            blank = false;
            i += n;
            continue;
        }
        std::size_t end = i, last = i;  // the run up to the next Chinese character; last: after its last non-blank
        for (std::size_t m = 0; end < text.size(); end += m) {
            const char32_t d = decode(text, end, &m);
            if (is_cjk(d)) break;
            if (d != ' ') last = end + m;
        }
        std::vector<std::size_t> cuts;
        if (!chinese) cuts = breakable_blanks(text, i, last);
        std::size_t from = i;
        bool first = true;
        cuts.push_back(last);
        for (std::size_t cut : cuts) {
            if (cut > from) {
                add(from, cut, first ? blank : true, first && (stick_next || closes(decode(text, from, &n))));
                first = false;
            }
            from = cut + 1;
        }
        std::size_t m = 0;
        stick_next = last > i && opens(decode(text, last - 1, &m));
        blank = last < end;
        i = end;
    }
    return pieces;
}

struct Layout {
    std::string_view text;
    float width;
    const std::function<float(std::string_view)>& measure;
    float blank_width;
    std::vector<std::string_view> lines;
    std::size_t line_begin = std::string_view::npos, line_end = 0;
    float line_width = 0.0f;

    void flush() {
        if (line_begin != std::string_view::npos) lines.push_back(text.substr(line_begin, line_end - line_begin));
        line_begin = std::string_view::npos;
        line_width = 0.0f;
    }

    // level 0: the pieces of the paragraph; 1: the blanks of a piece wider than a line; 2: its characters.
    void place(const std::vector<Piece>& pieces, int level) {
        for (const Piece& p : pieces) {
            const float w = measure(text.substr(p.begin, p.end - p.begin));
            const float joined = line_width + (p.blank_before ? blank_width : 0.0f) + w;
            if (line_begin != std::string_view::npos && joined <= width) {
                line_end = p.end, line_width = joined;
                continue;
            }
            if (w > width && level < 2) {
                place(level == 0 ? words_of(p) : characters_of(p), level + 1);
                continue;
            }
            flush();
            line_begin = p.begin, line_end = p.end, line_width = w;
        }
    }

    std::vector<Piece> words_of(const Piece& p) const {
        std::vector<Piece> words;
        std::size_t from = p.begin;
        for (std::size_t i = p.begin; i <= p.end; ++i) {
            if (i < p.end && text[i] != ' ') continue;
            if (i > from) words.push_back({from, i, words.empty() ? p.blank_before : true});
            from = i + 1;
        }
        return words;
    }

    std::vector<Piece> characters_of(const Piece& p) const {
        std::vector<Piece> chars;
        for (std::size_t i = p.begin, n = 0; i < p.end; i += n) {
            decode(text, i, &n);
            chars.push_back({i, i + n, chars.empty() && p.blank_before});
        }
        return chars;
    }
};

// Whether a line is a widow: one Chinese character, or a number of one or two digits, and the
// closing punctuation after it ("过。", "2）"), alone on the last line of a paragraph.
bool is_widow(std::string_view line) {
    if (line.empty()) return false;
    std::size_t n = 0;
    const char32_t first = decode(line, 0, &n);
    std::size_t i = n;
    if (first >= U'0' && first <= U'9') {
        if (i < line.size() && line[i] >= '0' && line[i] <= '9') ++i;
    } else if (!is_cjk(first) || closes(first)) {
        return false;
    }
    for (; i < line.size(); i += n)
        if (!closes(decode(line, i, &n))) return false;
    return true;
}

// A paragraph's last line that is a widow takes the last piece of the line before it along, when
// that line keeps at least one piece and the two pieces fit:  "...会换行" / "过。"  ->  "...会换" / "行过。".
void mend_widow(Layout& layout, const std::vector<Piece>& pieces, std::size_t first_line) {
    std::vector<std::string_view>& lines = layout.lines;
    if (lines.size() < first_line + 2 || !is_widow(lines.back())) return;
    std::string_view& before = lines[lines.size() - 2];
    std::string_view& last = lines.back();
    const std::size_t begin = static_cast<std::size_t>(before.data() - layout.text.data()), end = begin + before.size();
    for (const Piece& p : pieces) {
        if (p.end != end || p.begin <= begin) continue;
        const std::size_t last_end = static_cast<std::size_t>(last.data() - layout.text.data()) + last.size();
        const std::string_view moved = layout.text.substr(p.begin, last_end - p.begin);
        if (layout.measure(moved) > layout.width) return;
        std::size_t kept = p.begin;
        while (kept > begin && layout.text[kept - 1] == ' ') --kept;
        before = layout.text.substr(begin, kept - begin);
        last = moved;
        return;
    }
}

}  // namespace

std::vector<std::string_view> wrap_lines(std::string_view text, float width,
                                         const std::function<float(std::string_view)>& measure) {
    Layout layout{text, width, measure, measure(" "), {}};
    for (std::size_t from = 0;;) {
        const std::size_t nl = text.find('\n', from);
        const std::size_t to = nl == std::string_view::npos ? text.size() : nl;
        std::vector<Piece> pieces = pieces_of(text.substr(from, to - from));
        for (Piece& p : pieces) p.begin += from, p.end += from;
        const std::size_t first_line = layout.lines.size();
        layout.place(pieces, 0);
        if (layout.line_begin == std::string_view::npos) layout.lines.push_back(text.substr(from, 0));  // an empty line
        layout.flush();
        mend_widow(layout, pieces, first_line);
        if (nl == std::string_view::npos) break;
        from = nl + 1;
    }
    return layout.lines;
}

}  // namespace attnscope::ui
