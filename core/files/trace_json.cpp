#include "trace_json.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <stdexcept>
#include <system_error>
#include <utility>

#include "backward.hpp"
#include "beyond.hpp"
#include "io.hpp"

namespace attnscope {

namespace {

nlohmann::json number(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

nlohmann::json stats_to_json(const Stats& s) {
    return {{"min", number(s.min)}, {"max", number(s.max)}, {"mean", number(s.mean)}, {"std", number(s.std)},
            {"nan_count", s.nan_count}, {"inf_count", s.inf_count}};
}

nlohmann::json row_sums_to_json(const RowSumCheck& r) {
    return {{"step", r.step},
            {"tolerance", r.tolerance},
            {"max_error", number(r.max_error)},
            {"failing_rows", r.failing_rows},
            {"rows", r.rows},
            {"deviation_expected", r.deviation_expected},
            {"ok", r.ok()},
            {"explanation", r.explanation}};
}

}  // namespace

nlohmann::json config_to_json(const AttentionConfig& c) {
    return {{"batch", c.batch},         {"tokens", c.tokens},       {"dim", c.dim},
            {"heads", c.heads},         {"head_dim", c.head_dim()}, {"qkv_bias", c.qkv_bias},
            {"seed", c.seed},           {"training", c.training},   {"attn_drop", c.attn_drop},
            {"proj_drop", c.proj_drop}, {"scaled", c.scaled}, {"causal", c.causal},  {"valid_tokens", c.valid_tokens},
            {"path", path_name(c.path)}, {"tile", {c.tile_rows, c.tile_cols}}, {"window", c.window},
            {"shift", c.shift},         {"patch_merge", c.patch_merge}};
}

nlohmann::json trace_to_json(const Trace& trace) {
    nlohmann::json steps = nlohmann::json::array();
    for (const Step& s : trace.steps) {
        nlohmann::json operands = nlohmann::json::array();
        for (const auto& o : s.operands) operands.push_back({{"expr", o.expr}, {"shape", o.shape}});
        nlohmann::json j = {{"name", s.name},
                            {"shape", s.shape()},
                            {"code", s.code},
                            {"formula", s.formula},
                            {"op", op_name(s.op)},
                            {"inputs", s.inputs},
                            {"operands", operands},
                            {"axes", s.axes()},
                            {"strides", s.torch_strides},
                            {"contiguous", s.contiguous},
                            {"view", s.is_view},
                            {"note", s.note},
                            {"origin", s.origin == StepOrigin::Loaded ? "loaded" : "computed"},
                            {"stats", stats_to_json(s.stats)}};
        if (s.origin == StepOrigin::Loaded) j["origin_detail"] = s.origin_detail;
        if (const StepDifference* d = trace.difference(s.name))
            j["difference"] = {{"finding", d->finding}, {"diagnosis", d->diagnosis},
                               {"max_error", number(d->max_error)}, {"ok", d->ok}};
        if (const RowSumCheck* r = trace.checks.row_sum(s.name)) {
            j["row_sum_max_error"] = number(r->max_error);
            j["failing_rows"] = r->failing_rows;
        }
        steps.push_back(std::move(j));
    }
    nlohmann::json shapes = nlohmann::json::array();
    for (const auto& sc : trace.checks.shapes)
        shapes.push_back({{"step", sc.step}, {"formula", sc.formula}, {"expected", sc.expected},
                          {"actual", sc.actual}, {"ok", sc.ok}});
    nlohmann::json row_sums = nlohmann::json::array();
    for (const auto& r : trace.checks.row_sums) row_sums.push_back(row_sums_to_json(r));
    const NonFiniteCheck& nf = trace.checks.nonfinite;
    nlohmann::json nonfinite = {{"ok", nf.ok()},
                                {"first_step", nf.first_step.empty() ? nlohmann::json(nullptr) : nlohmann::json(nf.first_step)},
                                {"nan_count", nf.nan_count},
                                {"inf_count", nf.inf_count},
                                {"message", nf.message}};
    nlohmann::json j = {{"config", config_to_json(trace.config)},
                        {"steps", steps},
                        {"checks", {{"ok", trace.checks.all_ok()}, {"shapes_ok", trace.checks.shapes_ok()},
                                    {"shapes", shapes}, {"row_sums", row_sums}, {"nonfinite", nonfinite}}}};
    if (trace.gradients) {  // the backward pass: L2 norms by step and parameter
        nlohmann::json norms = nlohmann::json::object(), params = nlohmann::json::object();
        for (const GradStep& g : trace.gradients->steps) norms[g.name] = number(g.norm);
        for (const ParamGrad& p : trace.gradients->params) params["grad_" + p.name] = number(p.norm);
        j["gradients"] = {{"loss", "sum(out_drop * G)"}, {"grad_output", trace.gradients->grad_output_source},
                          {"step_norms", norms}, {"param_norms", params}};
    }
    if (trace.beyond) j["beyond"] = beyond_to_json(*trace.beyond);  // flash tiles, KV-cache tokens, windows
    return j;
}

void dump_trace(const Trace& trace, const std::string& dir) {
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec || !fs::is_directory(dir)) throw FileError(Message(Msg::dump_cannot_create, {{"file", dir}, {"reason", ec.message()}}));
    const fs::path json_path = fs::path(dir) / "trace.json";
    fs::remove(json_path, ec);
    if (ec) throw FileError(Message(Msg::dump_cannot_replace, {{"file", json_path.string()}, {"reason", ec.message()}}));
    for (const Step& s : trace.steps) write_npy((fs::path(dir) / (s.name + ".npy")).string(), s.tensor().values);
    if (trace.gradients) {  // grad_<step>.npy and grad_<param>.npy (core/engine/backward.hpp)
        for (const GradStep& g : trace.gradients->steps)
            write_npy((fs::path(dir) / (g.name + ".npy")).string(), g.tensor.values);
        for (const ParamGrad& p : trace.gradients->params)
            write_npy((fs::path(dir) / ("grad_" + p.name + ".npy")).string(), p.values);
    }
    if (const FlashRecord* f = trace.beyond ? trace.beyond->flash.get() : nullptr; f && !f->row_max.empty()) {
        // The online softmax's final m and l of every row [B, h, N]: attn = exp(scaled - m) / l.
        const Shape shape{trace.config.batch, trace.config.heads, trace.config.tokens};
        for (const auto& [name, values] : {std::pair{kFlashRowMaxFile, &f->row_max}, std::pair{kFlashRowSumFile, &f->row_sum}}) {
            Array a = make_array(shape);
            if (a.size() != values->size()) throw std::logic_error("dump_trace: flash m or l is not [B, h, N]");
            std::copy(values->begin(), values->end(), a.begin());
            write_npy((fs::path(dir) / name).string(), a);
        }
    }
    write_file_atomic(json_path.string(), trace_to_json(trace).dump(2) + "\n");
}

}  // namespace attnscope
