// Fuzz target: the settings file parser. Whatever it accepts must write back and parse again to
// the same text.
#include <cstdlib>
#include <string>

#include "fuzz_util.hpp"
#include "logic/settings.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace attnscope;
    const std::string text(reinterpret_cast<const char*>(data), size);
    std::string error;
    const auto settings = ui::settings_from_json(text, &error);
    if (!settings) {
        if (error.empty()) std::abort();  // a refusal always says why
        return 0;
    }
    const std::string written = ui::settings_to_json(*settings);
    const auto again = ui::settings_from_json(written, &error);
    if (!again || ui::settings_to_json(*again) != written) std::abort();
    return 0;
}
