// What core tells the user, as data: the code of a message's template and its named arguments.
// core writes it in English (an error's what(), the command line); the app translates it from the
// code, with the arguments as they are (app/gui/logic/core_text.hpp):
//
//     throw FileError(Message(Msg::npy_magic, {{"file", path}}));
//     // what(): "x.npy: not a .npy file (it does not start with the magic string \x93NUMPY)"
//
// Every code and its English template is one line of messages.inc; {name} takes the argument of
// that name, a nested message's English (or translation) in its place. The Chinese of each
// template is in po/zh_CN.po; tests/gui/test_core_messages checks every code has one, with the
// same names.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace attnscope {

enum class Msg : std::uint16_t {
#define ATTNSCOPE_MESSAGE(code, english) code,
#include "messages.inc"
#undef ATTNSCOPE_MESSAGE
    count
};

struct Message;

struct MessageArg {
    std::string name;                       // "file"
    std::string text;                       // "/data/x.npy": data, never translated
    std::shared_ptr<const Message> nested;  // or a message of its own in that place
};

struct Message {
    Msg code = Msg::none;
    std::vector<MessageArg> args;

    Message() = default;
    Message(Msg code, std::initializer_list<std::pair<const char*, std::string>> args = {});
    // The same with a nested message as the argument `name`.
    Message with(const char* name, Message nested) const;
    bool empty() const { return code == Msg::none; }
};

// A text that is not (yet) a coded message: Msg::text, the English in {text}.
Message plain_text(std::string english);

const char* message_name(Msg code);      // "npy_magic"
const char* message_template(Msg code);  // "{file}: not a .npy file ..."
// The names a template takes, in the order they first appear ({file}, {reason} -> file, reason).
std::vector<std::string> template_names(const char* english_template);
// A template with its {name}s filled by fill(name); a {name} fill does not know stays as it is.
template <typename Fill>
std::string fill_template(const char* tmpl, Fill&& fill);

// The message in English; "" for an empty one (Msg::none).
std::string english(const Message& message);
std::vector<std::string> english(const std::vector<Message>& messages);  // each in English

// An exception of core whose text is a message; what() is its English.
struct CoreError : std::runtime_error {
    explicit CoreError(const std::string& english_text);  // not coded: plain_text
    explicit CoreError(Message message);
    Message message;
};

// The message an exception carries: a CoreError's own, else plain_text(e.what()).
Message message_of(const std::exception& e);

// ---- implementation of fill_template ----------------------------------------------------------
template <typename Fill>
std::string fill_template(const char* tmpl, Fill&& fill) {
    std::string out;
    for (const char* s = tmpl; *s;) {
        const char* end = s[0] == '{' ? s + 1 : nullptr;
        while (end && ((*end >= 'a' && *end <= 'z') || *end == '_' || (*end >= '0' && *end <= '9'))) ++end;
        if (end && end > s + 1 && *end == '}') {
            const std::string name(s + 1, end);
            if (!fill(name, out)) out.append(s, end + 1);
            s = end + 1;
        } else {
            out += *s++;
        }
    }
    return out;
}

}  // namespace attnscope
