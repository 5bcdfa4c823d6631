# cmake -DPNG=... -DOUT=... -P embed_icon.cmake
# Writes a header with the app's icon (the PNG rendered from packaging/attnscope.svg) as bytes, so
# the window has its icon wherever the binary is copied.
file(READ ${PNG} hex HEX)
string(LENGTH "${hex}" hex_length)
math(EXPR size "${hex_length} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
set(text "// Generated from packaging/attnscope.svg by app/gui/embed_icon.cmake; do not edit.\n#pragma once\n")
string(APPEND text "namespace attnscope::gfx {\n")
string(APPEND text "inline constexpr unsigned char kWindowIconPng[${size}] = {\n${bytes}\n};\n")
string(APPEND text "}  // namespace attnscope::gfx\n")
file(WRITE ${OUT}.tmp "${text}")
file(RENAME ${OUT}.tmp ${OUT})
