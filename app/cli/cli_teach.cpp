// `attnscope cost` and `attnscope zoo`: the cost table of one layer, and the bug zoo.
//
//   cost [-B N] [-N N] [-C N] [--heads H] [--qkv-bias] [--training --attn-drop P --proj-drop P]
//   zoo  [--bug KEY] [-B N] [-N N] [-C N] [--heads H] [--qkv-bias] [--seed S]
//
// zoo without --bug lists the bugs; with one it runs the correct and the buggy pipeline on the same
// seeded weights and input and prints each step's comparison, what catches the bug and where.
#include <algorithm>
#include <cstdio>
#include <string>

#include "bug_zoo.hpp"
#include "cli.hpp"
#include "config.hpp"
#include "cost.hpp"
#include "gui.hpp"
#include "provenance.hpp"
#include "run.hpp"

namespace attnscope {

namespace {

struct TeachOptions {
    AttentionConfig config;
    std::string bug;
};

void add_sizes(CLI::App& cmd, AttentionConfig& c) {
    cmd.add_option("--batch,-B", c.batch, "batch size B")->capture_default_str();
    cmd.add_option("--tokens,-N", c.tokens, "tokens N")->capture_default_str();
    cmd.add_option("--dim,-C", c.dim, "embedding dim C")->capture_default_str();
    cmd.add_option("--heads", c.heads, "heads h (C % h == 0)")->capture_default_str();
    cmd.add_flag("--qkv-bias", c.qkv_bias, "qkv Linear has a bias");
}

void require_valid(const AttentionConfig& config, std::uint64_t budget) {
    const auto problems = validate(config, budget);
    if (!problems.empty()) throw UsageError(english(problems.front()));
}

int cmd_cost(const TeachOptions& o) {
    require_valid(o.config, UINT64_MAX);  // nothing is run: any size can be costed
    std::fputs(format_cost_table(attention_cost(o.config)).c_str(), stdout);
    return 0;
}

int cmd_zoo(const TeachOptions& o) {
    if (o.bug.empty()) {
        std::printf("the bug zoo (attnscope zoo --bug KEY):\n");
        for (const BugInfo& b : bug_infos()) {
            if (b.bug == Bug::None) continue;
            std::printf("  %-24s %s\n  %-24s   %s\n  %-24s   caught by: %s, first at %s\n", b.key, b.title, "",
                        b.wrong_line, "", caught_by_name(b.caught_by), b.first_step);
        }
        return 0;
    }
    const std::optional<Bug> bug = bug_from_key(o.bug);
    if (!bug) {
        std::string keys;
        for (const BugInfo& b : bug_infos()) keys += std::string(keys.empty() ? "" : ", ") + b.key;
        throw UsageError("--bug " + o.bug + " is not a bug of the zoo; pick one of: " + keys);
    }
    require_valid(o.config, default_memory_budget() / 2);  // two runs
    const ZooRun z = run_zoo(o.config, *bug);
    const BugInfo& info = bug_info(*bug);
    std::printf("%s\n  wrong: %s\n  right: %s\n  symptom: %s\n\n", info.title, info.wrong_line, info.right_line,
                info.symptom);
    for (const StepComparison& c : z.comparison.steps)
        std::printf("  %-10s %-16s %s\n", c.step.c_str(), c.ok() ? "same" : finding_name(c.finding),
                    c.ok() ? "" : c.diagnosis.c_str());
    if (!z.failure.empty()) std::printf("\n%s\n", z.failure.c_str());
    std::printf("\n%s\n", z.caught_text.c_str());
    return 0;
}

}  // namespace

void add_teach_commands(CLI::App& app, CommandAction& action) {
    static TeachOptions cost_options, zoo_options;
    CLI::App* cost = app.add_subcommand("cost", "parameters, FLOPs and memory of every step as formulas and numbers");
    add_sizes(*cost, cost_options.config);
    cost->add_flag("--training", cost_options.config.training, "training mode: dropout active");
    cost->add_option("--attn-drop", cost_options.config.attn_drop, "attention dropout p");
    cost->add_option("--proj-drop", cost_options.config.proj_drop, "output dropout p");
    cost->final_callback([&action] { action = [] { return cmd_cost(cost_options); }; });

    CLI::App* zoo = app.add_subcommand("zoo", "the bug zoo: a classic mistake run beside the correct pipeline");
    add_sizes(*zoo, zoo_options.config);
    zoo->add_option("--seed", zoo_options.config.seed, "seed of input and weights")->capture_default_str();
    zoo->add_option("--bug", zoo_options.bug, "the bug to run (without it: the list)");
    zoo->final_callback([&action] { action = [] { return cmd_zoo(zoo_options); }; });
}

}  // namespace attnscope

// ---- the app's --bug and --follow -------------------------------------------------------------
namespace attnscope {

namespace {
std::string g_bug, g_follow;
bool g_cost = false;
}  // namespace

void add_teach_gui_options(CLI::App& app) {
    app.add_option("--bug", g_bug, "start with a bug of the zoo switched on (attnscope zoo lists the keys)");
    app.add_option("--follow", g_follow, "start following an element, e.g. \"scores[0,1,2,3]\"");
    app.add_flag("--cost", g_cost, "open the Cost panel at start");
}

void apply_teach_gui_options(GuiOptions& g) {
    g.show_cost = g_cost;
    if (!g_bug.empty()) {
        if (!bug_from_key(g_bug))
            throw UsageError("--bug " + g_bug + " is not a bug of the zoo (attnscope zoo lists them)");
        g.bug = g_bug;
    }
    if (g_follow.empty()) return;
    const std::size_t open = g_follow.find('['), close = g_follow.rfind(']');
    if (open == std::string::npos || close != g_follow.size() - 1)
        throw UsageError("--follow " + g_follow + ": write STEP[i,j,...], e.g. scores[0,1,2,3]");
    g.follow_step = g_follow.substr(0, open);
    std::string rest = g_follow.substr(open + 1, close - open - 1);
    g.follow_index.clear();
    for (std::size_t at = 0; at <= rest.size();) {
        const std::size_t comma = std::min(rest.find(',', at), rest.size());
        const std::string part = rest.substr(at, comma - at);
        if (part.empty() || part.find_first_not_of(" 0123456789") != std::string::npos)
            throw UsageError("--follow " + g_follow + ": '" + part + "' is not a whole number");
        g.follow_index.push_back(std::stoul(part));
        at = comma + 1;
    }
    const Bug bug = g.bug.empty() ? Bug::None : *bug_from_key(g.bug);
    for (const GraphNode& n : attention_graph(g.config, bug))
        if (n.step == g.follow_step) {
            bool inside = n.shape.size() == g.follow_index.size();
            for (std::size_t i = 0; inside && i < n.shape.size(); ++i) inside = g.follow_index[i] < n.shape[i];
            if (!inside)
                throw UsageError("--follow " + g_follow + ": outside " + g.follow_step + "'s shape " +
                                 format_shape(n.shape));
            return;
        }
    throw UsageError("--follow " + g_follow + ": no step named " + g.follow_step);
}

}  // namespace attnscope
