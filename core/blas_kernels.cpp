#include "blas_kernels.hpp"

#include <cblas.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace attnscope {

void prefer_known_blas_kernels(char** argv) {
    if (std::getenv("OPENBLAS_CORETYPE") || std::getenv("ATTNSCOPE_BLAS_CHOSEN")) return;
    if (std::strcmp(openblas_get_corename(), "Prescott") != 0) return;
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) return;
    setenv("OPENBLAS_CORETYPE", "Haswell", 1);
    setenv("ATTNSCOPE_BLAS_CHOSEN", "1", 1);  // never loop
    execv("/proc/self/exe", argv);            // returns only on failure: go on with the slow kernels
}

}  // namespace attnscope
