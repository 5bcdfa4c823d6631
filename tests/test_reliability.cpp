// Reliability: the memory budget (per-step byte accounting, --memory-budget, refusals
// that say what is needed), and outputs that never overwrite a file without --force.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "io.hpp"
#include "memory_budget.hpp"
#include "pipeline.hpp"
#include "run.hpp"
#include "run_attnscope.hpp"

using namespace attnscope;
using namespace attnscope::testing;
namespace fs = std::filesystem;

namespace {

fs::path scratch(const std::string& name) { return scratch_dir("rely", name, true); }

std::string quoted(const fs::path& p) { return "'" + p.string() + "'"; }

// Exit 2 with exactly one line on stderr containing every phrase.
void refused(const std::string& args, std::initializer_list<const char*> phrases) {
    CAPTURE(args);
    const ProcessResult r = run_attnscope(args);
    CAPTURE(r.err);
    CHECK(r.status == 2);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    for (const char* p : phrases) CHECK(r.err.find(p) != std::string::npos);
}

const fs::path kDemo = fs::path(ATTNSCOPE_TEST_DATA) / "../../assets/models/demo_vit.safetensors";
const fs::path kSample = fs::path(ATTNSCOPE_TEST_DATA) / "../../assets/samples/06_triangle.png";

}  // namespace

TEST_CASE("memory budget: sizes like 2G 512M and 1.5GiB parse and junk is refused naming the option") {
    CHECK(parse_byte_size("2G", nullptr) == 2ull << 30);
    CHECK(parse_byte_size("512M", nullptr) == 512ull << 20);
    CHECK(parse_byte_size("1.5GiB", nullptr) == 3ull << 29);
    CHECK(parse_byte_size("300k", nullptr) == std::nullopt);  // below 1M: refused
    CHECK(parse_byte_size("2048kb", nullptr) == 2ull << 20);
    CHECK(parse_byte_size("1T", nullptr) == 1ull << 40);
    CHECK(parse_byte_size("4194304", nullptr) == 4ull << 20);
    for (const char* bad : {"", "G", "2X", "-1G", "1e3G", "2 G", "99999999999999999999999T", "1.2.3G"}) {
        CAPTURE(bad);
        Message error;
        CHECK_FALSE(parse_byte_size(bad, &error));
        CHECK(english(error).find("--memory-budget") == 0);
    }
}

TEST_CASE("memory budget: set_memory_budget overrides the default and 0 restores it") {
    CHECK(memory_budget() == default_memory_budget());
    set_memory_budget(123ull << 20);
    CHECK(memory_budget() == 123ull << 20);
    set_memory_budget(0);
    CHECK(memory_budget() == default_memory_budget());
}

TEST_CASE("memory budget: the per-step bytes add up to trace_bytes and to what the engine records") {
    AttentionConfig c;
    c.batch = 2;
    c.tokens = 7;
    c.dim = 24;
    c.heads = 3;
    const std::vector<StepBytes> steps = step_bytes(c);
    std::uint64_t sum = 0;
    for (const StepBytes& s : steps) sum += s.bytes;
    CHECK(sum == trace_bytes(c));

    // The recorded trace: every step's tensor plus the row sums of the checks.
    const Trace trace = run_attention(c);
    REQUIRE(trace.steps.size() + 1 == steps.size());
    std::uint64_t recorded = 0;
    for (std::size_t i = 0; i < trace.steps.size(); ++i) {
        CAPTURE(trace.steps[i].name);
        CHECK(steps[i].step == trace.steps[i].name);
        std::uint64_t bytes = trace.steps[i].tensor().values.size() * sizeof(float);
        if (const RowSumCheck* r = trace.checks.row_sum(trace.steps[i].name)) bytes += r->sums.values.size() * sizeof(float);
        CHECK(steps[i].bytes == bytes);
        recorded += bytes;
    }
    CHECK(steps.back().step == "weights");
    CHECK(steps.back().bytes == (4 * 24 * 24 + 4 * 24) * sizeof(float));
    CHECK(recorded + steps.back().bytes == trace_bytes(c));
}

TEST_CASE("memory budget: a config over it is refused with what it needs and the flash path") {
    AttentionConfig c;
    c.batch = 2;
    c.tokens = 4096;
    c.dim = 768;
    c.heads = 8;
    const auto problems = validate(c, 1ull << 30);
    REQUIRE(problems.size() == 1);
    CHECK(english(problems[0]).find("needs " + format_bytes(trace_bytes(c))) != std::string::npos);
    CHECK(english(problems[0]).find("over the memory budget of 1.0 GiB") != std::string::npos);
    CHECK(english(problems[0]).find("--flash") != std::string::npos);
    CHECK(english(problems[0]).find("--memory-budget") != std::string::npos);
    CHECK(validate(c, trace_bytes(c)).empty());
    // Already on the flash path: no N x N steps to blame and no --flash to suggest.
    c.path = AttentionPath::flash;
    const auto flash = validate(c, 1ull << 20);
    REQUIRE(flash.size() == 1);
    CHECK(english(flash[0]).find("of the flash path") != std::string::npos);
    CHECK(english(flash[0]).find("--flash") == std::string::npos);
}

TEST_CASE("--memory-budget on trace run bench and the app refuses before running") {
    refused("trace --tokens 1024 --memory-budget 16M", {"needs", "over the memory budget of 16.0 MiB", "--flash"});
    refused("run --tokens 1024 --memory-budget 16M --dump /nonexistent/x", {"over the memory budget of 16.0 MiB"});
    refused("bench --tokens 1024 --memory-budget 16M", {"over the memory budget of 16.0 MiB"});
    refused("--tokens 1024 --memory-budget 16M --screenshot /nonexistent/x.png", {"over the memory budget of 16.0 MiB"});
    refused("trace --memory-budget 2X", {"--memory-budget 2X: unknown unit"});
    refused("trace --memory-budget lots", {"--memory-budget lots"});
    const ProcessResult ok = run_attnscope("trace --tokens 1024 --memory-budget 1G");
    CHECK(ok.status == 0);
}

TEST_CASE("--memory-budget applies to the ViT and to files") {
    refused("vit --model " + quoted(kDemo) + " --image " + quoted(kSample) + " --memory-budget 1M",
            {"demo_vit.safetensors", "over the memory budget of 1.0 MiB", "--memory-budget"});
    const ProcessResult ok = run_attnscope("vit --model " + quoted(kDemo) + " --image " + quoted(kSample) + " --memory-budget 1G");
    CHECK(ok.status == 0);
    const fs::path acts = fs::path(ATTNSCOPE_TEST_DATA) / "activations";
    CHECK(run_attnscope("inspect " + quoted(acts / "bug_split.npz") + " --memory-budget 1M").status == 0);
    // A [1, 8, 300, 300] attention map (2.7 MiB) is refused by a 1M budget, listed but not loaded.
    const fs::path big = scratch("big") / "attn.npy";
    write_npy(big.string(), make_array({1, 8, 300, 300}));
    refused("inspect " + quoted(big) + " --memory-budget 1M", {"tensor", "needs 2.7 MiB as float32, over the memory budget of 1.0 MiB"});
    refused("check " + quoted(big) + " --memory-budget 1M", {"over the memory budget of 1.0 MiB"});
    CHECK(run_attnscope("inspect " + quoted(big) + " --memory-budget 4M").status == 0);
    fs::remove(big);
}

TEST_CASE("run --dump refuses to overwrite an earlier dump without --force") {
    const fs::path dir = scratch("force_run");
    const std::string dump = " --batch 1 --tokens 3 --dim 8 --heads 2 --dump " + quoted(dir);
    REQUIRE(run_attnscope("run" + dump).status == 0);
    std::ofstream(dir / "attn.npy", std::ios::trunc) << "mine";
    refused("run" + dump, {(dir / "trace.json").string().c_str(), "already exists; pass --force to overwrite it"});
    CHECK(read_text(dir / "attn.npy") == "mine");  // nothing was touched
    fs::remove(dir / "trace.json");
    refused("run" + dump, {(dir / "input.npy").string().c_str(), "--force"});
    CHECK(run_attnscope("run --force" + dump).status == 0);
    CHECK(read_text(dir / "attn.npy") != "mine");
}

TEST_CASE("vit --overlay --rollout and --dump refuse to overwrite without --force") {
    const fs::path dir = scratch("force_vit");
    const std::string base = "vit --model " + quoted(kDemo) + " --image " + quoted(kSample);
    std::ofstream(dir / "overlay.png") << "mine";
    refused(base + " --overlay " + quoted(dir / "overlay.png"), {"overlay.png already exists; pass --force"});
    CHECK(read_text(dir / "overlay.png") == "mine");
    fs::create_directories(dir / "dump");
    std::ofstream(dir / "dump" / "block3_attn.npy") << "mine";
    refused(base + " --dump " + quoted(dir / "dump"), {"block3_attn.npy already exists"});
    REQUIRE(run_attnscope(base + " --force --overlay " + quoted(dir / "overlay.png") + " --rollout " +
                          quoted(dir / "rollout.png") + " --dump " + quoted(dir / "dump")).status == 0);
    CHECK(read_text(dir / "overlay.png").substr(1, 3) == "PNG");
    CHECK(read_text(dir / "dump" / "block3_attn.npy").substr(1, 5) == "NUMPY");
    refused(base + " --rollout " + quoted(dir / "rollout.png"), {"rollout.png already exists"});
}
