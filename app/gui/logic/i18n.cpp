// _() over the compiled gettext catalogue (the .mo file msgfmt writes from po/zh_CN.po).
//
// The catalogue is read here rather than through glibc's gettext(): glibc chooses the language from
// the process's LC_MESSAGES locale and LANGUAGE, and zh_CN.UTF-8 is rarely installed, so it would
// need LANGUAGE=zh_CN for the whole process. That also switches libc's own messages (strerror,
// which core's English errors quote) and every other library's, and gives one language at a time,
// where the handout asks for either. The file format is GNU gettext's, so the usual tools (msgfmt,
// msgunfmt, msgmerge, poedit) work on it.
#include "logic/i18n.hpp"

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string_view>
#include <unordered_map>

namespace fs = std::filesystem;

namespace attnscope::ui {

namespace {

std::atomic<Language> current{Language::English};

// $ATTNSCOPE_LOCALEDIR when set (a translator's catalogue; the test binaries, which are not where
// an installed attnscope is); else <the executable's folder>/ATTNSCOPE_LOCALE_FROM_BIN, i.e.
// bin/../share/locale, which the build tree has too for build/app/attnscope.
std::string find_mo() {
    const std::string mo = "/zh_CN/LC_MESSAGES/attnscope.mo";
    if (const char* dir = std::getenv("ATTNSCOPE_LOCALEDIR"); dir && *dir) return dir + mo;
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (ec) return ATTNSCOPE_LOCALE_FROM_BIN + mo;  // relative to the working directory: the best left
    return (exe.parent_path() / ATTNSCOPE_LOCALE_FROM_BIN).lexically_normal().string() + mo;
}

// A .mo file: a magic number, the count N, the offsets of two tables of N {length, offset}: the
// originals (sorted; "context\004text" for an entry with a msgctxt) and their translations. Entry 0,
// the empty original, is the header.
struct Catalogue {
    std::string path;
    std::string bytes;                                             // the file, kept for the views
    std::unordered_map<std::string_view, const char*> translation;  // original -> NUL-ended translation
    std::vector<std::string_view> texts;                            // the translations, header excluded
};

const Catalogue& catalogue() {
    static const Catalogue c = [] {
        Catalogue c;
        c.path = find_mo();
        std::ifstream in(c.path, std::ios::binary);
        c.bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
        const std::string& mo = c.bytes;
        auto word = [&](std::size_t at) -> std::uint32_t {
            std::uint32_t w = 0;
            if (at + 4 <= mo.size()) std::memcpy(&w, mo.data() + at, 4);
            return w;
        };
        // A string of the file: in bounds and followed by its NUL (msgfmt writes one after each).
        auto text = [&](std::size_t table, std::uint32_t i) -> std::string_view {
            const std::size_t length = word(table + 8 * std::size_t{i}), offset = word(table + 8 * std::size_t{i} + 4);
            if (offset + length >= mo.size() || mo[offset + length] != '\0') return {};
            return std::string_view(mo).substr(offset, length);
        };
        if (word(0) != 0x950412deu) {  // missing, or not a (little-endian) .mo
            std::cerr << "attnscope: no Chinese catalogue at " << c.path << ": the texts stay English\n";
            return c;
        }
        const std::uint32_t count = word(8), originals = word(12), translations = word(16);
        for (std::uint32_t i = 0; i < count; ++i) {
            const std::string_view original = text(originals, i), translated = text(translations, i);
            if (original.empty() || translated.empty()) continue;  // the header, or out of bounds
            c.translation.emplace(original, translated.data());
            c.texts.push_back(translated);
        }
        return c;
    }();
    return c;
}

// The Chinese of a catalogue key, or nullptr.
const char* chinese(std::string_view key) {
    const auto& t = catalogue().translation;
    const auto it = t.find(key);
    return it == t.end() ? nullptr : it->second;
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
    const char* found = chinese(english);
    return found ? found : english;
}

const char* _(const char* english) { return tr_in(current, english); }

const char* chinese_in_context(const char* context, const char* english) {
    return chinese(std::string(context) + '\004' + english);
}

std::string window_title(const char* translated, const char* id) { return std::string(translated) + "###" + id; }

bool has_translation(const char* english) { return english && chinese(english); }

std::vector<std::string> chinese_texts() { return {catalogue().texts.begin(), catalogue().texts.end()}; }

std::string catalogue_path() { return catalogue().path; }
bool catalogue_found() { return !catalogue().translation.empty(); }

}  // namespace attnscope::ui
