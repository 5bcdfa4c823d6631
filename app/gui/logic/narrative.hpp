// What each step of the attention pipeline does, told to a student in English or Simplified
// Chinese: the GUI's presentation mode and `attnscope handout` read the same words (no ImGui here).
#pragma once

#include <string>
#include <vector>

#include "config.hpp"
#include "logic/i18n.hpp"

namespace attnscope::ui {

struct StepNarrative {
    std::string title;  // "Queries, keys and values in one matrix product"
    std::string text;   // two to four sentences
};

// The narrative of a step of run_attention (a StepId's name) or of the ViT around it (a VitStep's:
// pixels ... probs, a hybrid's stem layers as stem<i>.conv, stem<i>.bn, stem<i>.relu).
// An unknown step gets an empty title and text. With the MultiHeadAttention reference, the steps
// whose line differs (qkv_proj, qkv[0], self.dropout, out_proj) are told as that class writes them.
StepNarrative step_narrative(const std::string& step, Language language, Reference reference = Reference::vit);

// The first `sentences` sentences of a narrative's text (ended by ". ", "! ", "? " or by 。！？):
// the Shape view's short version. The whole text when it has no more.
std::string narrative_lead(const std::string& text, std::size_t sentences = 2);

// Every step name that has a narrative: the attention's in StepId order, then the ViT's in VitStep
// order (the stem's layers as stem.conv, stem.bn, stem.relu).
const std::vector<std::string>& narrated_steps();

}  // namespace attnscope::ui
