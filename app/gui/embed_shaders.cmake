# cmake -DSHADER_DIR=... -DOUT=... -P embed_shaders.cmake
# Writes a header with shaders/heatmap.{vert,frag} as raw string literals.
file(READ ${SHADER_DIR}/heatmap.vert vert)
file(READ ${SHADER_DIR}/heatmap.frag frag)
set(text "// Generated from shaders/ by app/gui/embed_shaders.cmake; do not edit.\n#pragma once\n")
string(APPEND text "namespace attnscope::gfx {\n")
string(APPEND text "inline constexpr const char* kHeatmapVert = R\"attnscope_glsl(${vert})attnscope_glsl\";\n")
string(APPEND text "inline constexpr const char* kHeatmapFrag = R\"attnscope_glsl(${frag})attnscope_glsl\";\n")
string(APPEND text "}  // namespace attnscope::gfx\n")
file(WRITE ${OUT}.tmp "${text}")
file(RENAME ${OUT}.tmp ${OUT})
