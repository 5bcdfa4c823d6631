// `attnscope inspect` and `attnscope check`: saved activations and checkpoints.
//
//   inspect FILE [--json]        every tensor: name, dtype, shape, role, stats; attention maps get
//                                the row-sum check. Exit 0 when the file was read, 2 when not.
//   check DUMP [--weights FILE] [--block I] [--input FILE] [--heads H]
//                                the user's steps against the reference, in pipeline order; the last
//                                line names the first divergence. Exit 0 all match, 3 divergence, 2 unreadable.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "activations.hpp"
#include "cli.hpp"
#include "config.hpp"
#include "diagnose.hpp"
#include "io.hpp"
#include "roles.hpp"
#include "run.hpp"
#include "tensor_source.hpp"
#include "weights.hpp"

namespace attnscope {

namespace {

constexpr int kDivergence = 3;

// ---- inspect --------------------------------------------------------------------------------
nlohmann::json inspected_to_json(const InspectedTensor& t) {
    nlohmann::json j{{"name", t.info.name}, {"dtype", t.info.dtype}, {"shape", t.info.shape}};
    j["role"] = t.role.kind == RoleKind::None ? nlohmann::json(nullptr) : nlohmann::json(t.role.name);
    if (t.role.block) j["block"] = *t.role.block;
    if (!t.role.alias.empty()) j["alias"] = t.role.alias;
    if (!t.role.convention.empty()) j["convention"] = t.role.convention;
    if (t.stats)
        j["stats"] = {{"min", t.stats->min},   {"max", t.stats->max},           {"mean", t.stats->mean},
                      {"std", t.stats->std},   {"nan_count", t.stats->nan_count}, {"inf_count", t.stats->inf_count}};
    if (t.row_sums) {
        j["row_sum_max_error"] = t.row_sums->max_error;
        j["failing_rows"] = t.row_sums->failing_rows;
        j["rows"] = t.row_sums->rows;
    }
    if (!t.error.empty()) j["error"] = t.error;
    return j;
}

// "x.pt: 'epoch' is an int (3), not a tensor" -> "'epoch' is an int (3), not a tensor".
std::string without_path(const std::string& message, const std::string& path) {
    const std::string prefix = path + ": ";
    return message.compare(0, prefix.size(), prefix) == 0 ? message.substr(prefix.size()) : message;
}

void print_inspected(const TensorSource& source, const std::vector<InspectedTensor>& tensors) {
    // Entries listed only (a checkpoint's epoch, best_acc) are counted apart from the tensors.
    const auto others = static_cast<std::size_t>(
        std::count_if(tensors.begin(), tensors.end(), [](const InspectedTensor& t) { return t.info.listed_only; }));
    const std::size_t count = tensors.size() - others;
    std::printf("%s: %s, %zu tensor%s", source.path().c_str(), source.format().c_str(), count, count == 1 ? "" : "s");
    if (others) std::printf(", %zu other value%s", others, others == 1 ? "" : "s");
    std::printf("\n");
    std::vector<std::string> roles;
    std::size_t name_width = 4, shape_width = 5, role_width = 4;
    for (const auto& t : tensors) {
        roles.push_back(t.role.kind == RoleKind::None ? "-" : describe_role(t.role));
        name_width = std::max(name_width, t.info.name.size());
        shape_width = std::max(shape_width, format_shape(t.info.shape).size());
        role_width = std::max(role_width, roles.back().size());
    }
    const int nw = static_cast<int>(name_width), sw = static_cast<int>(shape_width), rw = static_cast<int>(role_width);
    std::printf("%-*s  %-5s  %-*s  %-*s  %10s %10s %10s %10s\n", nw, "name", "dtype", sw, "shape", rw, "role", "min",
                "max", "mean", "std");
    for (std::size_t i = 0; i < tensors.size(); ++i) {
        const InspectedTensor& t = tensors[i];
        std::printf("%-*s  %-5s  %-*s  %-*s", nw, t.info.name.c_str(), t.info.dtype.c_str(), sw,
                    format_shape(t.info.shape).c_str(), rw, roles[i].c_str());
        if (t.stats)
            std::printf("  %10.4g %10.4g %10.4g %10.4g%s%s\n", t.stats->min, t.stats->max, t.stats->mean, t.stats->std,
                        t.stats->nan_count + t.stats->inf_count ? "  " : "", nonfinite_text(*t.stats).c_str());
        else if (t.info.listed_only)
            std::printf("  not loaded: %s\n", without_path(t.error, source.path()).c_str());
        else
            std::printf("  not loaded: %s\n", t.error.c_str());
    }
    for (const auto& t : tensors)
        if (t.row_sums)
            std::printf("attention map %s: %s\n", t.info.name.c_str(), t.row_sums->explanation.c_str());
}

int cmd_inspect(const std::string& path, bool json) {
    const TensorSource source = TensorSource::open(path);
    std::vector<InspectedTensor> tensors;
    for (const TensorInfo& info : source.tensors()) tensors.push_back(inspect_tensor(source, info));
    std::vector<Role> roles;  // out_proj's convention comes from the qkv weights beside it
    for (const auto& t : tensors) roles.push_back(t.role);
    resolve_conventions(roles);
    for (std::size_t i = 0; i < tensors.size(); ++i) tensors[i].role = roles[i];
    if (json) {
        nlohmann::json list = nlohmann::json::array();
        for (const auto& t : tensors) list.push_back(inspected_to_json(t));
        std::cout << nlohmann::json{{"file", path}, {"format", source.format()}, {"tensors", list}}.dump(2) << "\n";
    } else {
        print_inspected(source, tensors);
    }
    // One line on stderr: the first tensor that could not be read (exit 2), else the first NaN.
    std::size_t unreadable = 0, nonfinite = 0;
    std::string first_error, first_nonfinite;
    for (const auto& t : tensors) {
        if (!t.error.empty() && !t.info.listed_only && !unreadable++) first_error = t.error;
        if (t.stats && !nonfinite_text(*t.stats).empty() && !nonfinite++)
            first_nonfinite = path + ": tensor '" + t.info.name + "' " + nonfinite_text(*t.stats);
    }
    auto more = [](std::size_t n) { return n > 1 ? " (and " + std::to_string(n - 1) + " more)" : std::string(); };
    if (unreadable) throw FileError(first_error + more(unreadable));
    if (nonfinite) std::fprintf(stderr, "attnscope: %s%s\n", first_nonfinite.c_str(), more(nonfinite).c_str());
    return 0;
}

// ---- check ----------------------------------------------------------------------------------
struct CheckOptions {
    std::string dump;
    std::string weights;
    std::string input;
    std::optional<std::size_t> block;
    std::optional<std::size_t> heads;
};

// The block to compare: --block, or the only block the dump's step names carry.
std::optional<std::size_t> dump_block(const TensorSource& dump, std::optional<std::size_t> block) {
    const std::vector<std::size_t> blocks = step_blocks(dump);
    if (block || blocks.size() <= 1) return block ? block : blocks.empty() ? std::nullopt : std::optional(blocks[0]);
    std::string list;
    for (std::size_t b : blocks) list += (list.empty() ? "" : ", ") + std::to_string(b);
    throw UsageError(dump.path() + ": holds the steps of blocks " + list + "; choose one with --block I");
}

// x [B, N, C]: from --input FILE (its only tensor, or the one named like the input), else the dump's.
Tensor input_of(const CheckOptions& o, const std::vector<UserStep>& steps) {
    std::optional<Array> x;
    std::string from = o.dump;
    if (!o.input.empty()) {
        const TensorSource source = TensorSource::open(o.input);
        from = o.input;
        for (const TensorInfo& t : source.tensors())
            if (source.tensors().size() == 1 || recognize_role(t.name, t.shape).name == "input") {
                x = source.load(t.name);
                break;
            }
        if (!x) throw UsageError(o.input + ": holds several tensors and none is named input, x or hidden_states");
    } else {
        for (const UserStep& s : steps)
            if (s.step == "input" && !x) x = s.values;
        if (!x)
            throw UsageError(o.dump + ": no input x [B, N, C] (a tensor named input, x or hidden_states); pass "
                                      "--input FILE");
    }
    return checked_input(std::move(*x), from);
}

void print_report(const CheckReport& report) {
    std::size_t step_width = 4, name_width = 6;
    for (const auto& s : report.steps) {
        step_width = std::max(step_width, s.step.size());
        name_width = std::max(name_width, s.tensor_name.size());
    }
    for (const auto& s : report.steps)
        std::printf("%-*s  %-*s  %s\n", static_cast<int>(step_width), s.step.c_str(), static_cast<int>(name_width),
                    s.tensor_name.c_str(), s.diagnosis.c_str());
    if (const StepComparison* first = report.first_divergence())
        std::printf("first divergence: %s \xe2\x80\x94 %s\n", first->step.c_str(), first->diagnosis.c_str());
    else
        std::printf("all steps match\n");
}

int cmd_check(const CheckOptions& o) {
    const TensorSource dump = TensorSource::open(o.dump);
    const std::optional<std::size_t> block = dump_block(dump, o.block);
    const std::vector<UserStep> steps = load_user_steps(dump, block);
    if (steps.empty())
        throw UsageError(o.dump + ": no tensor is named like a step (input, qkv, q, k, v, scores, attn, context, "
                                  "merged, out, or an alias such as attn_weights); nothing to compare");
    Tensor x = input_of(o, steps);

    const std::string weights_path = o.weights.empty() ? o.dump : o.weights;
    const TensorSource weights_source = o.weights.empty() ? dump : TensorSource::open(o.weights);
    const SourceWeights found = load_attention_weights(weights_source, block, x.values.shape()[2]);
    require_finite_weights(found.weights, weights_path);
    std::optional<std::size_t> heads = o.heads ? o.heads : infer_heads(dump, steps);
    if (!heads) heads = resolve_heads(weights_source, {x.values.shape()[2], 0, 0}, std::nullopt).heads;
    const AttentionConfig cfg = reference_config(x, found, *heads);

    std::printf("check %s: B=%zu N=%zu C=%zu h=%zu c=%zu; weights: %s (%s names%s); input: %s\n", o.dump.c_str(),
                cfg.batch, cfg.tokens, cfg.dim, cfg.heads, cfg.head_dim(), weights_path.c_str(),
                found.convention.c_str(), found.block ? (", block " + std::to_string(*found.block)).c_str() : "",
                o.input.empty() ? o.dump.c_str() : o.input.c_str());
    const Trace reference = run_attention(cfg, found.weights, x);
    const CheckReport report = compare_steps(reference, found.weights, steps);
    print_report(report);
    return report.first_divergence() ? kDivergence : 0;
}

}  // namespace

void add_file_commands(CLI::App& app, CommandAction& action) {
    // The options live as long as the callbacks that read them (CLI11 keeps the callbacks).
    auto inspect_path = std::make_shared<std::string>();
    auto inspect_json = std::make_shared<bool>(false);
    CLI::App* inspect = app.add_subcommand("inspect", "list every tensor of a torch.save file, .npy, .npz, .safetensors or folder: "
                                                      "dtype, shape, recognized role, stats, attention-map row sums");
    inspect->add_option("FILE", *inspect_path, "the file or folder")->required();
    inspect->add_flag("--json", *inspect_json, "print JSON");
    add_memory_budget_option(*inspect);
    inspect->final_callback([&action, inspect_path, inspect_json] {
        action = [inspect_path, inspect_json] { return cmd_inspect(*inspect_path, *inspect_json); };
    });

    auto o = std::make_shared<CheckOptions>();
    CLI::App* check = app.add_subcommand(
        "check", "compare your own attention intermediates with the reference, step by step, and name the first "
                 "divergence (exit 0 all match, 3 divergence, 2 unreadable)");
    check->add_option("DUMP", o->dump, "your steps (torch.save, .npz, .safetensors or a folder of .npy) under step names or "
                                       "aliases; may hold the weights and input too")
        ->required();
    check->add_option("--weights", o->weights, "attention weights (any convention inspect recognizes) if not in DUMP");
    check->add_option("--block", o->block, "the block of a whole checkpoint or a multi-block dump")
        ->check(CLI::Range(0, 1 << 20));
    check->add_option("--input", o->input, "x [B, N, C] if not in DUMP");
    check->add_option("--heads", o->heads, "number of heads h (default: from DUMP)")->check(CLI::Range(1, 1 << 20));
    add_memory_budget_option(*check);
    check->final_callback([&action, o] { action = [o] { return cmd_check(*o); }; });
}

}  // namespace attnscope
