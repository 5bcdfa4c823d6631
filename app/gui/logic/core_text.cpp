// tr_core(): core's English texts matched against the catalogue of core's message templates.
#include "logic/core_text.hpp"

#include <cctype>
#include <iterator>
#include <map>
#include <mutex>
#include <optional>
#include <string_view>
#include <unordered_map>

namespace attnscope::ui {

namespace {

const char* const kTemplates[] = {
#include "logic/core_messages.inc"
};

// The templates with their Chinese from the catalogue (po/zh_CN.po); one without is left out.
const std::vector<CoreMessage>& messages() {
    static const std::vector<CoreMessage> m = [] {
        std::vector<CoreMessage> m;
        for (const char* english : kTemplates)
            if (const char* chinese = chinese_in_context("core", english)) m.push_back({english, chinese});
        return m;
    }();
    return m;
}

// A template cut at its {}: "a {} b {}" = pieces {"a ", " b ", ""}.
struct Pattern {
    std::vector<std::string_view> pieces;
    std::size_t fixed = 0;  // characters outside the {}: the more, the more specific
    const char* chinese = nullptr;
};

struct Catalogue {
    std::unordered_map<std::string_view, const char*> exact;  // templates without {}
    std::vector<Pattern> patterns;
};

const Catalogue& catalogue() {
    static const Catalogue c = [] {
        Catalogue c;
        for (const CoreMessage& m : messages()) {
            const std::string_view e = m.english;
            if (e.find("{}") == std::string_view::npos) {
                c.exact.emplace(e, m.chinese);
                continue;
            }
            Pattern p;
            p.chinese = m.chinese;
            std::size_t from = 0;
            for (std::size_t at; (at = e.find("{}", from)) != std::string_view::npos; from = at + 2)
                p.pieces.push_back(e.substr(from, at - from));
            p.pieces.push_back(e.substr(from));
            for (std::string_view piece : p.pieces) p.fixed += piece.size();
            c.patterns.push_back(p);
        }
        return c;
    }();
    return c;
}

// The arguments when text has the pattern's pieces in order, each {} covering at least one character.
std::optional<std::vector<std::string>> match(const Pattern& p, std::string_view text) {
    const std::string_view first = p.pieces.front(), last = p.pieces.back();
    if (text.size() < p.fixed + p.pieces.size() - 1) return std::nullopt;
    if (text.substr(0, first.size()) != first || text.substr(text.size() - last.size()) != last) return std::nullopt;
    std::vector<std::string> args;
    std::size_t at = first.size();
    const std::size_t end = text.size() - last.size();
    for (std::size_t i = 1; i + 1 < p.pieces.size(); ++i) {
        const std::size_t found = text.find(p.pieces[i], at + 1);
        if (found == std::string_view::npos || found + p.pieces[i].size() > end) return std::nullopt;
        args.emplace_back(text.substr(at, found - at));
        at = found + p.pieces[i].size();
    }
    if (end <= at) return std::nullopt;
    args.emplace_back(text.substr(at, end - at));
    return args;
}

// A translation, and whether every part of the text had one.
struct Translated {
    std::string text;
    bool complete = true;
};

Translated translate_line(std::string_view line, int depth);

// The Chinese template with its {} / {0} filled in; an argument that is a core message translated.
// An argument of several clauses ("9.0; attnscope reads versions ...") that does not translate
// whole leaves the translation incomplete: the template's {} took core's own prose.
Translated fill(const char* chinese, const std::vector<std::string>& args, int depth) {
    Translated out;
    std::size_t next = 0;
    for (const char* s = chinese; *s;) {
        std::size_t index = args.size();
        if (s[0] == '{' && s[1] == '}') index = next++, s += 2;
        else if (s[0] == '{' && std::isdigit(static_cast<unsigned char>(s[1])) && s[2] == '}')
            index = static_cast<std::size_t>(s[1] - '0'), s += 3;
        else {
            out.text += *s++;
            continue;
        }
        if (index >= args.size()) continue;
        const Translated nested = depth < 3 ? translate_line(args[index], depth + 1) : Translated{args[index], false};
        out.text += nested.complete ? nested.text : args[index];
        if (!nested.complete && args[index].find("; ") != std::string::npos) out.complete = false;
    }
    return out;
}

std::optional<Translated> whole(std::string_view line, int depth) {
    const Catalogue& c = catalogue();
    if (const auto it = c.exact.find(line); it != c.exact.end()) return Translated{it->second};
    const std::string text(line);
    if (has_translation(text.c_str())) return Translated{tr_in(Language::Chinese, text.c_str())};
    const Pattern* best = nullptr;
    std::vector<std::string> best_args;
    for (const Pattern& p : c.patterns) {
        if (best && p.fixed <= best->fixed) continue;
        if (auto args = match(p, line)) best = &p, best_args = std::move(*args);
    }
    if (!best) return std::nullopt;
    return fill(best->chinese, best_args, depth);
}

// Whether the head of "head: tail" names a file: core's file errors start with the path
// ("/data/x.npz: not a readable .npz ..."), an argument like any other, kept as it is. A path has a
// '/' or ends in an extension (".npz", ".pt"); a clause of prose ("--valid-tokens", "tensor 'a'") has
// neither.
bool names_file(std::string_view head) {
    if (head.find('/') != std::string_view::npos) return true;
    const std::size_t dot = head.rfind('.');
    if (dot == std::string_view::npos || dot == 0 || dot + 1 == head.size() || head.find(' ') != std::string_view::npos)
        return false;
    for (std::size_t i = dot + 1; i < head.size(); ++i)
        if (!std::isalnum(static_cast<unsigned char>(head[i]))) return false;
    return true;
}

// A file's error: the path kept, what follows translated (whole, or its own "; " and ": " inside),
// so that no template's {} takes the path. Then the whole line when the catalogue has it; else its
// clauses ("a; b" and then "head: tail"), each translated on its own, so that core's notes built
// from pieces need one entry per piece. The first complete translation wins; when none is, the
// first one found.
Translated translate_line(std::string_view line, int depth) {
    if (line.empty()) return {};
    std::optional<Translated> partial;
    if (const std::size_t at = line.find(": "); at != std::string_view::npos && at > 0 && names_file(line.substr(0, at))) {
        const Translated tail = translate_line(line.substr(at + 2), depth);
        Translated t{std::string(line.substr(0, at)) + "：" + tail.text, tail.complete};
        if (t.complete) return t;
        partial = std::move(t);
    }
    if (auto t = whole(line, depth)) {
        if (t->complete) return *t;
        if (!partial) partial = std::move(*t);
    }
    for (const auto& [separator, chinese] : {std::pair<std::string_view, const char*>{"; ", "；"}, {": ", "："}}) {
        const std::size_t at = line.find(separator);
        if (at == std::string_view::npos || at == 0) continue;
        const Translated head = translate_line(line.substr(0, at), depth);
        const Translated tail = translate_line(line.substr(at + separator.size()), depth);
        Translated t{head.text + chinese + tail.text, head.complete && tail.complete};
        if (t.complete || !partial) return t;
        break;
    }
    return partial ? *partial : Translated{std::string(line), false};
}

Translated translate(const std::string& english) {
    Translated out;
    std::size_t from = 0;
    while (true) {
        const std::size_t nl = english.find('\n', from);
        const std::string_view line = std::string_view(english).substr(from, nl == std::string::npos ? nl : nl - from);
        // Leading blanks (an indented line of an error message) stay as they are.
        const std::size_t lead = std::min(line.find_first_not_of(' '), line.size());
        out.text += line.substr(0, lead);
        // An indented line is code (the operands of a TensorSensor-style message): kept as it is when
        // the catalogue has no entry.
        const Translated t = translate_line(line.substr(lead), 0);
        out.text += t.text;
        out.complete = out.complete && (t.complete || lead > 0);
        if (nl == std::string::npos) break;
        out.text += '\n';
        from = nl + 1;
    }
    return out;
}

}  // namespace

std::string tr_core_in(Language language, const std::string& english) {
    return language == Language::English ? english : translate(english).text;
}

const char* tr_core(const std::string& english) {
    if (language() == Language::English) return english.c_str();
    static std::mutex mutex;
    static std::unordered_map<std::string, std::string> cache;  // English -> Chinese, node-based: stable
    std::lock_guard<std::mutex> lock(mutex);
    auto it = cache.find(english);
    if (it == cache.end()) it = cache.emplace(english, translate(english).text).first;
    return it->second.c_str();
}

std::string tr_code(const std::string& code) {
    const std::size_t hash = code.find("# ");
    if (hash == std::string::npos || language() == Language::English) return code;
    return code.substr(0, hash + 2) + tr_core(code.substr(hash + 2));
}

std::string tr_formula(const std::string& formula) {
    const std::size_t gap = formula.find("  ");
    if (gap == std::string::npos || language() == Language::English) return formula;
    return formula.substr(0, gap + 2) + tr_core(formula.substr(gap + 2));
}

std::string tr_message_in(Language language, const Message& message) {
    if (language == Language::English || message.empty()) return english(message);
    if (message.code == Msg::text) return message.args.empty() ? std::string() : tr_core_in(language, message.args[0].text);
    const char* tmpl = message_template(message.code);
    return fill_template(tr_in(language, tmpl), [&](const std::string& name, std::string& out) {
        for (const MessageArg& a : message.args)
            if (a.name == name) {
                // An argument is data, kept as it is; but {file} may name a member of the file as core
                // labels it ("x.npz: member 'a.npy'"): the path stays, the label's words translate;
                // and a {reason} in a library's words (libzip's "Not a zip archive") translates where
                // the catalogue has it.
                out += a.nested ? tr_message_in(language, *a.nested)
                       : name == "file" || name == "reason" ? tr_core_in(language, a.text)
                                                            : a.text;
                return true;
            }
        return false;
    });
}

std::string tr_message(const Message& message) { return tr_message_in(language(), message); }

bool has_message_translation(const Message& message) {
    if (message.code == Msg::text) return !message.args.empty() && has_core_translation(message.args[0].text);
    if (!has_translation(message_template(message.code))) return false;
    for (const MessageArg& a : message.args)
        if (a.nested && !has_message_translation(*a.nested)) return false;
    return true;
}

const std::vector<CoreMessage>& core_catalogue() { return messages(); }

std::vector<const char*> core_templates() { return {std::begin(kTemplates), std::end(kTemplates)}; }

bool has_core_translation(const std::string& english) { return translate(english).complete; }

}  // namespace attnscope::ui
