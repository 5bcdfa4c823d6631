#version 330 core
// A full-target triangle from gl_VertexID (no vertex buffer; the caller binds an empty VAO).
// v_uv (0,0) is the first value of the slice: row 0, column 0.
out vec2 v_uv;

void main() {
    vec2 p = vec2(float((gl_VertexID << 1) & 2), float(gl_VertexID & 2));  // (0,0) (2,0) (0,2)
    v_uv = p;
    gl_Position = vec4(p * 2.0 - 1.0, 0.0, 1.0);
}
