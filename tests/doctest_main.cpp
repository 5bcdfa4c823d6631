// The tests' main: the same OpenBLAS kernels as the app (core/kernels/blas_kernels.hpp), then doctest.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include "blas_kernels.hpp"

int main(int argc, char** argv) {
    attnscope::prefer_known_blas_kernels(argv);
    return doctest::Context(argc, argv).run();
}
