// tr() and the Simplified Chinese table.
//
// To translate a label: add one line {"English text exactly as in tr(...)", "中文"} to kChinese
// below (anywhere; keep printf specifiers like %zu and %s in the same order). tests/gui/test_i18n
// fails and lists every tr() literal under app/ that has no line here.
#include "logic/i18n.hpp"

#include <atomic>
#include <string_view>
#include <unordered_map>

namespace attnscope::ui {

namespace {

std::atomic<Language> current{Language::English};

struct Entry {
    const char* english;
    const char* chinese;
};

// clang-format off
const Entry kChinese[] = {
#include "logic/i18n_zh.inc"
};
// clang-format on

// Keyed by views of the table's own literals: a lookup builds no std::string (tr() runs for every
// label of every frame).
const std::unordered_map<std::string_view, const char*>& chinese_table() {
    static const std::unordered_map<std::string_view, const char*> table = [] {
        std::unordered_map<std::string_view, const char*> t;
        for (const Entry& e : kChinese) t.emplace(e.english, e.chinese);
        return t;
    }();
    return table;
}

}  // namespace

void set_language(Language language) { current = language; }
Language language() { return current; }

std::optional<Language> parse_language(const std::string& text) {
    if (text == "en" || text == "english" || text == "English" || text == "en_US" || text == "en-US")
        return Language::English;
    if (text == "zh" || text == "zh-CN" || text == "zh_CN" || text == "zh-Hans" || text == "chinese" ||
        text == "Chinese")
        return Language::Chinese;
    return std::nullopt;
}

const char* language_code(Language language) { return language == Language::Chinese ? "zh" : "en"; }

const char* tr_in(Language language, const char* english) {
    if (language == Language::English || english == nullptr) return english;
    const auto& t = chinese_table();
    const auto it = t.find(english);
    return it == t.end() ? english : it->second;
}

const char* tr(const char* english) { return tr_in(current, english); }

std::string window_title(const char* translated, const char* id) { return std::string(translated) + "###" + id; }

bool has_translation(const std::string& english) { return chinese_table().count(english) > 0; }

std::vector<std::string> chinese_texts() {
    std::vector<std::string> v;
    for (const Entry& e : kChinese) v.emplace_back(e.chinese);
    return v;
}

}  // namespace attnscope::ui
