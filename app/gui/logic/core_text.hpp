// The user's language for the texts core/ writes. core/ stays English (the command line prints
// its texts as they are, and core has no GUI code); the app translates what core wrote, using one
// list of core's message templates (logic/core_messages.inc), whose Chinese is in po/zh_CN.po under
// the context "core":
//
//     NC_("core", "caught by the shape check: {}")     msgstr "由形状检查发现：{}"
//
// A text matches a template when the template's fixed pieces appear in order and every {} covers
// some text; the covered arguments (numbers, shapes, names) go into the Chinese in order, or by
// index ({0}, {1} ...) where Chinese wants another order. An argument that is itself a core
// message is translated too. A text with several lines is translated line by line.
//
//     ImGui::TextUnformatted(tr_core(step.note));
//
// tests/gui/test_classroom_logic runs the pipelines, the demo ViT, the bug zoo and the checks and
// fails on every core text that has no Chinese here. Core's errors and a file's notes are coded
// messages (message.hpp), translated from their codes by tr_message; tests/gui/test_core_messages
// checks every code has a Chinese template and runs core on crafted bad inputs.
#pragma once

#include <string>
#include <vector>

#include "logic/i18n.hpp"
#include "message.hpp"

namespace attnscope::ui {

// A core text in the current language; the English itself when nothing matches. In English the
// pointer is english.c_str(); a translation is cached and stays valid for the life of the program.
const char* tr_core(const std::string& english);
std::string tr_core_in(Language language, const std::string& english);

// A coded message of core (message.hpp) in a language: its template's Chinese (po/zh_CN.po, the
// English template its msgid) with the {name}s filled by the arguments as they are and a nested
// message translated in its place; a Msg::text through tr_core. English is core's english().
std::string tr_message_in(Language language, const Message& message);
std::string tr_message(const Message& message);  // in the current language
// Whether the message's template, and each nested one's, has a Chinese (a Msg::text: whether
// tr_core translates it completely).
bool has_message_translation(const Message& message);

// A line of code with a prose comment after "# " ("attn.softmax(dim=-2)   # BUG: over the queries"):
// the code kept, the comment translated.
std::string tr_code(const std::string& code);

// An einops formula with a remark after two blanks ("b h n m -> b h n m  (softmax over m)"): the
// formula kept, the remark translated.
std::string tr_formula(const std::string& formula);

// The catalogue, for tests and for the font atlas.
struct CoreMessage {
    const char* english;  // with {} for each argument
    const char* chinese;  // with {} (in order) or {0}, {1} ... (by index)
};
const std::vector<CoreMessage>& core_catalogue();  // the templates that have a Chinese
std::vector<const char*> core_templates();          // every template, with a Chinese or not
// Whether every line and clause of a core text has a Chinese (test_classroom_logic lists those that have not).
bool has_core_translation(const std::string& english);

}  // namespace attnscope::ui
