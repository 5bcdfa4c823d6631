#include "logic/i18n.hpp"

#include <atomic>

namespace attnscope::ui {

namespace {
std::atomic<Language> current{Language::English};
}  // namespace

void set_language(Language language) { current = language; }
Language language() { return current; }

const char* tr(const char* english) { return english; }

}  // namespace attnscope::ui
