// Runs the attnscope executable as a separate process, for the command-line tests, and the
// scratch folders those tests write into.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <doctest/doctest.h>

namespace attnscope::testing {

struct ProcessResult {
    int status = -1;  // exit status, or 128 + signal
    std::string out;  // stdout
    std::string err;  // stderr
};

inline std::string read_text(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// `attnscope ARGS` (ARGS as a shell would split them) in folder `cwd` ("" = this one), stdin
// from /dev/null, stdout and stderr captured through temporary files.
inline ProcessResult run_attnscope(const std::string& args, const std::string& cwd = "") {
    namespace fs = std::filesystem;
    static int counter = 0;
    const fs::path base = fs::temp_directory_path() /
                          ("attnscope_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    const fs::path out = base.string() + ".out", err = base.string() + ".err";
    const std::string cd = cwd.empty() ? "" : "cd '" + cwd + "' && ";
    const std::string cmd = cd + "'" + ATTNSCOPE_EXE + "' " + args + " > '" + out.string() + "' 2> '" +
                            err.string() + "' < /dev/null";
    const int raw = std::system(cmd.c_str());
    ProcessResult r;
    r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
    r.out = read_text(out);
    r.err = read_text(err);
    fs::remove(out);
    fs::remove(err);
    return r;
}

// A folder of one test under the system temp dir, attnscope_<suite>_<pid>_<name>: removed first,
// so a crashed earlier run leaves nothing in it; created when `create`.
inline std::filesystem::path scratch_dir(const std::string& suite, const std::string& name, bool create) {
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / ("attnscope_" + suite + "_" + std::to_string(::getpid()) + "_" + name);
    fs::remove_all(dir);
    if (create) fs::create_directories(dir);
    return dir;
}

// `attnscope ARGS` exits 2 with one line on stderr, and that line contains `phrase`.
inline void check_usage_error(const std::string& args, const std::string& phrase) {
    CAPTURE(args);
    const ProcessResult r = run_attnscope(args);
    CAPTURE(r.err);
    CHECK(r.status == 2);
    CHECK(r.err.find(phrase) != std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
}

}  // namespace attnscope::testing
