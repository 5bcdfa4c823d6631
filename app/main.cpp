// attnscope: step through multi-head attention one tensor at a time.
#include "cli.hpp"

int main(int argc, char** argv) { return attnscope::run_cli(argc, argv); }
