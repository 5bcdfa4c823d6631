// The options every engine command shares for reliability: --memory-budget (refuse what would not
// fit before allocating it) and --force (outputs never overwrite an existing file silently).
#include <filesystem>
#include <string>
#include <vector>

#include "cli.hpp"
#include "memory_budget.hpp"

namespace attnscope {

void add_memory_budget_option(CLI::App& app) {
    app.add_option_function<std::string>(
           "--memory-budget",
           [](const std::string& text) {
               Message error;
               const auto bytes = parse_byte_size(text, &error);
               if (!bytes) throw UsageError(english(error));
               set_memory_budget(*bytes);
           },
           "refuse configs and files needing more than this, e.g. 2G or 512M (default: half the RAM, " +
               format_bytes(default_memory_budget()) + ")")
        ->type_name("SIZE");
}

void refuse_overwrite(const std::vector<std::string>& paths, bool force) {
    if (force) return;
    for (const std::string& path : paths) {
        std::error_code ec;
        if (std::filesystem::exists(path, ec)) throw UsageError(path + " already exists; pass --force to overwrite it");
    }
}

}  // namespace attnscope
