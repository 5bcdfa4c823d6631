// The Image panel's Positions tab: the experiment of core/vit/positions.hpp (shuffled patches, with
// and without position embeddings).
#include <imgui.h>

#include <algorithm>
#include <cstdio>
#include <functional>

#include "about.hpp"
#include "fonts.hpp"
#include "gfx/rgb_textures.hpp"
#include "logic/position_view.hpp"
#include "panels/image_tabs.hpp"
#include "widgets.hpp"

namespace attnscope::image {

namespace {

// One captioned picture of a row of the position experiment; its tooltip says what it shows.
void CaptionedImage(const char* caption, std::uintptr_t tex, float side, const std::string& tip) {
    ImGui::BeginGroup();
    ImGui::TextUnformatted(caption);
    if (tex)
        ImGui::Image(Tex(tex), ImVec2(side, side));
    else
        ImGui::Dummy(ImVec2(side, side));
    ImGui::EndGroup();
    if (ImGui::IsItemHovered() && !tip.empty()) ImGui::SetTooltip("%s", tip.c_str());
}

// The controls of the experiment; a change asks the frame loop for the run (it never recomputes here).
void PositionControls(const VitSnapshot& vit, UiState& ui) {
    const bool fresh = vit.fresh_patch != 0;
    ImGui::BeginDisabled(fresh);
    bool pos = ui.vit.pos_embed, shuffle = ui.vit.shuffle;
    std::uint64_t seed = ui.vit.shuffle_seed;
    bool changed = ImGui::Checkbox(_("position embeddings"), &pos);
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip(
            _("x = x + self.pos_embed: every token is added the embedding of its place.\n"
               "Untick to run the checkpoint with pos_embed set to zeros (model.pos_embed.zero_())."));
    SameLineIfFits(ImGui::GetFrameHeight() + ImGui::CalcTextSize(_("shuffle patches")).x + 8.0f);
    changed |= ImGui::Checkbox(_("shuffle patches"), &shuffle);
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip(
            _("also run the model on the picture with its patches shuffled: shuffled patch i shows "
               "original patch order[i]\n(the seed's Fisher-Yates shuffle, as attnscope vit "
               "--shuffle-patches SEED)"));
    SameLineIfFits(ImGui::CalcTextSize(_("seed")).x + ImGui::GetFontSize() * 6.5f);
    ImGui::BeginDisabled(!shuffle);
    ImGui::TextDisabled(_("seed"));
    ImGui::SameLine();
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 6.0f);
    const std::uint64_t one = 1;
    changed |= ImGui::InputScalar("##seed", ImGuiDataType_U64, &seed, &one, nullptr, "%llu");
    ImGui::EndDisabled();
    ImGui::EndDisabled();
    if (fresh) {
        ImGui::SameLine();
        ImGui::TextColored(WarnColor(), _("(the checkpoint only: untick random weights)"));
    }
    if (changed) {
        ui.vit.pos_embed = pos;
        ui.vit.shuffle = shuffle;
        ui.vit.shuffle_seed = seed;
        ui.ask(command::RunPositions{ui::position_choice(pos, shuffle, seed)});
    }
}

// The held-out accuracy with and without position embeddings, as is and shuffled (PyTorch's
// measurement beside the checkpoint; tests/test_positions.cpp checks attnscope counts the same).
void AccuracyTable(const VitSnapshot& vit) {
    if (!vit.accuracy_error.empty()) {
        ImGui::TextColored(WarnColor(), "%s", ui::tr_core(vit.accuracy_error));
        return;
    }
    if (!vit.accuracy) return;
    const PositionAccuracy& a = *vit.accuracy;
    ImGui::TextDisabled(_("held-out accuracy (%zu images; shuffled: seed %llu for every image)"), a.images,
                        static_cast<unsigned long long>(a.seed));
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip(_("measured with PyTorch by tools/make_position_fixtures.py (%s);\n"
                             "tests/test_positions.cpp runs attnscope on the same images and gets the same counts"),
                          a.source.c_str());
    if (!ImGui::BeginTable("##accuracy", 3, ImGuiTableFlags_Borders | ImGuiTableFlags_SizingFixedFit)) return;
    ImGui::TableSetupColumn("");
    ImGui::TableSetupColumn(_("as is"));
    ImGui::TableSetupColumn(_("patches shuffled"));
    ImGui::TableHeadersRow();
    const char* rows[2] = {_("with position embeddings"), _("without")};
    for (int p = 0; p < 2; ++p) {
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(rows[p]);
        for (int s = 0; s < 2; ++s) {
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(ui::accuracy_text(a.correct[p][s], a.images).c_str());
            if (ImGui::IsItemHovered())
                ImGui::SetTooltip(_("mean probability of the true class: %.6f"), a.true_class_prob[p][s]);
        }
    }
    ImGui::EndTable();
}

// What the table says (ui::position_lesson), and the other demo model to compare with: the one whose
// answer needs the positions, or the one whose answer does not. It opens on the picture on screen.
void PositionLessonLine(const VitSnapshot& vit, UiState& ui) {
    if (!vit.accuracy) return;
    const bool needed = ui::position_lesson(*vit.accuracy) == ui::PositionLesson::needed;
    WrappedText(needed ? _("This model must know where each patch is: without position embeddings, or with the "
                            "patches shuffled, it falls towards chance.")
                       : _("This model's answer does not depend on where things are: it is as accurate without "
                            "position embeddings and on shuffled patches."));
    const std::string other = needed ? demo_model_path() : where_model_path();
    if (other == vit.model_path || !(needed ? demo_model_installed() : where_model_installed())) return;
    if (ImGui::SmallButton(needed ? _("Open the demo model (what is the red shape?)")
                                  : _("Open the position-task model (where is the red shape?)"))) {
        ui.ask(command::Open{other});
        ui.file.open_block.reset();
        ui.file.open_heads.reset();
    }
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", other.c_str());
}

}  // namespace

// The experiment: the picture and its shuffled patches with the class token's attention, the
// block's attention matrices side by side (the shuffled run's also with its tokens put back), the
// predictions, the measured difference and the held-out table. Everything is read from the snapshot.
void PositionsTab(const VitSnapshot& vit, UiState& ui, std::size_t block) {
    PositionControls(vit, ui);
    const VitTrace& t = vit.trace;
    const PositionExperiment* e = vit.fresh_patch == 0 ? vit.shuffled.get() : nullptr;
    gfx::RgbTextures* pics = ui.pictures;
    const std::string gen = std::to_string(ui.vit.generation) + "/" + std::to_string(block);
    auto texture = [&](const char* slot, const std::string& key, const std::function<RgbImage()>& make) {
        return pics ? pics->texture(slot, key, make) : std::uintptr_t{0};
    };
    const Array& attn = t.blocks[block].attn();                // [1, h, N, N]
    const Array mean = fuse_heads(attn, 0, HeadFusion::mean);  // [N, N]

    ImGui::PushFont(fonts().small ? fonts().small : ImGui::GetFont());
    // One row: where the class token looks on the picture (and on its shuffled patches), then the
    // block's attention matrix as is (shuffled, and shuffled with its tokens put back). Under it:
    // the captions, 9 lines of text and the table's 3 rows.
    const ImGuiStyle& style = ImGui::GetStyle();
    const float images = e ? 5.0f : 2.0f;
    const float width = ImGui::GetContentRegionAvail().x;
    const float line = ImGui::GetTextLineHeightWithSpacing();
    const float below = 11.0f * line + 3.0f * (ImGui::GetTextLineHeight() + 2.0f * style.CellPadding.y + 1.0f);
    const float tile = std::clamp(
        std::min((width - (images - 1.0f) * style.ItemSpacing.x) / images, ImGui::GetContentRegionAvail().y - below),
        48.0f, 200.0f);
    ImGui::TextDisabled(_("block %zu, mean of heads (hover a map: what it shows)"), block);
    CaptionedImage(_("as is"),
                   texture("vit/pos_picture", gen + "/picture",
                           [&] { return heat_overlay(ui::overlay_backdrop(vit.input), token_map(mean, 0, t.grid)); }),
                   tile, _("where the class token looks on the picture as is: attn[0, :, 0, 1:].mean(heads)"));
    if (e) {
        const Array mean_s = fuse_heads(e->shuffled.blocks[block].attn(), 0, HeadFusion::mean);  // [N, N]
        const std::string key = gen + "/" + std::to_string(e->seed);
        ImGui::SameLine();
        CaptionedImage(_("shuffled"),
                       texture("vit/pos_shuffled", key,
                               [&] {
                                   return heat_overlay(ui::overlay_backdrop(vit.shuffled_input),
                                                       token_map(mean_s, 0, e->shuffled.grid));
                               }),
                       tile, _("the same model on the shuffled picture: the heat moves with the patches"));
        ImGui::SameLine();
        CaptionedImage(_("attn"), texture("vit/pos_attn", key, [&] { return ui::attention_matrix_image(mean, 1); }),
                       tile,
                       _("attn[0, :].mean(heads) on the picture as is: rows are queries, columns keys, the class "
                          "token first"));
        ImGui::SameLine();
        CaptionedImage(_("attn, shuffled"),
                       texture("vit/pos_attn_shuffled", key, [&] { return ui::attention_matrix_image(mean_s, 1); }),
                       tile, _("the shuffled run's attention: rows and columns in the shuffled order"));
        ImGui::SameLine();
        CaptionedImage(
            _("put back"),
            texture(
                "vit/pos_attn_back", key,
                [&] { return ui::attention_matrix_image(ui::unshuffle_tokens(mean_s, e->order, t.grid.prefix), 1); }),
            tile,
            _("the shuffled run's rows and columns moved back to the picture's order:\n"
               "without position embeddings it is the attn map as is"));
    } else {
        ImGui::SameLine();
        CaptionedImage(_("attn"),
                       texture("vit/pos_attn", gen + "/attn", [&] { return ui::attention_matrix_image(mean, 1); }),
                       tile, _("attn[0, :].mean(heads) on the picture as is"));
    }

    // The prediction for both pictures, the measured difference, what it means.
    if (t.has_head()) {
        ImGui::TextDisabled(vit.positions.pos_embed ? _("prediction (with position embeddings)")
                                                    : _("prediction (without position embeddings)"));
        const ClassProb as_is = ranked_classes(t.probs(), 0, 1, vit.labels).front();
        ImGui::Text(_("as is: %s  %.4f"), ui::tr_core(as_is.label), static_cast<double>(as_is.prob));
        if (e) {
            const ClassProb shuffled = ranked_classes(e->shuffled.probs(), 0, 1, vit.labels).front();
            const ui::PredictionChange change = ui::prediction_change(t.probs(), e->shuffled.probs());
            char shuffled_text[128];
            std::snprintf(shuffled_text, sizeof shuffled_text, _("shuffled: %s  %.4f"), ui::tr_core(shuffled.label),
                          static_cast<double>(shuffled.prob));
            SameLineIfFits(ImGui::CalcTextSize(shuffled_text).x, 2.0f * style.ItemSpacing.x);
            ImGui::TextColored(change.changed() ? WarnColor() : OkColor(), "%s", shuffled_text);
            const char* verdict = change.changed() ? _("the prediction changed") : _("the same class");
            SameLineIfFits(ImGui::CalcTextSize(verdict).x, 2.0f * style.ItemSpacing.x);
            ImGui::TextUnformatted(verdict);
        }
    }
    if (e) {
        const ShuffleDifference& d = e->difference;
        WrappedTextF(
            _("max |attn_shuffled - attn| (tokens put back), %zu blocks: %s; class token: %s; probabilities: %s"),
            t.blocks.size(), ui::difference_text(d.attn).c_str(), ui::difference_text(d.cls).c_str(),
            ui::difference_text(d.probs).c_str());
        WrappedTextF("%s", e->pos_embed
                                     ? _("With position embeddings each patch is added the embedding of the place it "
                                          "lands on: the model sees another picture.")
                                     : _("Without position embeddings self-attention is permutation-equivariant: the "
                                          "same maps with rows and columns permuted, the same class token (up to float "
                                          "rounding)."));
    } else {
        ImGui::TextDisabled(_("Tick \"shuffle patches\" to run the model on the picture with its patches shuffled."));
    }
    AccuracyTable(vit);
    PositionLessonLine(vit, ui);
    ImGui::PopFont();
}

}  // namespace attnscope::image
