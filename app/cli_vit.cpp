// `attnscope vit`: a whole Vision Transformer forward on an image (issue 5).
#include "cli.hpp"

namespace attnscope {

void add_vit_command(CLI::App&, CommandAction&) {}

}  // namespace attnscope
