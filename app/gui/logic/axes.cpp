#include "axes.hpp"

#include <algorithm>
#include <array>
#include <map>

namespace attnscope::ui {

std::string base_label(const std::string& label) {
    const std::size_t slash = label.find('/');
    const bool halved = slash != std::string::npos && slash > 0 && slash + 1 < label.size() &&
                        label.find_first_not_of("0123456789", slash + 1) == std::string::npos;
    return halved ? label.substr(0, slash) : label;
}

std::uint32_t axis_color(const std::string& label) {
    if (const std::string base = base_label(label); base != label) return axis_color(base);
    // Colour-blind-friendly hues (Okabe-Ito based), bright enough for a dark background.
    static const std::map<std::string, std::uint32_t> fixed = {
        {"B", 0x56B4E9},   // sky blue: batch
        {"N", 0x009E73},   // bluish green: tokens (queries)
        {"N'", 0x7FD6B9},  // light green: tokens as keys
        {"3", 0xE69F00},   // orange: q/k/v selector
        {"h", 0xCC79A7},   // reddish purple: heads
        {"c", 0xF0E442},   // yellow: head dim
        {"C", 0xD55E00},   // vermillion: model dim
        {"3C", 0xB58A5A},  // brown: the fused qkv features
    };
    if (auto it = fixed.find(label); it != fixed.end()) return it->second;
    static const std::array<std::uint32_t, 6> spare = {0x9DA3FF, 0xA0A0A0, 0xFF9DA7, 0x8CD17D, 0xB6992D, 0x79706E};
    std::uint32_t hash = 2166136261u;  // FNV-1a: stable across runs and machines
    for (unsigned char ch : label) hash = (hash ^ ch) * 16777619u;
    return spare[hash % spare.size()];
}

float luminance(std::uint32_t rgb) {
    const float r = ((rgb >> 16) & 0xFF) / 255.0f;
    const float g = ((rgb >> 8) & 0xFF) / 255.0f;
    const float b = (rgb & 0xFF) / 255.0f;
    return 0.299f * r + 0.587f * g + 0.114f * b;
}

std::uint32_t text_color_on(std::uint32_t rgb) { return luminance(rgb) > 0.5f ? 0x000000u : 0xFFFFFFu; }

std::vector<AxisMove> axis_moves(const Axes& before, const Axes& after) {
    std::vector<bool> used(before.size(), false);
    std::vector<AxisMove> moves(after.size());
    std::vector<bool> matched(after.size(), false);
    for (std::size_t i = 0; i < after.size(); ++i) {
        for (std::size_t j = 0; j < before.size(); ++j) {
            if (!used[j] && before[j] == after[i]) {
                used[j] = true;
                matched[i] = true;
                moves[i] = {static_cast<float>(j), true};
                break;
            }
        }
    }
    for (std::size_t i = 0; i < after.size(); ++i) {  // "H/2" from H
        if (matched[i] || base_label(after[i]) == after[i]) continue;
        for (std::size_t j = 0; j < before.size(); ++j)
            if (!used[j] && before[j] == base_label(after[i])) {
                used[j] = true;
                matched[i] = true;
                moves[i] = {static_cast<float>(j), false, true};
                break;
            }
    }
    float sum = 0.0f;
    int unused = 0;
    for (std::size_t j = 0; j < before.size(); ++j)
        if (!used[j]) {
            sum += static_cast<float>(j);
            ++unused;
        }
    for (std::size_t i = 0; i < after.size(); ++i) {
        if (matched[i]) continue;
        moves[i].from = unused ? sum / static_cast<float>(unused) : static_cast<float>(i);
        moves[i].matched = false;
    }
    return moves;
}

bool is_reorder(const Axes& before, const Axes& after) {
    if (before.size() != after.size() || before == after) return false;
    Axes a = before, b = after;
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    return a == b;
}

int relabelled_axis(const Axes& before, const Axes& after) {
    if (!is_reorder(before, after)) return -1;
    for (std::size_t i = 0; i < after.size(); ++i)
        if (i >= before.size() || before[i] != after[i]) return static_cast<int>(i);
    return -1;
}

std::vector<MemoryRun> memory_runs(const Shape& shape, std::size_t axis, std::size_t samples) {
    std::vector<MemoryRun> runs;
    if (axis >= shape.size() || samples == 0) return runs;
    std::size_t total = 1, stride = 1;
    for (std::size_t d = 0; d < shape.size(); ++d) total *= shape[d];
    for (std::size_t d = axis + 1; d < shape.size(); ++d) stride *= shape[d];
    if (total == 0) return runs;
    for (std::size_t s = 0; s < samples; ++s) {
        // The number at the middle of sample s, in memory order.
        const std::size_t p = static_cast<std::size_t>((2.0 * static_cast<double>(s) + 1.0) * static_cast<double>(total) /
                                                       (2.0 * static_cast<double>(samples)));
        const std::size_t index = (p / stride) % shape[axis];
        if (!runs.empty() && runs.back().index == index) runs.back().end = s + 1;
        else runs.push_back({s, s + 1, index});
    }
    return runs;
}

float ease_in_out(float t) {
    t = std::clamp(t, 0.0f, 1.0f);
    return t < 0.5f ? 4.0f * t * t * t : 1.0f - (-2.0f * t + 2.0f) * (-2.0f * t + 2.0f) * (-2.0f * t + 2.0f) / 2.0f;
}

}  // namespace attnscope::ui
