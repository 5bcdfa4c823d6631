// The GUI's words in the user's language. Every user-visible label goes through tr():
//
//     ImGui::Button(tr("Open"));
//     ImGui::Text(tr("%zu rows fail"), failing);   // printf formats are translated whole
//
// The key is the English text itself, so English needs no table and a missing translation
// falls back to English. The Simplified Chinese table is one list in logic/i18n.cpp: to
// translate a new label, add a line {"English text", "中文"} there (test_i18n lists the
// tr() literals in app/ that have none).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace attnscope::ui {

enum class Language { English, Chinese };

void set_language(Language language);
Language language();

// "en" / "zh" (also "zh-CN", "zh_CN", "chinese", "english"); nullopt for anything else.
std::optional<Language> parse_language(const std::string& text);
const char* language_code(Language language);  // "en", "zh"

// The current language's text for an English label (the label itself when untranslated).
// The returned pointer stays valid for the life of the program.
const char* tr(const char* english);
// The text in a given language (for the handout, which has no "current" language).
const char* tr_in(Language language, const char* english);

// An ImGui window title in the current language with a stable ID, so imgui.ini keeps the
// layout across a language switch: window_title(tr("Heads"), "Heads") = "注意力头###Heads".
std::string window_title(const char* translated, const char* id);

// The table, for tests and for the font atlas (which CJK glyphs to build).
bool has_translation(const std::string& english);
std::vector<std::string> chinese_texts();  // every Chinese string of the table

}  // namespace attnscope::ui
