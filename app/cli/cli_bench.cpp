// `attnscope bench` extras: the whole ViT-B/16, OpenBLAS's sgemm rate, the memory a
// recorded run costs, and opening a file. Each prints one JSON line for bench/run_all.sh.
//
//   bench --vit-b [--repeat R]      ViT-B/16 on one 224x224 image, random weights (timm names)
//   bench --vit-model FILE [--repeat R]  a user's ViT checkpoint: load time, read-once time, forward
//   bench --sgemm                   OpenBLAS sgemm GFLOP/s, 1 thread and all threads
//   bench --open FILE [--repeat R]  TensorSource::open + listing the tensors (no values read)
#include "cli_bench.hpp"

#include <cblas.h>
#include <fcntl.h>
#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config.hpp"
#include "io.hpp"
#include "memory_budget.hpp"
#include "pipeline.hpp"
#include "random.hpp"
#include "run.hpp"
#include "tensor_source.hpp"
#include "vit.hpp"

namespace attnscope {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
    return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

// A line of /proc/self/status in bytes ("VmRSS", "VmHWM"); 0 when it cannot be read.
std::uint64_t status_bytes(const std::string& key) {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line))
        if (line.compare(0, key.size() + 1, key + ":") == 0) return std::stoull(line.substr(key.size() + 1)) * 1024;
    return 0;
}

// Resets VmHWM to the current RSS (Linux 4.0+), so that the next peak is this run's.
void reset_peak_rss() {
    std::ofstream("/proc/self/clear_refs") << "5";
}

std::uint64_t step_bytes(const Steps& steps) {
    std::uint64_t bytes = 0;
    for (const auto& s : steps) bytes += element_count(s.shape()) * sizeof(float);  // views not gathered
    return bytes;
}

// The bytes of every tensor a user can look at in a recorded attention run.
std::uint64_t visible_bytes(const Trace& t) {
    std::uint64_t bytes = step_bytes(t.steps);
    for (const auto& r : t.checks.row_sums) bytes += r.sums.values.size() * sizeof(float);
    return bytes;
}

std::uint64_t visible_bytes(const VitTrace& t) {
    std::uint64_t bytes = step_bytes(t.embed) + step_bytes(t.head);
    for (const auto& b : t.blocks) bytes += step_bytes(b.steps) + visible_bytes(b.attention);
    return bytes;
}

// Times `run` (warm-up first), then measures the memory of one more run while its result is held:
// peak RSS growth over the RSS before it, against the bytes of what it recorded.
template <typename Run>
nlohmann::json time_and_measure(std::size_t repeat, Run run) {
    for (int i = 0; i < 2; ++i) run();  // warm-up: page faults, BLAS buffers, threads
    std::vector<double> ms;
    for (std::size_t i = 0; i < repeat; ++i) {
        const auto start = Clock::now();
        run();
        ms.push_back(ms_since(start));
    }
    malloc_trim(0);
    const std::uint64_t before = status_bytes("VmRSS");
    reset_peak_rss();
    const auto kept = run();
    const std::uint64_t peak = status_bytes("VmHWM"), visible = visible_bytes(kept);
    std::sort(ms.begin(), ms.end());
    return {{"median_ms", median(ms)},
            {"min_ms", ms.front()},
            {"max_ms", ms.back()},
            {"repeat", repeat},
            {"visible_bytes", visible},
            {"rss_growth_bytes", peak > before ? peak - before : 0},
            {"memory_ratio", visible ? static_cast<double>(peak > before ? peak - before : 0) / visible : 0.0},
            {"peak_rss_bytes", peak},
            {"blas_threads", openblas_get_num_threads()}};
}

}  // namespace

void keep_freed_memory() {
    // glibc returns large blocks to the kernel (mmap'd chunks, a trimmed heap top); the next run then
    // page-faults and the kernel zeroes every page again (a third of a recorded run's CPU time at
    // (8,197,768,12)). Large blocks come from the heap instead, one arena for every thread, and up to
    // 1 GiB of freed heap stays with the process for the next run.
    mallopt(M_MMAP_MAX, 0);
    mallopt(M_ARENA_MAX, 1);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
    mallopt(M_TOP_PAD, 64 << 20);
}

nlohmann::json bench_attention(const AttentionConfig& cfg, std::size_t repeat) {
    const AttentionWeights weights = default_weights(cfg);
    const auto input = std::make_shared<const Tensor>(default_input(cfg));  // the run records it without a copy
    // Where the time goes: wall time from one recorded step to the next (the op, its stats and the
    // recording), and from the last step to the end (the checks), per timed run.
    std::vector<std::string> names;
    std::vector<std::vector<double>> step_ms;
    RunHooks hooks;
    Clock::time_point last;
    std::vector<double> this_run;
    hooks.progress = [&](std::size_t, std::size_t) {
        const auto now = Clock::now();
        this_run.push_back(std::chrono::duration<double, std::milli>(now - last).count());
        last = now;
    };
    nlohmann::json j = time_and_measure(repeat, [&] {
        this_run.clear();
        last = Clock::now();
        Trace t = run_attention(cfg, weights, input, hooks);
        this_run.push_back(ms_since(last));
        if (names.empty()) {
            for (const Step& s : t.steps) names.push_back(s.name);
            names.push_back("checks");
        }
        if (step_ms.size() < this_run.size()) step_ms.resize(this_run.size());
        for (std::size_t i = 0; i < this_run.size(); ++i) step_ms[i].push_back(this_run[i]);
        return t;
    });
    nlohmann::json steps = nlohmann::json::object();
    for (std::size_t i = 0; i < names.size() && i < step_ms.size(); ++i) steps[names[i]] = median(step_ms[i]);
    j["step_ms"] = steps;
    const double B = cfg.batch, N = cfg.tokens, C = cfg.dim;
    const double gflop = (2.0 * B * N * C * 4.0 * C + 4.0 * B * N * N * C) * 1e-9;  // qkv + proj, q@k^T + attn@v
    j["gflop"] = gflop;
    j["gflops_per_s"] = gflop / (j["median_ms"].get<double>() * 1e-3);
    return j;
}

nlohmann::json bench_vit_b(std::size_t repeat) {
    VitConfig cfg;  // ViT-B/16 at 224: timm's vit_base_patch16_224
    cfg.image_size = 224;
    cfg.patch_size = 16;
    cfg.dim = 768;
    cfg.depth = 12;
    cfg.heads = 12;
    cfg.mlp_hidden = 3072;
    cfg.classes = 1000;
    cfg.qkv_bias = true;
    const VitModel model = fresh_vit_model(cfg, 0);
    Tensor pixels{make_array({1, 3, 224, 224}), {"B", "3", "H", "W"}};
    Rng rng(0, 1);
    for (float& v : pixels.values) v = rng.normal();
    const std::uint64_t model_rss = status_bytes("VmRSS");
    nlohmann::json j = time_and_measure(repeat, [&] { return run_vit(model, pixels); });
    const double N = cfg.tokens(), D = cfg.dim, M = cfg.mlp_hidden, P = cfg.patches();
    // per block: qkv + proj + fc1 + fc2, q@k^T + attn@v; the patch conv; the head
    const double gflop =
        (cfg.depth * (2.0 * N * D * 4.0 * D + 4.0 * N * N * D + 4.0 * N * D * M) + 2.0 * P * D * 768 + 2.0 * D * 1000) * 1e-9;
    j["gflop"] = gflop;
    j["gflops_per_s"] = gflop / (j["median_ms"].get<double>() * 1e-3);
    j["rss_with_model_bytes"] = model_rss;
    return j;
}

namespace {

// Reads the whole file with pread(2) into one new buffer of its size: what reading it into memory
// once costs (the page cache is warm: the file was just loaded).
double read_once_ms(const std::string& path) {
    const auto start = Clock::now();
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw FileError(path + ": cannot open it to time a read");
    const off_t size = ::lseek(fd, 0, SEEK_END);
    const std::size_t bytes = size > 0 ? static_cast<std::size_t>(size) : 0;
    const std::unique_ptr<char[]> buffer(new char[bytes ? bytes : 1]);  // not zeroed: read(2) writes each byte
    for (std::size_t done = 0; done < bytes;) {
        const ssize_t n = ::pread(fd, buffer.get() + done, bytes - done, static_cast<off_t>(done));
        if (n <= 0) break;
        done += static_cast<std::size_t>(n);
    }
    ::close(fd);
    return ms_since(start);
}

}  // namespace

nlohmann::json bench_vit_model(const std::string& path, std::size_t repeat) {
    // The load first, in a process that has allocated nothing yet, as `attnscope vit` does; then one
    // read of the file into new memory while the model is still held (neither reuses the other's pages).
    const auto start = Clock::now();
    const VitModel model = load_vit_model(path, std::nullopt, memory_budget());
    const double load_ms = ms_since(start);
    const double read_ms = read_once_ms(path);
    const VitConfig& cfg = model.config;
    Tensor pixels{make_array({1, 3, cfg.image_size, cfg.image_size}), {"B", "3", "H", "W"}};
    Rng rng(0, 1);
    for (float& v : pixels.values) v = rng.normal();
    nlohmann::json j = time_and_measure(repeat, [&] { return run_vit(model, pixels); });
    j["family"] = vit_family_name(cfg.family);
    j["load_ms"] = load_ms;
    j["read_once_ms"] = read_ms;
    j["file"] = path;
    return j;
}

nlohmann::json bench_sgemm() {
    // The qkv product of a ViT-B layer (197 x 2304 x 768) and a square 1024^3.
    nlohmann::json j = nlohmann::json::object();
    const int saved = openblas_get_num_threads();
    for (const auto& [name, m, n, k] : {std::tuple<const char*, int, int, int>{"qkv_197x2304x768", 197, 2304, 768},
                                        {"square_1024", 1024, 1024, 1024}}) {
        std::vector<float> a(static_cast<std::size_t>(m) * k, 0.5f), b(static_cast<std::size_t>(n) * k, 0.25f),
            c(static_cast<std::size_t>(m) * n);
        for (int threads : {1, saved}) {
            openblas_set_num_threads(threads);
            std::vector<double> ms;
            for (int i = 0; i < 25; ++i) {
                const auto start = Clock::now();
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, a.data(), k, b.data(), k, 0.0f,
                            c.data(), n);
                if (i >= 3) ms.push_back(ms_since(start));
            }
            j[name][std::to_string(threads) + "_threads_gflops_per_s"] = 2.0 * m * n * k * 1e-9 / (median(ms) * 1e-3);
        }
    }
    openblas_set_num_threads(saved);
    j["blas_threads"] = saved;
    j["openblas"] = openblas_get_config();
    j["openblas_core"] = openblas_get_corename();
    return j;
}

nlohmann::json bench_open(const std::string& path, std::size_t repeat) {
    std::vector<double> ms;
    std::size_t count = 0;
    for (std::size_t i = 0; i < repeat; ++i) {
        const auto start = Clock::now();
        const TensorSource source = TensorSource::open(path);
        count = source.tensors().size();
        ms.push_back(ms_since(start));
    }
    std::sort(ms.begin(), ms.end());
    return {{"median_ms", median(ms)}, {"max_ms", ms.back()}, {"tensors", count}, {"repeat", repeat}};
}

}  // namespace attnscope
