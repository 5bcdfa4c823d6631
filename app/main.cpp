// attnscope: step through multi-head attention one tensor at a time.
#include <cblas.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "cli.hpp"

namespace {

// OpenBLAS 0.3.21 (Debian 12) picks its kernels when it is loaded, from the CPU model; it does not
// know recent Xeons (e.g. family 6 model 207) and falls back to "Prescott", its slowest kernels
// (sgemm about 5x slower here). When nobody chose a core (OPENBLAS_CORETYPE unset) and the CPU has
// AVX2 + FMA, start once more with the Haswell kernels: the core the test suite runs on. (The
// AVX-512 "SkylakeX" kernels of this version put 7 values of the scores > 88 golden case outside
// the 1e-5 tolerance, so they are not chosen for the user.)
void prefer_known_blas_kernels(char** argv) {
    if (std::getenv("OPENBLAS_CORETYPE") || std::getenv("ATTNSCOPE_BLAS_CHOSEN")) return;
    if (std::strcmp(openblas_get_corename(), "Prescott") != 0) return;
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) return;
    setenv("OPENBLAS_CORETYPE", "Haswell", 1);
    setenv("ATTNSCOPE_BLAS_CHOSEN", "1", 1);  // never loop
    execv("/proc/self/exe", argv);  // returns only on failure: go on with the slow kernels
}

}  // namespace

int main(int argc, char** argv) {
    prefer_known_blas_kernels(argv);
    return attnscope::run_cli(argc, argv);
}
