// core's coded messages (core/tensor/message.hpp): the English a template and its arguments make,
// which is what the command line prints; the file readers throw them with their arguments named.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "io.hpp"
#include "message.hpp"

using namespace attnscope;

TEST_CASE("messages: english() fills each {name}, nested messages in their place") {
    const Message m(Msg::file_is_directory, {{"file", "/tmp/x"}});
    CHECK(english(m) == "/tmp/x: is a directory, not a file");
    const Message nested = Message(Msg::npy_malformed_header, {{"file", "a.npy"}, {"column", "3"}, {"header", "{'a'"}})
                               .with("problem", Message(Msg::npy_parse_expected_char, {{"char", ":"}}));
    CHECK(english(nested) == "a.npy: malformed header: expected ':' at column 3 in \"{'a'\"");
    // A name the message does not give stays visible rather than vanishing.
    CHECK(english(Message(Msg::file_os_error, {{"file", "f"}})) == "f: {reason}");
    CHECK(english(plain_text("any English")) == "any English");
    CHECK(english(Message()).empty());
    CHECK(Message().empty());
    CHECK(template_names("{file}: {a} and {b}, {a}") == std::vector<std::string>{"file", "a", "b"});
    CHECK(template_names("no names, {not one} {}") .empty());
    CHECK(std::string(message_name(Msg::npy_magic)) == "npy_magic");
}

TEST_CASE("messages: every template's names are lower-case words, and codes are unique") {
    for (std::size_t i = 0; i < static_cast<std::size_t>(Msg::count); ++i) {
        const char* tmpl = message_template(static_cast<Msg>(i));
        CAPTURE(message_name(static_cast<Msg>(i)));
        CHECK(std::string(tmpl).size() > 0);
        for (std::size_t j = 0; j < i; ++j) CHECK(std::string(message_name(static_cast<Msg>(j))) != message_name(static_cast<Msg>(i)));
    }
}

TEST_CASE("messages: a reader's error carries its code and arguments; what() is the English") {
    const std::filesystem::path dir = std::filesystem::temp_directory_path() / "attnscope_test_messages";
    std::filesystem::create_directories(dir);
    const std::string path = (dir / "not.npy").string();
    std::ofstream(path, std::ios::binary) << "PK\x03\x04 not numpy";
    try {
        read_npy(path);
        FAIL("read_npy accepted a file that is not .npy");
    } catch (const FileError& e) {
        CHECK(e.message.code == Msg::npy_magic);
        REQUIRE(e.message.args.size() == 1);
        CHECK(e.message.args[0].name == "file");
        CHECK(e.message.args[0].text == path);
        CHECK(std::string(e.what()) == path + ": not a .npy file (it does not start with the magic string \\x93NUMPY)");
        CHECK(message_of(e).code == Msg::npy_magic);
    }
    try {
        read_npy(dir.string());
        FAIL("read_npy accepted a folder");
    } catch (const FileError& e) {
        CHECK(e.message.code == Msg::file_is_directory);
    }
    CHECK(message_of(std::runtime_error("plain")).code == Msg::text);
    std::filesystem::remove_all(dir);
}
