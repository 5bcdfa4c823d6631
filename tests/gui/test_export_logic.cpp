// File > Export heatmap as PNG: where Save writes and when it must ask before replacing a file.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "logic/export_path.hpp"

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
