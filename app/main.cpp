// attnscope: step through multi-head attention one tensor at a time.
#include "blas_kernels.hpp"
#include "cli.hpp"

int main(int argc, char** argv) {
    attnscope::prefer_known_blas_kernels(argv);  // OpenBLAS's fastest safe kernels on this CPU
    return attnscope::run_cli(argc, argv);
}
