#include "attention_maps.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>

#include "ops.hpp"

namespace attnscope {

namespace {

// attn [B, h, N, N'] with image `batch` in range; returns {h, N, N'}.
std::array<std::size_t, 3> check_attention(const Array& attn, std::size_t batch, const char* who) {
    const Shape s = shape_of(attn);
    if (s.size() != 4 || batch >= s[0] || s[1] == 0)
        throw ShapeError(Message(Msg::maps_attention_shape, {{"op", who}, {"shape", format_shape(s)}, {"batch", std::to_string(batch)}}));
    return {s[1], s[2], s[3]};
}

// A perceptually ordered dark-purple -> red -> yellow colormap (inferno-like), t in [0, 1].
std::array<float, 3> heat_colour(float t) {
    static constexpr std::array<std::array<float, 3>, 5> stops = {{{0.00f, 0.00f, 0.02f},
                                                                   {0.34f, 0.06f, 0.43f},
                                                                   {0.73f, 0.21f, 0.33f},
                                                                   {0.98f, 0.55f, 0.04f},
                                                                   {0.99f, 1.00f, 0.64f}}};
    const float x = std::clamp(t, 0.0f, 1.0f) * (stops.size() - 1);
    const std::size_t i = std::min<std::size_t>(static_cast<std::size_t>(x), stops.size() - 2);
    const float f = x - static_cast<float>(i);
    return {stops[i][0] + f * (stops[i + 1][0] - stops[i][0]), stops[i][1] + f * (stops[i + 1][1] - stops[i][1]),
            stops[i][2] + f * (stops[i + 1][2] - stops[i][2])};
}

}  // namespace

HeadFusion parse_head_fusion(const std::string& name) {
    if (name == "mean") return HeadFusion::mean;
    if (name == "max") return HeadFusion::max;
    if (name == "min") return HeadFusion::min;
    throw ConfigError(Message(Msg::maps_head_fusion, {{"name", name}}));
}

const char* head_fusion_name(HeadFusion fusion) {
    return fusion == HeadFusion::mean ? "mean" : fusion == HeadFusion::max ? "max" : "min";
}

Array head_attention(const Array& attn, std::size_t batch, std::size_t head) {
    const auto [h, n, m] = check_attention(attn, batch, "head_attention");
    if (head >= h)
        throw ShapeError(Message(Msg::maps_head_range, {{"head", std::to_string(head)}, {"heads", std::to_string(h)}}));
    Array out = make_array({n, m});
    const float* src = attn.data() + (batch * h + head) * n * m;
    std::copy(src, src + n * m, out.data());
    return out;
}

Array fuse_heads(const Array& attn, std::size_t batch, HeadFusion fusion) {
    const auto [h, n, m] = check_attention(attn, batch, "fuse_heads");
    Array out = head_attention(attn, batch, 0);
    for (std::size_t head = 1; head < h; ++head) {
        const float* src = attn.data() + (batch * h + head) * n * m;
        for (std::size_t i = 0; i < n * m; ++i) {
            float& o = out.data()[i];
            o = fusion == HeadFusion::mean  ? o + src[i]
                : fusion == HeadFusion::max ? std::max(o, src[i])
                                            : std::min(o, src[i]);
        }
    }
    if (fusion == HeadFusion::mean)
        for (float& o : out) o /= static_cast<float>(h);
    return out;
}

Array attention_rollout(const std::vector<const Array*>& attns, std::size_t batch, HeadFusion fusion) {
    if (attns.empty()) throw ShapeError(Message(Msg::maps_rollout_empty));
    Array rollout;  // [N, N]: the product so far
    for (std::size_t b = 0; b < attns.size(); ++b) {
        Array a = fuse_heads(*attns[b], batch, fusion);  // [N, N]
        const std::size_t n = a.shape()[0];
        if (a.shape()[1] != n || (b > 0 && rollout.shape()[0] != n))
            throw ShapeError(Message(Msg::maps_rollout_shape, {{"block", std::to_string(b)}, {"shape", format_shape(shape_of(*attns[b]))}}));
        for (std::size_t i = 0; i < n; ++i) {  // A + I for the residual, rows renormalized
            float* row = a.data() + i * n;
            row[i] += 1.0f;
            double sum = 0.0;
            for (std::size_t j = 0; j < n; ++j) sum += row[j];
            for (std::size_t j = 0; j < n; ++j) row[j] = static_cast<float>(row[j] / sum);
        }
        rollout =
            b == 0 ? a
                   : matmul(Tensor{a, {"N", "N'"}}, Tensor{rollout, {"N", "N'"}}, {"N", "N'"}, "A", "rollout").values;
    }
    return rollout;
}

Array token_map(const Array& matrix, std::size_t query, const PatchGrid& grid) {
    const Shape s = shape_of(matrix);
    if (s.size() != 2 || s[1] != grid.tokens() || query >= s[0])
        throw ShapeError(Message(Msg::maps_token_row, {{"row", std::to_string(query)}, {"shape", format_shape(s)},
                                                       {"rows", std::to_string(grid.rows)}, {"cols", std::to_string(grid.cols)},
                                                       {"tokens", std::to_string(grid.tokens())}}));
    Array map = make_array({grid.rows, grid.cols});
    const float* row = matrix.data() + query * s[1] + grid.prefix;  // skip the class (and distillation) token columns
    std::copy(row, row + grid.patches(), map.data());
    return map;
}

RgbImage heat_overlay(const RgbImage& image, const Array& map, float opacity) {
    const Shape s = shape_of(map);
    if (s.size() != 2 || s[0] == 0 || s[1] == 0)
        throw ShapeError(Message(Msg::maps_overlay_shape, {{"shape", format_shape(s)}}));
    const float top = std::max(*std::max_element(map.begin(), map.end()), 1e-30f);
    RgbImage out = image;
    for (std::size_t y = 0; y < image.height; ++y)
        for (std::size_t x = 0; x < image.width; ++x) {
            const std::size_t r = y * s[0] / image.height, c = x * s[1] / image.width;  // the cell over this pixel
            const float v = std::clamp(map.data()[r * s[1] + c] / top, 0.0f, 1.0f);
            const auto colour = heat_colour(v);
            const float alpha = opacity * (0.3f + 0.7f * v);  // cold cells keep most of the picture
            for (std::size_t ch = 0; ch < 3; ++ch) {
                std::uint8_t& p = out.pixels[(y * image.width + x) * 3 + ch];
                p = static_cast<std::uint8_t>(std::lround(alpha * 255.0f * colour[ch] + (1.0f - alpha) * p));
            }
        }
    return out;
}

}  // namespace attnscope
