#include "message.hpp"

namespace attnscope {

namespace {

struct Row {
    const char* name;
    const char* english;
};

constexpr Row kMessages[] = {
#define ATTNSCOPE_MESSAGE(code, english) {#code, english},
#include "messages.inc"
#undef ATTNSCOPE_MESSAGE
};
static_assert(sizeof kMessages / sizeof kMessages[0] == static_cast<std::size_t>(Msg::count));

const Row& row(Msg code) {
    const auto i = static_cast<std::size_t>(code);
    return kMessages[i < static_cast<std::size_t>(Msg::count) ? i : 0];
}

}  // namespace

Message::Message(Msg code, std::initializer_list<std::pair<const char*, std::string>> args) : code(code) {
    for (const auto& [name, text] : args) this->args.push_back({name, text, nullptr});
}

Message Message::with(const char* name, Message nested) const {
    Message m = *this;
    m.args.push_back({name, {}, std::make_shared<const Message>(std::move(nested))});
    return m;
}

Message plain_text(std::string english) { return Message(Msg::text, {{"text", std::move(english)}}); }

const char* message_name(Msg code) { return row(code).name; }
const char* message_template(Msg code) { return row(code).english; }

std::vector<std::string> template_names(const char* english_template) {
    std::vector<std::string> names;
    fill_template(english_template, [&](const std::string& name, std::string&) {
        bool seen = false;
        for (const std::string& n : names) seen = seen || n == name;
        if (!seen) names.push_back(name);
        return false;
    });
    return names;
}

std::string english(const Message& message) {
    if (message.empty()) return {};
    return fill_template(message_template(message.code), [&](const std::string& name, std::string& out) {
        for (const MessageArg& a : message.args)
            if (a.name == name) {
                out += a.nested ? english(*a.nested) : a.text;
                return true;
            }
        return false;
    });
}

std::vector<std::string> english(const std::vector<Message>& messages) {
    std::vector<std::string> out;
    for (const Message& m : messages) out.push_back(english(m));
    return out;
}

CoreError::CoreError(const std::string& english_text) : CoreError(plain_text(english_text)) {}
CoreError::CoreError(Message m) : std::runtime_error(english(m)), message(std::move(m)) {}

Message message_of(const std::exception& e) {
    if (const auto* core = dynamic_cast<const CoreError*>(&e)) return core->message;
    return plain_text(e.what());
}

}  // namespace attnscope
