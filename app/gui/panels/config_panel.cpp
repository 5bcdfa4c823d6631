// Config panel: B, N, C, h, qkv_bias, seed, training, dropout p. A change asks the frame loop to
// rerun the engine (in a worker thread for large configs); problems are shown inline and the
// last good trace stays on screen.
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "panels/panels.hpp"
#include "run.hpp"
#include "widgets.hpp"

namespace attnscope {

namespace {

bool SameConfig(const AttentionConfig& a, const AttentionConfig& b) {
    return a.batch == b.batch && a.tokens == b.tokens && a.dim == b.dim && a.heads == b.heads &&
           a.qkv_bias == b.qkv_bias && a.seed == b.seed && a.training == b.training && a.attn_drop == b.attn_drop &&
           a.proj_drop == b.proj_drop && a.causal == b.causal && a.valid_tokens == b.valid_tokens &&
           a.path == b.path && a.tile_rows == b.tile_rows && a.tile_cols == b.tile_cols && a.window == b.window &&
           a.shift == b.shift && a.patch_merge == b.patch_merge && a.scaled == b.scaled && a.reference == b.reference;
}

constexpr float kSizeInputWidth = 6.5f;  // B, N, C, h: the field with its -/+ buttons (room for 4 digits: C = 2048), in font sizes

// An unsigned input that reports a change when typing ends or a +/- button is used.
bool SizeInput(const char* label, std::size_t* value, const char* help) {
    static_assert(sizeof(std::size_t) == sizeof(ImU64), "size_t must be 64-bit here");
    const ImU64 one = 1;
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * kSizeInputWidth);
    const bool changed = ImGui::InputScalar(label, ImGuiDataType_U64, value, &one, nullptr, "%llu");
    const bool commit = (changed && !ImGui::IsItemActive()) || ImGui::IsItemDeactivatedAfterEdit();
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", help);
    return commit;
}

}  // namespace

void DrawConfigPanel(const Trace& trace, UiState& ui) {
    if (!ui.panels.config) return;
    PlaceWindow(ui, ui::Panel::Config);
    if (!ImGui::Begin(ui::window_title(_("Config"), "Config").c_str(), &ui.panels.config)) {
        ImGui::End();
        return;
    }
    // A file on screen: where it came from, what was computed, and the way back.
    if (!trace.source_path.empty()) {
        ImGui::TextColored(WarnColor(), _("from %s"), ui::display_name(trace.source_path).c_str());
        if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", trace.source_path.c_str());
        SameLineIfFits(ButtonWidth(_("back to the demo / config")));
        if (ImGui::SmallButton(_("back to the demo / config"))) ui.ask(command::BackToConfig{});
        const AttentionConfig& f = trace.config;
        auto size = [](std::size_t v) { return v ? std::to_string(v) : std::string("?"); };
        ImGui::TextDisabled(_("B=%s N=%s C=%s"), size(f.batch).c_str(), size(f.tokens).c_str(), size(f.dim).c_str());
        SameLineIfFits(LabeledWidth(kSizeInputWidth * ImGui::GetFontSize(), "h"));
        std::size_t heads = f.heads;
        if (SizeInput("h##file", &heads, _("heads h for this file: reruns the reference with h heads")) && heads != f.heads) {
            ui.ask(command::Open{ui.file.path.empty() ? trace.source_path : ui.file.path});
            ui.file.open_block = ui.file.block;
            ui.file.open_heads = heads;
        }
        ImGui::PushTextWrapPos(0.0f);
        if (!ui.file.vit_family.empty()) {
            ImGui::TextColored(OkColor(),
                               _("a whole %s ViT: open a picture (File > Open, or drop it on the window) to run the "
                                  "model on it"),
                               ui.file.vit_family.c_str());
        }
        for (const Message& note : ui.file.notes) {
            ImGui::Bullet();
            ImGui::TextUnformatted(ui::tr_message(note).c_str());
        }
        ImGui::PopTextWrapPos();
        ImGui::Separator();
        WrappedText(DimColor(), _("the demo config (editing it returns to the demo):"));
    }
    AttentionConfig& c = ui.config.draft;
    bool commit = false;
    // The reference code: the article's ViTAttention, or its first class MultiHeadAttention with that
    // class's own defaults (qkv_proj with a bias, dropout 0.1, no output dropout, the textbook path).
    int reference = c.reference == Reference::mha ? 1 : 0;
    ImGui::TextDisabled(_("reference code"));
    SameLineIfFits(LabeledWidth(ImGui::GetFrameHeight(), "ViTAttention"));
    bool switched = ImGui::RadioButton("ViTAttention", &reference, 0);
    SameLineIfFits(LabeledWidth(ImGui::GetFrameHeight(), "MultiHeadAttention"));
    switched |= ImGui::RadioButton("MultiHeadAttention", &reference, 1);
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip(_("the article's first class: qkv_proj with a bias, q, k, v = qkv[0], qkv[1], qkv[2], one "
                             "dropout (p = 0.1) on the weights, out_proj, no output dropout; the same numbers as "
                             "ViTAttention"));
    if (switched) {
        c.reference = reference == 1 ? Reference::mha : Reference::vit;
        if (c.reference == Reference::mha) {
            c.qkv_bias = true, c.attn_drop = 0.1f, c.proj_drop = 0.0f;
            c.path = AttentionPath::standard, c.window = 0, c.shift = false;
        }
        commit = true;
    }
    const bool mha = c.reference == Reference::mha;
    WrappedText(DimColor(), mha ? _("x = torch.randn(B, N, C); MultiHeadAttention(C, num_heads=h, dropout=p)")
                                : _("x = torch.randn(B, N, C); ViTAttention(C, num_heads=h, ...)"));
    // B and N on one row, C and h on the next, when two fields fit side by side; else one per row.
    const float size_w = kSizeInputWidth * ImGui::GetFontSize();
    const float field_w = std::max({LabeledWidth(size_w, _("B batch")), LabeledWidth(size_w, _("N tokens")),
                                    LabeledWidth(size_w, _("C dim")), LabeledWidth(size_w, _("h heads"))});
    const bool pairs = 2.0f * field_w + ImGui::GetStyle().ItemSpacing.x <= ImGui::GetContentRegionAvail().x;
    commit |= SizeInput(_("B batch"), &c.batch, _("batch size B: how many sequences (images) at once"));
    if (pairs) ImGui::SameLine(ImGui::GetCursorStartPos().x + field_w + ImGui::GetStyle().ItemSpacing.x);
    commit |= SizeInput(_("N tokens"), &c.tokens, _("sequence length N: tokens (patches + class token) per sequence"));
    commit |= SizeInput(_("C dim"), &c.dim, _("embedding dimension C (768 for ViT-B)"));
    if (pairs) ImGui::SameLine(ImGui::GetCursorStartPos().x + field_w + ImGui::GetStyle().ItemSpacing.x);
    commit |= SizeInput(_("h heads"), &c.heads, _("number of heads h; each head gets c = C / h features"));
    MarkItem(ui, "config:heads");
    ImGui::BeginDisabled(mha);  // qkv_proj always has its bias
    commit |= ImGui::Checkbox("qkv_bias", &c.qkv_bias);
    ImGui::EndDisabled();
    SameLineIfFits(LabeledWidth(ImGui::GetFontSize() * 6.0f, _("seed")));
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 6.0f);
    {
        const ImU64 one = 1;
        const bool changed = ImGui::InputScalar(_("seed"), ImGuiDataType_U64, &c.seed, &one, nullptr, "%llu");
        commit |= (changed && !ImGui::IsItemActive()) || ImGui::IsItemDeactivatedAfterEdit();
    }
    SameLineIfFits(LabeledWidth(ImGui::GetFrameHeight(), _("training")));
    commit |= ImGui::Checkbox(_("training"), &c.training);
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip(_("model.train(): dropout zeroes weights with probability p and rescales the rest by 1/(1-p)"));
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 7.0f);
    ImGui::SliderFloat(_("attn_drop p"), &c.attn_drop, 0.0f, 0.9f, "%.2f");
    commit |= ImGui::IsItemDeactivatedAfterEdit();
    SameLineIfFits(LabeledWidth(ImGui::GetFontSize() * 7.0f, _("proj_drop p")));
    ImGui::BeginDisabled(mha);  // MultiHeadAttention has no output dropout
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 7.0f);
    ImGui::SliderFloat(_("proj_drop p"), &c.proj_drop, 0.0f, 0.9f, "%.2f");
    commit |= ImGui::IsItemDeactivatedAfterEdit();
    ImGui::EndDisabled();

    ImGui::TextDisabled(_("presets"));
    auto preset = [&](const char* label, std::size_t B, std::size_t N, std::size_t C, std::size_t h, const char* tip) {
        SameLineIfFits(ButtonWidth(label));
        if (ImGui::SmallButton(label)) {
            c.batch = B, c.tokens = N, c.dim = C, c.heads = h;
            commit = true;
        }
        if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", tip);
    };
    preset(_("demo"), 2, 16, 768, 8, _("the article's x = torch.randn(2, 16, 768) with 8 heads"));
    preset("ViT-B", 1, 197, 768, 12, _("one ViT-B/16 image: 196 patches + class token, 12 heads of 197 x 197"));
    preset(_("tiny"), 1, 4, 8, 2, _("small enough to read every number in the inspector's numbers tab"));
    ImGui::BeginDisabled(mha);  // the class has the textbook path only
    commit |= DrawBeyondConfig(c);  // masks and the attention path (beyond_config.cpp)
    ImGui::EndDisabled();
    if (commit) ui.ask(command::Rerun{});

    ImGui::Separator();
    // Derived numbers, so the reader sees c and the scale.
    if (c.heads && c.dim % c.heads == 0) {
        const std::size_t hd = c.dim / c.heads;
        if (c.scaled)
            WrappedTextF(_("c = C / h = %zu / %zu = %zu,  scale = c^-0.5 = %.4g"), c.dim, c.heads, hd,
                         1.0 / std::sqrt(static_cast<double>(hd)));
        else
            WrappedTextF(_("c = C / h = %zu / %zu = %zu,  scale off (x 1)"), c.dim, c.heads, hd);
    }
    ImGui::Text(_("trace size %s"), format_bytes(trace_bytes(c)).c_str());

    if (!ui.config.errors.empty()) {
        ImGui::PushTextWrapPos(0.0f);
        for (const auto& e : ui.config.errors) ImGui::TextColored(BadColor(), _("\u2717 %s"), ui::tr_message(e).c_str());
        ImGui::PopTextWrapPos();
    }
    if (!ui.engine.error.empty()) {
        ImGui::PushTextWrapPos(0.0f);
        ImGui::TextColored(BadColor(), _("\u2717 the engine stopped: %s"), ui::tr_message(ui.engine.error).c_str());
        ImGui::PopTextWrapPos();
    }
    if (ui.engine.busy) {
        ImGui::ProgressBar(ui.engine.progress, ImVec2(-1, 0),
                           ui.file.loading.empty() ? _("running the engine ...")
                                                   : (_("reading ") + ui::display_name(ui.file.loading) + " ...").c_str());
    } else if (!trace.steps.empty() && trace.source_path.empty()) {
        const AttentionConfig& s = trace.config;
        if (!SameConfig(s, c)) ImGui::TextColored(WarnColor(), _("showing the last good trace:"));
        else if (ui.frame.screenshot) ImGui::TextColored(OkColor(), _("\u2713 on screen:"));
        else ImGui::TextColored(OkColor(), _("\u2713 on screen (engine ran in %.1f ms):"), ui.engine.seconds * 1e3);
        char line[256];
        std::snprintf(line, sizeof line, _("B=%zu N=%zu C=%zu h=%zu qkv_bias=%s seed=%llu %s"), s.batch, s.tokens,
                      s.dim, s.heads, s.qkv_bias ? "True" : "False", static_cast<unsigned long long>(s.seed),
                      s.training ? _("training") : _("eval"));
        WrappedText(DimColor(), line);
    }
    ImGui::End();
}

}  // namespace attnscope
