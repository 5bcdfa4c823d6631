#version 330 core
// value -> [0, 1] by the range uniforms (linear or symmetric log) -> colormap LUT row.
// Mirrored on the CPU by attnscope::ui::normalize_value (app/gui/logic/colormap.cpp).
in vec2 v_uv;
out vec4 frag_color;

uniform sampler2D u_values;    // R32F, one texel per cell
uniform sampler2D u_lut;       // RGBA8, 256 x 2: row 0 sequential, row 1 diverging
uniform float u_lo;            // value shown at the bottom of the colormap
uniform float u_hi;            // value shown at the top
uniform int u_log;             // 0 linear, 1 symmetric log
uniform float u_log_k;         // linear width of the symmetric log
uniform int u_colormap;        // LUT row
uniform vec4 u_nan_color;      // NaN cells
uniform vec4 u_inf_color;      // +-Inf cells

float symlog(float x) { return sign(x) * log(1.0 + abs(x) / u_log_k) / log(10.0); }

void main() {
    float v = texture(u_values, v_uv).r;
    if (isnan(v)) { frag_color = u_nan_color; return; }
    if (isinf(v)) { frag_color = u_inf_color; return; }
    float t;
    if (u_log == 1) {
        float a = symlog(u_lo);
        float b = symlog(u_hi);
        t = (symlog(v) - a) / (b - a);
    } else {
        t = (v - u_lo) / (u_hi - u_lo);
    }
    t = clamp(t, 0.0, 1.0);
    // Sample texel centres so t = 0 and t = 1 hit the first and last LUT entries exactly.
    float x = (t * 255.0 + 0.5) / 256.0;
    float y = (float(u_colormap) + 0.5) / 2.0;
    frag_color = vec4(texture(u_lut, vec2(x, y)).rgb, 1.0);
}
