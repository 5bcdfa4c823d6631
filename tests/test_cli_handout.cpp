// `attnscope handout DIR`, run as a separate process: every step as a PNG that decodes, a Markdown
// handout with the shape table and every step, Chinese with --lang zh, and the refusals.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>

#include "image.hpp"
#include "run_attnscope.hpp"
#include "trace.hpp"

using namespace attnscope;
using namespace attnscope::testing;
namespace fs = std::filesystem;

namespace {

fs::path scratch(const std::string& name) { return scratch_dir("handout", name, false); }

std::string two(std::size_t i) { return (i < 10 ? "0" : "") + std::to_string(i); }

}  // namespace

TEST_CASE("handout: every step as a PNG and one markdown file with the shape table") {
    const fs::path dir = scratch("en");
    const ProcessResult r = run_attnscope("handout '" + dir.string() + "' --tokens 6 --dim 16 --heads 4");
    CAPTURE(r.err);
    REQUIRE(r.status == 0);
    const auto& steps = attention_step_names();
    const std::string md = read_text(dir / "handout.md");
    CHECK(md.find("| # |") != std::string::npos);
    for (std::size_t i = 0; i < steps.size(); ++i) {
        CAPTURE(steps[i]);
        const std::string png = two(i + 1) + "_" + steps[i] + ".png";
        REQUIRE(fs::exists(dir / png));
        const RgbImage img = load_image((dir / png).string(), 1u << 30);
        CHECK(img.width >= 48);
        CHECK(img.height >= 48);
        // Not one flat colour: the slice's values are spread over the colormap.
        const auto [lo, hi] = std::minmax_element(img.pixels.begin(), img.pixels.end());
        CHECK(*hi - *lo > 50);
        CHECK(md.find("](" + png + ")") != std::string::npos);                                        // the image link
        CHECK(md.find("| " + std::to_string(i + 1) + " | " + steps[i] + " |") != std::string::npos);  // table row
    }
    // Shapes with axis names, strides, the narrative.
    CHECK(md.find("[B=2, h=4, N=6, c=4]") != std::string::npos);
    CHECK(md.find("[B=2, h=4, N=6, N'=6]") != std::string::npos);
    CHECK(md.find("not contiguous") != std::string::npos);
    CHECK(md.find("scaled dot-product attention") != std::string::npos);
    // Nothing else: the temporary folder was renamed away.
    std::size_t files = 0;
    for (const auto& e : fs::directory_iterator(dir)) files += e.is_regular_file() ? 1 : 0;
    CHECK(files == steps.size() + 1);
    for (const auto& e : fs::directory_iterator(dir.parent_path()))
        CHECK(e.path().filename().string().find("." + dir.filename().string() + ".tmp") == std::string::npos);
    fs::remove_all(dir);
}

TEST_CASE("handout: --lang zh writes the Chinese narrative") {
    const fs::path dir = scratch("zh");
    const ProcessResult r = run_attnscope("handout '" + dir.string() + "' --lang zh --tokens 4 --dim 8 --heads 2");
    CAPTURE(r.err);
    REQUIRE(r.status == 0);
    const std::string md = read_text(dir / "handout.md");
    CHECK(md.find("形状表") != std::string::npos);
    CHECK(md.find("缩放点积注意力") != std::string::npos);
    CHECK(md.find("转置") != std::string::npos);
    fs::remove_all(dir);
}

TEST_CASE("handout: a non-empty folder is refused unless --force") {
    const fs::path dir = scratch("full");
    fs::create_directories(dir);
    { std::ofstream(dir / "keep.txt") << "mine"; }
    ProcessResult r = run_attnscope("handout '" + dir.string() + "' --tokens 4 --dim 8 --heads 2");
    CAPTURE(r.err);
    CHECK(r.status == 2);
    CHECK(r.err.find("--force") != std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK(fs::exists(dir / "keep.txt"));  // untouched
    r = run_attnscope("handout '" + dir.string() + "' --force --tokens 4 --dim 8 --heads 2");
    CHECK(r.status == 0);
    CHECK_FALSE(fs::exists(dir / "keep.txt"));
    CHECK(fs::exists(dir / "handout.md"));
    fs::remove_all(dir);
}

TEST_CASE("handout: bad options exit 2 with one line") {
    const fs::path dir = scratch("bad");
    for (const std::string args : {"--lang fr", "--heads 5", "--dim 0"}) {
        const ProcessResult r = run_attnscope("handout '" + dir.string() + "' " + args);
        CAPTURE(args);
        CAPTURE(r.err);
        CHECK(r.status == 2);
        CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
        CHECK_FALSE(fs::exists(dir));
    }
}
