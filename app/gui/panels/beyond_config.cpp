// The config panel's "beyond the textbook" part: masks (causal, valid tokens per batch item) and
// the path that computes attention (standard, flash with Br x Bc tiles, KV cache, Swin windows).
#include <imgui.h>

#include <cstdio>
#include <string>

#include "beyond.hpp"
#include "logic/i18n.hpp"
#include "panels/panels.hpp"
#include "widgets.hpp"

namespace attnscope {

namespace {

constexpr float kSmallSizeWidth = 6.0f;  // a tile or window size with its -/+ buttons, in font sizes

bool SmallSize(const char* label, std::size_t* value, const char* help) {
    const ImU64 one = 1;
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * kSmallSizeWidth);
    const bool changed = ImGui::InputScalar(label, ImGuiDataType_U64, value, &one, nullptr, "%llu");
    const bool commit = (changed && !ImGui::IsItemActive()) || ImGui::IsItemDeactivatedAfterEdit();
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", help);
    return commit;
}

}  // namespace

bool DrawBeyondConfig(AttentionConfig& c) {
    bool commit = false;
    ImGui::Separator();
    WrappedText(DimColor(), _("beyond the textbook: masks and the attention path"));
    commit |= ImGui::Checkbox(_("causal"), &c.causal);
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", _("query i sees only keys 0..i (-inf above the diagonal)"));
    SameLineIfFits(LabeledWidth(ImGui::GetFrameHeight(), _("key padding")));
    bool padding = !c.valid_tokens.empty();
    if (ImGui::Checkbox(_("key padding"), &padding)) {
        c.valid_tokens.clear();
        if (padding) c.valid_tokens.assign(c.batch, c.tokens);
        commit = true;
    }
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip("%s", _("valid tokens per batch item: keys after them are padding and get -inf"));
    if (padding) {
        if (c.valid_tokens.size() != c.batch) c.valid_tokens.resize(c.batch, c.tokens);
        for (std::size_t b = 0; b < c.valid_tokens.size() && b < 8; ++b) {
            SameLineIfFits(ImGui::GetFontSize() * kSmallSizeWidth);
            char label[32];
            std::snprintf(label, sizeof label, "##valid%zu", b);
            commit |= SmallSize(label, &c.valid_tokens[b], _("valid tokens of this batch item (1..N)"));
        }
    }
    int path = static_cast<int>(c.path);
    ImGui::TextUnformatted(_("path"));
    const char* names[] = {_("standard"), _("flash"), _("kv-cache"), _("windowed")};
    for (int i = 0; i < 4; ++i) {
        SameLineIfFits(LabeledWidth(ImGui::GetFrameHeight(), names[i]));
        if (ImGui::RadioButton(names[i], &path, i)) {
            c.path = static_cast<AttentionPath>(path);
            if (c.path == AttentionPath::kv_cache) c.causal = true;
            if (c.path == AttentionPath::flash) {  // tiles small enough that N holds several
                c.tile_rows = ui::flash_tile_for(c.tokens, c.tile_rows);
                c.tile_cols = ui::flash_tile_for(c.tokens, c.tile_cols);
            }
            if (c.path == AttentionPath::windowed && c.window == 0) c.window = 4;
            if (c.path != AttentionPath::windowed) c.window = 0, c.shift = false, c.patch_merge = false;
            commit = true;
        }
    }
    if (c.path == AttentionPath::flash) {
        commit |= SmallSize(_("Br"), &c.tile_rows, _("tile rows: query rows per tile"));
        SameLineIfFits(LabeledWidth(ImGui::GetFontSize() * kSmallSizeWidth, _("Bc")));
        commit |= SmallSize(_("Bc"), &c.tile_cols, _("tile columns: keys per tile"));
    } else if (c.path == AttentionPath::windowed) {
        commit |= SmallSize(_("M window"), &c.window, _("window side M: attention within M x M patches"));
        SameLineIfFits(LabeledWidth(ImGui::GetFrameHeight(), _("shifted (M/2)")));
        commit |= ImGui::Checkbox(_("shifted (M/2)"), &c.shift);
        SameLineIfFits(LabeledWidth(ImGui::GetFrameHeight(), _("patch merging")));
        commit |= ImGui::Checkbox(_("patch merging"), &c.patch_merge);
        if (ImGui::IsItemHovered())
            ImGui::SetTooltip("%s", _("Swin's PatchMerging after the block: 2 x 2 neighbours -> one token (grid H/2, "
                                       "channels 2C), then a second windowed stage with twice the heads"));
        SameLineIfFits(ImGui::CalcTextSize(_("N = H*H, no class token")).x);
        ImGui::TextDisabled("%s", _("N = H*H, no class token"));
    }
    return commit;
}

}  // namespace attnscope
