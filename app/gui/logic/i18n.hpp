// The GUI's words in the user's language. Every user-visible label goes through tr():
//
//     ImGui::Button(tr("Open"));
//     ImGui::Text(tr("%zu rows fail"), failing);   // printf formats are translated whole
//
// The key is the English text itself, so English needs no table and a missing translation
// falls back to English. Translations live in logic/i18n.cpp.
#pragma once

namespace attnscope::ui {

enum class Language { English, Chinese };

void set_language(Language language);
Language language();

// The current language's text for an English label (the label itself when untranslated).
// The returned pointer stays valid for the life of the program.
const char* tr(const char* english);

}  // namespace attnscope::ui
