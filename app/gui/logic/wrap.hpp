// Line breaking for wrapped text, the way a reader of the text's language breaks lines:
//   - Chinese breaks between any two characters, but a line never starts with closing punctuation
//     (，。；：、）」!) nor ends with an opening one (（「), and a paragraph's last line is never one
//     character and its punctuation alone ("过。"): the character before it comes down too;
//   - a run of code between Chinese characters ("(attn @ v).transpose(1, 2)", "[B, N, 3, h, c]",
//     "1.19e-07") stays on one line; English breaks at blanks, but not inside a short bracket
//     ("[B, N, 3, h, c]", "(2, 0, 3, 1, 4)") and never after a '.' inside a word;
//   - only a piece wider than the whole line is cut: at its blanks, else between characters.
// ImGui's own wrapping (1.86) breaks after every '.' and ',' and treats a run of Chinese as one word,
// which leaves "permute(2, 0, 3, 1, 4) 把 q/k/v" alone on a line and splits "attn @⏎v".
#pragma once

#include <functional>
#include <string_view>
#include <vector>

namespace attnscope::ui {

// The lines of `text` (each a view into it; blanks at a break dropped; '\n' always breaks) so that
// measure(line) <= width wherever a piece can be broken.
std::vector<std::string_view> wrap_lines(std::string_view text, float width,
                                         const std::function<float(std::string_view)>& measure);

}  // namespace attnscope::ui
