// `attnscope inspect` and `attnscope check`: saved activations and checkpoints (issue 4).
#include "cli.hpp"

namespace attnscope {

void add_file_commands(CLI::App&, CommandAction&) {}

}  // namespace attnscope
