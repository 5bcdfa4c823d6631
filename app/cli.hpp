// The attnscope command line: trace, run, bench, and (without a subcommand) the desktop app.
#pragma once

namespace attnscope {

// Parses argv and runs the chosen command; returns the exit status
// (0 success, 2 bad usage or bad input with one line on stderr).
int run_cli(int argc, char** argv);

}  // namespace attnscope
