// The classroom's window-free logic: the shape quiz (parsing, grading, score), the translations
// (the catalogue found, _() and core's texts in Chinese), the step narratives (every step, both
// languages) and the saved language.
#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "config.hpp"
#include "cost.hpp"
#include "beyond.hpp"
#include "diagnose.hpp"
#include "bug_zoo.hpp"
#include "logic/engine_runner.hpp"
#include "positions.hpp"
#include "logic/core_text.hpp"
#include "logic/i18n.hpp"
#include "logic/wrap.hpp"
#include "logic/narrative.hpp"
#include "logic/quiz.hpp"
#include "logic/settings.hpp"
#include "pipeline.hpp"
#include "run.hpp"
#include "trace.hpp"
#include "vit.hpp"

using namespace attnscope;
using namespace attnscope::ui;
namespace fs = std::filesystem;

namespace {

AttentionConfig demo() {
    AttentionConfig c;  // B 2, N 16, C 768, h 8 -> c 96
    return c;
}

Shape parse_ok(const std::string& text) {
    std::string error;
    const auto s = parse_shape_answer(text, demo(), &error);
    CAPTURE(text);
    CAPTURE(error);
    REQUIRE(s.has_value());
    return *s;
}

std::string parse_error(const std::string& text) {
    std::string error;
    const auto s = parse_shape_answer(text, demo(), &error);
    CAPTURE(text);
    CHECK_FALSE(s.has_value());
    CHECK_FALSE(error.empty());
    return error;
}

// The build tree's Chinese catalogue: a test binary is not where an installed attnscope finds one.
const int kLocaleDir = setenv("ATTNSCOPE_LOCALEDIR", ATTNSCOPE_LOCALE_DIR, 0);

bool has_cjk(const std::string& s) {
    for (unsigned char ch : s)
        if (ch >= 0xE4 && ch <= 0xE9) return true;  // lead bytes of U+4E00..U+9FFF
    return false;
}

}  // namespace

// ---- quiz --------------------------------------------------------------------------------------

TEST_CASE("quiz: numbers in brackets and commas and blanks all parse") {
    const Shape want{2, 8, 16, 96};
    CHECK(parse_ok("[2, 8, 16, 96]") == want);
    CHECK(parse_ok("2,8,16,96") == want);
    CHECK(parse_ok("(2 8 16 96)") == want);
    CHECK(parse_ok("  torch.Size([2, 8, 16, 96]) ") == want);
    CHECK(parse_ok("2;8;16;96") == want);
    CHECK(parse_ok("[768]") == Shape{768});
}

TEST_CASE("quiz: symbols are evaluated with the config") {
    CHECK(parse_ok("B,h,N,c") == Shape{2, 8, 16, 96});
    CHECK(parse_ok("[B, N, 3*C]") == Shape{2, 16, 2304});
    CHECK(parse_ok("[B, N, 3 * C]") == Shape{2, 16, 2304});
    CHECK(parse_ok("B N 3 h C/h") == Shape{2, 16, 3, 8, 96});
    CHECK(parse_ok("[3, B, h, N, c]") == Shape{3, 2, 8, 16, 96});
    CHECK(parse_ok("B, h, N, N'") == Shape{2, 8, 16, 16});
    CHECK(parse_ok("(B, N, h*c)") == Shape{2, 16, 768});
}

TEST_CASE("quiz: bad answers give a reason instead of a shape") {
    CHECK(parse_error("").find("type a shape") != std::string::npos);
    CHECK(parse_error("[]").find("type a shape") != std::string::npos);
    CHECK(parse_error("B, x_y, N").find("x_y") != std::string::npos);
    CHECK(parse_error("B, Q").find("unknown symbol 'Q'") != std::string::npos);
    CHECK(parse_error("2, 8 +").find("'+'") != std::string::npos);
    CHECK(parse_error("C/5").find("divide") != std::string::npos);
    CHECK(parse_error("3*").find("operator") != std::string::npos);
}

TEST_CASE("quiz: grading compares with the step's real shape") {
    const Shape scores{2, 8, 16, 16};
    const QuizFeedback right = grade_answer("B, h, N, N", scores, demo());
    CHECK(right.correct);
    CHECK(right.expected == scores);
    const QuizFeedback wrong = grade_answer("[2, 8, 16, 96]", scores, demo());
    CHECK_FALSE(wrong.correct);
    REQUIRE(wrong.given.has_value());
    CHECK(*wrong.given == Shape{2, 8, 16, 96});
    const QuizFeedback unreadable = grade_answer("banana!", scores, demo());
    CHECK_FALSE(unreadable.correct);
    CHECK_FALSE(unreadable.given.has_value());
    CHECK_FALSE(unreadable.error.empty());
}

TEST_CASE("quiz: the score counts each step once and resets") {
    QuizScore s;
    CHECK(s.text() == "0 / 0");
    s.record("qkv", true);
    s.record("qkv_split", false);
    s.record("qkv", false);  // asked already: not counted again
    CHECK(s.right == 1);
    CHECK(s.asked == 2);
    CHECK(s.text() == "1 / 2");
    CHECK(s.was_asked("qkv_split"));
    CHECK_FALSE(s.was_asked("q"));
    s.reset();
    CHECK(s.text() == "0 / 0");
    CHECK_FALSE(s.was_asked("qkv"));
}

TEST_CASE("quiz: the hint is never the shape of a step, over every step of several configs") {
    std::vector<AttentionConfig> configs(6);
    configs[1].batch = 1, configs[1].tokens = 65, configs[1].dim = 96, configs[1].heads = 3;  // the small ViT
    configs[2].batch = 2, configs[2].tokens = 5, configs[2].dim = 21, configs[2].heads = 7;   // the hint's own numbers
    configs[3].batch = 3, configs[3].tokens = 3, configs[3].dim = 9, configs[3].heads = 3;    // B = N = h = c
    configs[4].batch = 5, configs[4].tokens = 7, configs[4].dim = 10, configs[4].heads = 5;
    configs[5].batch = 1, configs[5].tokens = 197, configs[5].dim = 768, configs[5].heads = 12;
    for (const AttentionConfig& config : configs) {
        const Trace trace = run_attention(config);
        std::vector<Shape> shapes;
        for (const Step& s : trace.steps) shapes.push_back(s.shape());
        REQUIRE(shapes.size() >= 10);
        const QuizHint hint = quiz_hint(shapes, config);
        CAPTURE(hint.numbers);
        CAPTURE(hint.symbols);
        REQUIRE_FALSE(hint.numbers.empty());
        REQUIRE_FALSE(hint.symbols.empty());
        for (const std::string& example : {hint.numbers, hint.symbols}) {
            std::string error;
            const auto typed = parse_shape_answer(example, config, &error);
            REQUIRE(typed.has_value());  // an example the quiz accepts
            for (const Step& s : trace.steps) {
                CAPTURE(s.name);
                CHECK(*typed != s.shape());
            }
        }
    }
    // The old fixed hint was the answer for q, k, v and context of the default demo.
    const Trace demo_trace = run_attention(demo());
    const QuizHint hint = quiz_hint({demo_trace.find("q")->shape()}, demo());
    CHECK(hint.numbers != "[2, 8, 16, 96]");
    CHECK(parse_ok(hint.symbols) != Shape{2, 8, 16, 96});
}

TEST_CASE("quiz: a new trace (file opened, config changed) resets the score, question and feedback") {
    ClassroomState c;
    c.show_trace(1);
    c.score.record("qkv_split", true);
    c.asking = 4;
    c.answered_step = "qkv_split";
    c.feedback = grade_answer("[1, 65, 3, 3, 32]", Shape{1, 65, 3, 3, 32}, demo());
    std::snprintf(c.answer, sizeof c.answer, "%s", "B, N");
    CHECK_FALSE(c.show_trace(1));  // the same trace: kept
    CHECK(c.score.asked == 1);
    CHECK(c.answered_step == "qkv_split");
    CHECK(c.show_trace(2));
    CHECK(c.score.text() == "0 / 0");
    CHECK_FALSE(c.score.was_asked("qkv_split"));
    CHECK(c.asking == -1);
    CHECK(c.answered_step.empty());
    CHECK_FALSE(c.feedback.has_value());
    CHECK(std::string(c.answer).empty());
}

// ---- translations ----------------------------------------------------------------------------

// That every string of app/ has a Chinese, with the same printf specifiers, is tests/i18n's check
// of po/zh_CN.po (xgettext, msgfmt --check). Here: the compiled catalogue is found and read.
TEST_CASE("i18n: the compiled Chinese catalogue is found and is Chinese") {
    CHECK(catalogue_found());
    CAPTURE(catalogue_path());
    const std::vector<std::string> texts = chinese_texts();
    CHECK(texts.size() > 1000);
    std::size_t chinese = 0;
    for (const std::string& t : texts) chinese += has_cjk(t) ? 1 : 0;
    CHECK(chinese * 10 >= texts.size() * 8);  // most entries are real translations
    CHECK(has_translation("Heads"));
    CHECK_FALSE(has_translation("no such label, not translated"));
    CHECK_FALSE(has_translation(""));
    CHECK(std::string(chinese_in_context("core", "copy")) == "复制");
    CHECK(chinese_in_context("core", "no such text") == nullptr);
}

TEST_CASE("i18n: _() follows the language and falls back to English") {
    set_language(Language::Chinese);
    CHECK(std::string(_("Pipeline")) == "计算流程");
    CHECK(std::string(_("no such label, not translated")) == "no such label, not translated");
    set_language(Language::English);
    CHECK(std::string(_("Pipeline")) == "Pipeline");
    CHECK(std::string(tr_in(Language::Chinese, "Heads")) == "注意力头");
    CHECK(window_title(tr_in(Language::Chinese, "Heads"), "Heads") == "注意力头###Heads");
    CHECK(parse_language("zh") == Language::Chinese);
    CHECK(parse_language("en") == Language::English);
    CHECK_FALSE(parse_language("fr").has_value());
    CHECK(std::string(language_code(Language::Chinese)) == "zh");
}

TEST_CASE("i18n: the language is saved in settings.json") {
    Settings s;
    s.language = "zh";
    std::string error;
    auto back = settings_from_json(settings_to_json(s), &error);
    CAPTURE(error);
    REQUIRE(back.has_value());
    CHECK(back->language == "zh");
    back = settings_from_json(R"({"language": "klingon"})", &error);
    REQUIRE(back.has_value());
    CHECK(back->language == "en");
    back = settings_from_json("{}", &error);
    REQUIRE(back.has_value());
    CHECK(back->language == "en");
}

// ---- narratives -------------------------------------------------------------------------------

TEST_CASE("narrative: every attention and ViT step is told in English and Chinese") {
    std::vector<std::string> steps = attention_step_names();
    for (const auto* names : {&vit_embed_step_names(), &vit_block_step_names(), &vit_head_step_names()})
        steps.insert(steps.end(), names->begin(), names->end());
    for (const std::string& step : vit_stem_step_names(3)) steps.push_back(step);  // a hybrid's CNN stem
    for (const std::string& step : steps) {
        CAPTURE(step);
        const StepNarrative en = step_narrative(step, Language::English);
        const StepNarrative zh = step_narrative(step, Language::Chinese);
        CHECK(en.title.size() > 3);
        CHECK(en.text.size() > 40);
        CHECK_FALSE(has_cjk(en.title + en.text));
        CHECK(has_cjk(zh.title));
        CHECK(has_cjk(zh.text));
    }
    CHECK(step_narrative("no_such_step", Language::English).text.empty());
    CHECK(step_narrative("stem2.bn", Language::English).text == step_narrative("stem0.bn", Language::English).text);
    CHECK(step_narrative("stem.bn.x", Language::English).text.empty());
    CHECK(step_narrative("stemx.bn", Language::English).text.empty());
    // The article's terms appear where they belong.
    CHECK(step_narrative("scaled", Language::Chinese).text.find("缩放点积") != std::string::npos);
    CHECK(step_narrative("k_t", Language::Chinese).text.find("转置") != std::string::npos);
    CHECK(step_narrative("merged", Language::Chinese).text.find("多头注意力") != std::string::npos);
}

TEST_CASE("narrative: the Shape view's lead is the first one or two sentences of every step's text") {
    CHECK(narrative_lead("One. Two. Three.") == "One. Two.");
    CHECK(narrative_lead("One. Two. Three.", 1) == "One.");
    CHECK(narrative_lead("Only one.") == "Only one.");
    CHECK(narrative_lead("x.shape is 1.5 times y. Two.", 1) == "x.shape is 1.5 times y.");
    CHECK(narrative_lead("\xE4\xB8\x80\xE3\x80\x82\xE4\xBA\x8C\xE3\x80\x82\xE4\xB8\x89\xE3\x80\x82") ==
          "\xE4\xB8\x80\xE3\x80\x82\xE4\xBA\x8C\xE3\x80\x82");  // 一。二。三。 -> 一。二。
    for (const std::string& step : narrated_steps())
        for (Language language : {Language::English, Language::Chinese}) {
            CAPTURE(step);
            const std::string text = step_narrative(step, language).text;
            const std::string lead = narrative_lead(text);
            CHECK(lead.size() > 20);
            CHECK(text.compare(0, lead.size(), lead) == 0);  // a prefix, cut at a sentence end
            CHECK(lead.size() <= text.size());
        }
}

TEST_CASE("narrative: MultiHeadAttention's steps are told as that class writes them, in both languages") {
    for (const StepInfo& step : attention_steps(Reference::mha)) {
        if (step.only_masked) continue;  // told with the masks (not a line of either class)
        CAPTURE(step.name);
        const StepNarrative en = step_narrative(std::string(step.name), Language::English, Reference::mha);
        const StepNarrative zh = step_narrative(std::string(step.name), Language::Chinese, Reference::mha);
        CHECK(en.text.size() > 40);
        CHECK_FALSE(has_cjk(en.title + en.text));
        CHECK(has_cjk(zh.text));
    }
    // The lines that differ name the class's own code; the shared ones keep ViTAttention's words.
    CHECK(step_narrative("q", Language::English, Reference::mha).title.find("qkv[0]") != std::string::npos);
    CHECK(step_narrative("q", Language::English).text.find("unbind(0)") != std::string::npos);
    CHECK(step_narrative("out", Language::English, Reference::mha).text.find("no output dropout") != std::string::npos);
    CHECK(step_narrative("k_t", Language::English, Reference::mha).text ==
          step_narrative("k_t", Language::English).text);
}

TEST_CASE("narrative: a Hugging Face block's steps are told in ViTSelfAttention's words where its lines differ") {
    for (const StepInfo& step : attention_steps(Reference::hf)) {
        if (step.only_masked) continue;
        CAPTURE(step.name);
        const StepNarrative en = step_narrative(std::string(step.name), Language::English, Reference::hf);
        const StepNarrative zh = step_narrative(std::string(step.name), Language::Chinese, Reference::hf);
        CHECK(en.text.size() > 40);
        CHECK_FALSE(has_cjk(en.title + en.text));
        CHECK(has_cjk(zh.text));
    }
    // The words quote the step's own line.
    CHECK(step_narrative("scaled", Language::English, Reference::hf).text.find(step_info("scaled", Reference::hf)->code) !=
          std::string::npos);
    CHECK(step_narrative("q", Language::English, Reference::hf).title.find("query_layer") != std::string::npos);
    CHECK(std::string(step_info("out", Reference::hf)->code).find("self.output.dense") != std::string::npos);
    CHECK(step_narrative("out", Language::English, Reference::hf).title.find("self.output.dense") != std::string::npos);
    CHECK(step_narrative("k_t", Language::English, Reference::hf).text == step_narrative("k_t", Language::English).text);
}

TEST_CASE("settings: the reference code is saved; an unknown one reads as ViTAttention") {
    Settings s;
    s.config.reference = Reference::mha;
    std::string error;
    auto back = settings_from_json(settings_to_json(s), &error);
    REQUIRE(back.has_value());
    CHECK(back->config.reference == Reference::mha);
    back = settings_from_json(R"({"config": {"reference": "gpt"}})", &error);
    REQUIRE(back.has_value());
    CHECK(back->config.reference == Reference::vit);
}

// ---- core's texts in Chinese -----------------------------------------------------------------

namespace {

// The {} / {0} placeholders of a catalogue entry, as indices in the order they are filled.
std::vector<int> placeholders(const std::string& s) {
    std::vector<int> v;
    int next = 0;
    for (std::size_t i = 0; i + 1 < s.size(); ++i) {
        if (s[i] != '{') continue;
        if (s[i + 1] == '}') v.push_back(next++);
        else if (i + 2 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1])) && s[i + 2] == '}')
            v.push_back(s[i + 1] - '0');
    }
    return v;
}

// Every text core writes for the user (the Shape view's notes, formulas' remarks and code comments,
// the checks' explanations, the bug zoo's texts, diagnoses, class labels) over the default demo and
// its variants, every beyond-the-textbook path, every bug of the zoo and the demo ViT: {where, text}.
std::vector<std::pair<std::string, std::string>> core_texts() {
    std::vector<std::pair<std::string, std::string>> out;
    auto add = [&out](const std::string& where, const std::string& text) {
        if (!text.empty()) out.emplace_back(where, text);
    };
    // A coded message is translated from its code: every part of it must have its Chinese.
    auto coded = [&add](const std::string& where, const Message& message) {
        if (message.code == Msg::text) return add(where, english(message));
        INFO(where << ": " << english(message));
        CHECK(has_message_translation(message));
    };
    auto add_steps = [&](const std::string& run, const Steps& steps) {
        for (const Step& s : steps) {
            add(run + " " + s.name + " note", s.note);
            if (const auto gap = s.formula.find("  "); gap != std::string::npos) add(run + " " + s.name + " formula", s.formula.substr(gap + 2));
            if (const auto hash = s.code.find("# "); hash != std::string::npos) add(run + " " + s.name + " code", s.code.substr(hash + 2));
        }
    };
    auto add_trace = [&](const std::string& run, const Trace& t) {
        add_steps(run, t.steps);
        for (const RowSumCheck& r : t.checks.row_sums) {
            add(run + " row sums", r.explanation);
            add(run + " row-sum cause", r.cause);
        }
        add(run + " non-finite", t.checks.nonfinite.message);
        for (const StepDifference& d : t.differences) add(run + " " + d.step + " diagnosis", d.diagnosis);
    };

    std::vector<std::pair<std::string, AttentionConfig>> runs(10);
    runs[0].first = "demo";
    runs[1].first = "no-scale", runs[1].second.scaled = false;
    runs[2].first = "dropout", runs[2].second.training = true, runs[2].second.attn_drop = runs[2].second.proj_drop = 0.1f;
    runs[3].first = "mha", runs[3].second.reference = Reference::mha, runs[3].second.qkv_bias = true;
    runs[4].first = "hf", runs[4].second.reference = Reference::hf, runs[4].second.qkv_bias = true;
    runs[5].first = "causal", runs[5].second.causal = true;
    runs[6].first = "padding", runs[6].second.valid_tokens = {12, 16};
    runs[7].first = "flash", runs[7].second.path = AttentionPath::flash;
    runs[8].first = "kv-cache", runs[8].second.path = AttentionPath::kv_cache;
    runs[9].first = "windows", runs[9].second.path = AttentionPath::windowed, runs[9].second.window = 2,
    runs[9].second.shift = true, runs[9].second.patch_merge = true;
    for (const auto& [name, config] : runs) add_trace(name, run_attention(config));
    // The Cost panel's formulas: their closing remark, "0 (eval: identity)", "... = 2 B N^2 C  (any h)".
    for (const auto& [name, config] : runs)
        for (const StepCost& c : attention_cost(config).steps)
            for (const std::string& f : {c.params_formula, c.flops_formula, c.bytes_formula})
                if (const std::size_t open = f.rfind(" ("); open != std::string::npos && f.back() == ')')
                    add(name + " " + c.step + " cost", f.substr(open + 1));

    for (const BugInfo& b : bug_infos()) {
        add(std::string(b.key) + " title", b.title);
        add(std::string(b.key) + " symptom", b.symptom);
        add(std::string(b.key) + " caught by", caught_by_name(b.caught_by));
        if (b.bug == Bug::None) continue;
        const ZooRun z = run_zoo(AttentionConfig{}, b.bug);
        add_trace(b.key, z.buggy);
        add(std::string(b.key) + " failure", z.failure);
        add(std::string(b.key) + " shape problem", z.shape_problem);
        add(std::string(b.key) + " caught text", z.caught_text);
        for (const StepComparison& c : z.comparison.steps) {
            add(std::string(b.key) + " " + c.step + " diagnosis", c.diagnosis);
            add(std::string(b.key) + " finding", finding_name(c.finding));
        }
    }

    const VitModel model = load_vit_model(std::string(ATTNSCOPE_SOURCE_DIR) + "/assets/models/demo_vit.safetensors",
                                          std::nullopt, default_memory_budget());
    for (const std::string& label : model.labels) add("demo ViT label", label);
    const VitModel where = load_vit_model(std::string(ATTNSCOPE_SOURCE_DIR) + "/assets/models/where_vit.safetensors",
                                          std::nullopt, default_memory_budget());
    for (const std::string& label : where.labels) add("position-task ViT label", label);
    const std::size_t side = model.config.image_size;
    const VitTrace vit = run_vit(model, Tensor{Array(std::vector<std::size_t>{1, 3, side, side}, 0.0f), {"B", "3", "H", "W"}});
    add_steps("ViT embed", vit.embed);
    add_steps("ViT block", vit.blocks.front().steps);
    add_trace("ViT attention", vit.blocks.front().attention);
    add_steps("ViT head", vit.head);

    // The position experiment: the demo ViT without position embeddings on its shuffled picture.
    const Tensor pixels{Array(std::vector<std::size_t>{1, 3, side, side}, 0.0f), {"B", "3", "H", "W"}};
    const VitModel no_pos = without_pos_embed(model);
    const PositionExperiment e = run_shuffled(no_pos, pixels, run_vit(no_pos, pixels), false, 7);
    add_steps("shuffled embed", e.shuffled.embed);
    add_steps("shuffled block", e.shuffled.blocks.front().steps);

    // A hybrid ViT (CNN stem) with stochastic depth, in training and in eval: every block's notes.
    for (const bool training : {true, false}) {
        VitConfig hybrid = with_cnn_stem(VitConfig{});
        hybrid.depth = 2, hybrid.drop_path_rate = 0.5f, hybrid.training = training, hybrid.seed = 3;
        const std::string run = training ? "hybrid train" : "hybrid eval";
        const std::size_t s = hybrid.image_size;
        const VitTrace t = run_vit(fresh_vit_model(hybrid, 1),
                                   Tensor{Array(std::vector<std::size_t>{1, 3, s, s}, 0.5f), {"B", "3", "H", "W"}});
        add_steps(run + " embed", t.embed);
        for (const VitBlockTrace& b : t.blocks) add_steps(run + " block", b.steps);
        add_steps(run + " head", t.head);
    }

    // The config panel's problems with a config: every check of validate().
    std::vector<AttentionConfig> bad(22);
    bad[0].batch = 0, bad[0].tokens = 0, bad[0].dim = 0, bad[0].heads = 0;
    bad[1].dim = 100, bad[1].heads = 8;
    bad[2].attn_drop = 1.5f, bad[2].proj_drop = -0.5f;
    bad[3].reference = Reference::mha, bad[3].path = AttentionPath::flash, bad[3].proj_drop = 0.1f, bad[3].qkv_bias = false;
    bad[4].valid_tokens = {3, 4, 5};
    bad[5].valid_tokens = {3, 40};
    bad[6].path = AttentionPath::flash, bad[6].tile_rows = 0, bad[6].training = true, bad[6].attn_drop = 0.1f;
    bad[7].path = AttentionPath::kv_cache, bad[7].training = true, bad[7].attn_drop = 0.1f;
    bad[8].path = AttentionPath::windowed, bad[8].causal = true, bad[8].tokens = 17;
    bad[9].path = AttentionPath::windowed, bad[9].tokens = 15;
    bad[10].path = AttentionPath::windowed, bad[10].tokens = 16, bad[10].window = 3;
    bad[11].path = AttentionPath::windowed, bad[11].tokens = 16, bad[11].window = 4, bad[11].shift = true;
    bad[12].path = AttentionPath::windowed, bad[12].tokens = 9, bad[12].window = 3, bad[12].patch_merge = true;
    bad[13].path = AttentionPath::windowed, bad[13].tokens = 144, bad[13].window = 4, bad[13].patch_merge = true;
    bad[14].patch_merge = true;
    bad[15].tokens = 1 << 16;
    bad[16].tokens = 1 << 16, bad[16].causal = true;
    bad[17].tokens = 1 << 20, bad[17].path = AttentionPath::flash;
    bad[18].batch = std::size_t{1} << 62, bad[18].tokens = std::size_t{1} << 62;
    for (const AttentionConfig& c : bad)
        for (const Message& problem : validate(c, std::uint64_t{1} << 30)) coded("config problem", problem);
    std::vector<VitConfig> bad_vits(6);
    bad_vits[0].patch_size = 0, bad_vits[0].dim = 0, bad_vits[0].heads = 0;
    bad_vits[1].patch_size = 7, bad_vits[1].heads = 5, bad_vits[1].drop_path_rate = 1.5f;
    bad_vits[2] = with_cnn_stem(VitConfig{}), bad_vits[2].stem_channels = {8, 0, 8}, bad_vits[2].stem_kernel = 4;
    bad_vits[3] = with_cnn_stem(VitConfig{}), bad_vits[3].stem_channels.assign(12, 8);
    bad_vits[4].family = VitFamily::Torchvision, bad_vits[4].drop_path_rate = 0.1f;
    bad_vits[5].image_size = 4096, bad_vits[5].patch_size = 4;
    for (const VitConfig& c : bad_vits)
        for (const Message& problem : validate(c, 1, std::uint64_t{1} << 30)) coded("ViT config problem", problem);
    add("mask", mask_summary(runs[5].second));
    add("mask", mask_summary(runs[6].second));
    for (AttentionPath path : {AttentionPath::standard, AttentionPath::flash, AttentionPath::kv_cache, AttentionPath::windowed})
        add("path name", path_name(path));

    // A file as the GUI's File > Open gets it (the job the worker runs): why it cannot be opened
    // (the Cannot open dialog), or the notes beside its run (where its input, weights and head count
    // came from, what it lacks). Every malformed fixture, every file of the readers' tests, the
    // saved steps and checkpoints of the tests, a missing file, a folder without .npy files and a
    // file of no known type.
    const fs::path data = fs::path(ATTNSCOPE_SOURCE_DIR) / "tests" / "data";
    std::size_t notes = 0;
    auto open = [&coded, &notes](const fs::path& file) {
        const std::string where = "open " + file.filename().string();
        try {
            const EngineResult r = EngineRunner::file_job(file.string(), std::nullopt, std::nullopt, "")(RunHooks{});
            if (!r.error.empty()) coded(where, r.error);
            if (r.file)
                for (const Message& note : r.file->notes) {
                    coded(where + " note", note);
                    ++notes;
                }
        } catch (const std::exception& e) {
            coded(where, message_of(e));
        }
    };
    std::vector<fs::path> files;
    for (const char* folder : {"activations/bad", "torch/bad", "io", "zoo", "torch", "activations", "saved/hooks",
                               "saved/numpy", "saved/whole", "saved/legacy", "heads/encoder", "heads/checkpoint"})
        for (const auto& entry : fs::directory_iterator(data / folder))
            if (entry.is_regular_file()) files.push_back(entry.path());
    files.push_back(data / "activations" / "nothing_here.npz");
    files.push_back(data / "activations" / "bug_heads_reshape");  // a folder of .npy steps without weights
    files.push_back(data / "io" / "expected.json");
    files.push_back(data / "io");  // a folder of .npy files that are not attention
    files.push_back(data / "vit");  // a folder without .npy files
    std::sort(files.begin(), files.end());
    for (const fs::path& f : files) open(f);
    CHECK(notes > 20);  // the files ran and said where their parts came from
    // Where a whole ViT's head count came from, beside it in the Image panel.
    for (const char* file : {"heads/checkpoint/checkpoint.pth", "heads/hf_folder/pytorch_model.bin", "saved/whole/vit.pt"})
        coded(std::string("heads of ") + file,
              load_vit_model((data / file).string(), std::nullopt, default_memory_budget()).heads_from);
    coded("heads of the demo ViT", model.heads_from);
    return out;
}

}  // namespace

TEST_CASE("i18n: every entry of core's catalogue has a Chinese with the same placeholders") {
    REQUIRE(core_catalogue().size() > 50);
    for (const CoreMessage& m : core_catalogue()) {
        const std::string en = m.english, zh = m.chinese;
        CAPTURE(en);
        CAPTURE(zh);
        CHECK((has_cjk(m.chinese) || std::string(m.chinese) == m.english));  // code stays code
        std::vector<int> english = placeholders(m.english), chinese = placeholders(m.chinese);
        std::sort(chinese.begin(), chinese.end());
        CHECK(english == chinese);  // every argument used once
    }
}

TEST_CASE("i18n: every text core writes for the user has a Chinese") {
    const auto texts = core_texts();
    CHECK(texts.size() > 300);
    std::vector<std::string> missing;
    for (const auto& [where, text] : texts)
        if (!has_core_translation(text)) missing.push_back(where + ": \"" + text + "\"");
    std::sort(missing.begin(), missing.end());
    missing.erase(std::unique(missing.begin(), missing.end()), missing.end());
    std::string list;
    for (const std::string& m : missing) list += "\n  " + m;
    INFO("add these to app/gui/logic/core_messages.inc as NC_(\"core\", \"English with {} for each argument\") and its Chinese to po/zh_CN.po:" << list);
    CHECK(missing.empty());
}

TEST_CASE("i18n: core texts are matched by template, arguments and all") {
    set_language(Language::Chinese);
    CHECK(std::string(tr_core("caught by the shape check: scores has shape [2, 8, 16, 96], expected [B, h, N, N] = [2, 8, 16, 16]"))
              .find("[2, 8, 16, 96]") != std::string::npos);
    CHECK(has_cjk(tr_formula("b h n m -> b h n m  (softmax over m)")));
    CHECK(tr_formula("b h n m -> b h n m  (softmax over m)").rfind("b h n m -> b h n m  ", 0) == 0);
    CHECK(has_cjk(tr_code("attn.softmax(dim=-2)   # BUG: over the queries")));
    CHECK(tr_code("attn.softmax(dim=-2)   # BUG: over the queries").rfind("attn.softmax(dim=-2)   # ", 0) == 0);
    // A file's error: the path is an argument, kept as it is, whatever the template.
    CHECK(tr_message(Message(Msg::zip_unreadable, {{"file", "/data/x.npz"}, {"reason", "Not a zip archive"}})
                         .with("kind", Message(Msg::kind_npz))) == "/data/x.npz：不是可读的 .npz（zip 归档）：不是 zip 归档");
    CHECK(tr_message(Message(Msg::tensor_too_many_axes, {{"file", "/data/a b.npy"}, {"axes", "33"}, {"max", "32"}}))
              .rfind("/data/a b.npy 有 33 个轴", 0) == 0);
    CHECK(tr_message(validate([] { AttentionConfig c; c.dim = 100; return c; }(), UINT64_MAX).front())
              .rfind("--dim 100 不能被 --heads 8 整除", 0) == 0);
    set_language(Language::English);
    CHECK(std::string(tr_core("new contiguous tensor")) == "new contiguous tensor");
    CHECK(tr_formula("b h n m -> b h n m  (softmax over m)") == "b h n m -> b h n m  (softmax over m)");
}

// ---- wrapping ----------------------------------------------------------------------------------

namespace {

float glyphs(std::string_view s) {  // one unit per character
    float n = 0;
    for (unsigned char ch : s) n += (ch & 0xC0) != 0x80 ? 1.0f : 0.0f;
    return n;
}

std::vector<std::string> wrapped(const std::string& text, float width) {
    std::vector<std::string> lines;
    for (std::string_view line : wrap_lines(text, width, glyphs)) lines.emplace_back(line);
    return lines;
}

}  // namespace

TEST_CASE("wrap: code, shapes and numbers stay whole; Chinese breaks between characters") {
    for (float width : {10.0f, 12.0f, 14.0f, 16.0f, 20.0f}) {
        CAPTURE(width);
        const std::string zh = "每个输出行都是 attn @ v 的一行，形状为 [B, N, 3, h, c]，误差 1.19e-07。然后 (attn @ v).reshape(B, N, C) 合并。";
        std::string joined;
        for (const std::string& line : wrapped(zh, width)) {
            CAPTURE(line);
            CHECK(glyphs(line) <= std::max(width, 27.0f));  // only the code run longer than the line overflows ...
            CHECK(line.rfind("，", 0) != 0);                 // no line starts with closing punctuation
            CHECK(line.rfind("。", 0) != 0);
            joined += line + "|";
        }
        CHECK(joined.find("attn @ v") != std::string::npos);
        CHECK(joined.find("1.19e-07") != std::string::npos);
        if (width >= 16.0f) CHECK(joined.find("[B, N, 3, h, c]") != std::string::npos);
    }
    // ... and is cut at its blanks when it is wider than a whole line.
    for (const std::string& line : wrapped("然后 (attn @ v).reshape(B, N, C) 合并。", 12.0f)) CHECK(glyphs(line) <= 12.0f);
    // A run of Chinese after code fills the line instead of leaving the code alone on it.
    const auto lines = wrapped("permute(2, 0, 3, 1, 4) 把 q/k/v 轴放到最前面，并把头轴放在 token 轴之前。", 36.0f);
    REQUIRE(lines.size() == 2);
    CHECK(glyphs(lines[0]) >= 30.0f);
    // English: blanks break, not '.' inside a number nor the blanks of a shape; '\n' always breaks.
    const auto en = wrapped("max |sum - 1| = 1.19e-07 and the shape [B, N, 3, h, c] is right\nnext", 20.0f);
    std::string all;
    for (const std::string& line : en) all += line + "|";
    CHECK(all.find("1.19e-07") != std::string::npos);
    CHECK(all.find("[B, N, 3, h, c]") != std::string::npos);
    CHECK(en.back() == "next");
}

TEST_CASE("wrap: a paragraph's last line is never one Chinese character or a short number and its punctuation alone") {
    // 13 characters and 。: at 12 a line, 过。 would be left alone; 行 comes down with it.
    const std::string text = "这是一个很长的句子会换行过。";
    CHECK(wrapped(text, 12.0f) == std::vector<std::string>{"这是一个很长的句子会换", "行过。"});
    CHECK(wrapped(text, 12.0f).size() == 2);
    // Each paragraph on its own; a paragraph of one line and a last line of two characters stay.
    CHECK(wrapped("过。\n" + text, 12.0f) == std::vector<std::string>{"过。", "这是一个很长的句子会换", "行过。"});
    CHECK(wrapped("这是一个很长的句子会换行而过。", 12.0f) ==
          std::vector<std::string>{"这是一个很长的句子会换行", "而过。"});
    // Code before the widow comes down whole, when it fits.
    CHECK(wrapped("这是一个 attn @ v 过。", 13.0f) == std::vector<std::string>{"这是一个", "attn @ v 过。"});
    // A number of one or two digits and its bracket neither: "2）" comes down with what is before it.
    CHECK(wrapped("这是一个很长的句子共 2）", 11.0f) == std::vector<std::string>{"这是一个很长的句子", "共 2）"});
    // English lines are words: no widow rule.
    CHECK(wrapped("one two three four five six", 12.0f).back() == "five six");
}
