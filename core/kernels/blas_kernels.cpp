#include "blas_kernels.hpp"

#include <cblas.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace attnscope {

namespace {

// The kernels OpenBLAS 0.3.21's own detection gives a CPU it knows with these features.
const char* kernels_for_this_cpu() {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("avx512vl"))
        return "SkylakeX";
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
    return nullptr;
}

}  // namespace

void prefer_known_blas_kernels(char** argv) {
    if (std::getenv("OPENBLAS_CORETYPE") || std::getenv("ATTNSCOPE_BLAS_CHOSEN")) return;
    if (std::strcmp(openblas_get_corename(), "Prescott") != 0) return;
    const char* kernels = kernels_for_this_cpu();
    if (!kernels) return;
    setenv("OPENBLAS_CORETYPE", kernels, 1);
    setenv("ATTNSCOPE_BLAS_CHOSEN", "1", 1);  // never loop
    execv("/proc/self/exe", argv);            // returns only on failure: go on with the slow kernels
}

std::vector<std::pair<std::string, std::string>> sleeping_worker_settings(const char* (*get)(const char*)) {
    if (get("ATTNSCOPE_WORKERS_CHOSEN")) return {};
    std::vector<std::pair<std::string, std::string>> out;
    if (!get("OMP_WAIT_POLICY")) out.emplace_back("OMP_WAIT_POLICY", "passive");
    if (!get("OPENBLAS_THREAD_TIMEOUT")) out.emplace_back("OPENBLAS_THREAD_TIMEOUT", "4");
    return out;
}

void prefer_sleeping_workers(char** argv) {
    const auto settings = sleeping_worker_settings([](const char* name) -> const char* { return std::getenv(name); });
    if (settings.empty()) return;
    for (const auto& [name, value] : settings) setenv(name.c_str(), value.c_str(), 1);
    setenv("ATTNSCOPE_WORKERS_CHOSEN", "1", 1);  // never loop
    execv("/proc/self/exe", argv);               // returns only on failure: go on with spinning workers
}

const char* blas_kernels_name() { return openblas_get_corename(); }

}  // namespace attnscope
