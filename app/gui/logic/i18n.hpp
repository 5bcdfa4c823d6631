// The GUI's words in the user's language, the GNU gettext way. Every user-visible label goes
// through _():
//
//     ImGui::Button(_("Open"));
//     ImGui::Text(_("%zu rows fail"), failing);   // printf formats are translated whole
//
// The key is the English text itself, so English needs no catalogue and a missing translation
// falls back to English. The Simplified Chinese is po/zh_CN.po, compiled by msgfmt at build time to
// <prefix>/share/locale/zh_CN/LC_MESSAGES/attnscope.mo, which logic/i18n.cpp reads (why not through
// glibc's gettext() is said there). A literal shown later (a table's labels) is
// marked N_("...") where it is written; core's texts are entries of context "core" (NC_, see
// logic/core_text.hpp). `make update-po` adds new strings to the .po (xgettext, msgmerge) and
// tests/i18n fails on every one left untranslated.
#pragma once

#include <optional>
#include <string>
#include <vector>

// Marks a literal for xgettext without translating it here: N_("k") is "k".
#define N_(text) text
#define NC_(context, text) text

namespace attnscope::ui {

enum class Language { English, Chinese };

void set_language(Language language);
Language language();

// "en" / "zh" (also "zh-CN", "zh_CN", "chinese", "english"); nullopt for anything else.
std::optional<Language> parse_language(const std::string& text);
const char* language_code(Language language);  // "en", "zh"

// The current language's text for an English label (the label itself when untranslated).
// The returned pointer stays valid for the life of the program.
const char* _(const char* english);
// The text in a given language (for the handout, which has no "current" language).
const char* tr_in(Language language, const char* english);
// The Chinese of an entry with a context (msgctxt), or nullptr when it has none.
const char* chinese_in_context(const char* context, const char* english);

// An ImGui window title in the current language with a stable ID, so imgui.ini keeps the
// layout across a language switch: window_title(_("Heads"), "Heads") = "注意力头###Heads".
std::string window_title(const char* translated, const char* id);

// The catalogue, for tests and for the font atlas (which CJK glyphs to build).
bool has_translation(const char* english);
std::vector<std::string> chinese_texts();  // every Chinese string of the catalogue
// Where the catalogue was looked for, and whether it was there.
std::string catalogue_path();
bool catalogue_found();

}  // namespace attnscope::ui
