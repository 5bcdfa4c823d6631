#include "renderer.hpp"

#include <algorithm>
#include <cctype>
#include <string>

namespace attnscope::ui {

bool software_renderer(std::string_view gl_renderer) {
    std::string lower(gl_renderer);
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    for (std::string_view name : {"llvmpipe", "softpipe", "swrast", "software", "gdi generic"})
        if (lower.find(name) != std::string::npos) return true;
    return false;
}

}  // namespace attnscope::ui
