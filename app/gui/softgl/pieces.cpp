#include "softgl/pieces.hpp"

#include <algorithm>
#include <cstdlib>

namespace attnscope {

namespace {

constexpr std::string_view kNames[] = {"backdrop", "fringe", "occlusion"};

}  // namespace

bool softgl_piece_on(SoftGlPiece piece, std::string_view off_list) {
    const std::string_view name = kNames[static_cast<int>(piece)];
    for (std::size_t begin = 0; begin <= off_list.size();) {
        const std::size_t end = std::min(off_list.find(',', begin), off_list.size());
        if (off_list.substr(begin, end - begin) == name) return false;
        begin = end + 1;
    }
    return true;
}

bool softgl_piece_on(SoftGlPiece piece) {
    static const char* off = std::getenv("ATTNSCOPE_SOFTGL_OFF");
    return softgl_piece_on(piece, off ? off : "");
}

}  // namespace attnscope
