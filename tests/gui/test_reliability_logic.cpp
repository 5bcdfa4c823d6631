// Reliability of the GUI's window-free logic: where File > Export writes and when it must ask before
// replacing a file; settings files with absurd numbers.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "logic/export_path.hpp"
#include "logic/settings.hpp"
#include "run.hpp"

using namespace attnscope::ui;
namespace fs = std::filesystem;

TEST_CASE("export dialog: the suggested name and the target path") {
    CHECK(default_export_name("attn") == "attnscope-attn.png");
    CHECK(default_export_name("") == "attnscope-heatmap.png");
    const fs::path dir = fs::temp_directory_path() / ("attnscope_export_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir / "sub");

    ExportTarget t = export_target(dir.string(), "heat");
    CHECK(t.error.empty());
    CHECK(t.path == (dir / "heat.png").string());  // .png appended
    CHECK_FALSE(t.exists);

    std::ofstream(dir / "heat.png") << "old";
    t = export_target(dir.string(), "heat.png");
    CHECK(t.error.empty());
    CHECK(t.exists);  // the dialog asks before replacing it

    CHECK(export_target(dir.string(), "").error.find("type a file name") == 0);
    CHECK(export_target(dir.string(), "a/b.png").error.find("without '/'") != std::string::npos);
    CHECK(export_target(dir.string(), "sub").error.empty());  // "sub.png", not the folder
    CHECK(export_target(dir.string(), "sub.d").error.empty());
    fs::create_directories(dir / "folder.png");
    CHECK(export_target(dir.string(), "folder.png").error.find("is a folder") != std::string::npos);
    CHECK(export_target((dir / "missing").string(), "x.png").error.find("no such folder") != std::string::npos);
    fs::remove_all(dir);
}

TEST_CASE("settings: absurd numbers are clamped and never undefined behaviour") {
    // Numbers past size_t (fuzz_settings's kind of input) must not be cast to it unchecked.
    std::string error;
    auto s = settings_from_json(R"({"config": {"heads": 1.9e86, "tokens": -1e300, "dim": 3.5, "seed": 1e30},
                                    "ui_scale": 1e300, "play_interval": -1e300, "range_mode": 1e20})",
                                &error);
    REQUIRE(s);
    CHECK(s->config.heads == 18446744073709549568ull);  // the largest double below 2^64
    CHECK(s->config.tokens == 0);
    CHECK(s->config.dim == 3);
    CHECK(s->ui_scale == 3.0f);  // then clamped to the UI's range
    CHECK(s->play_interval == 0.1);
    CHECK(s->range_mode == attnscope::ui::RangeMode(2));
    // The absurd config is kept for the Config panel, whose validation refuses it with a message.
    CHECK_FALSE(attnscope::validate(s->config, 1ull << 30).empty());
    // Written back, it parses to the same text.
    const std::string text = settings_to_json(*s);
    const auto again = settings_from_json(text, &error);
    REQUIRE(again);
    CHECK(settings_to_json(*again) == text);
}
