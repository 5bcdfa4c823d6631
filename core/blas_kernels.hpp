// Which OpenBLAS kernels the process runs on.
//
// OpenBLAS 0.3.21 (Debian 12) picks its kernels when it is loaded, from the CPU model; it does not
// know recent Xeons (e.g. family 6 model 207) and falls back to "Prescott", its slowest kernels
// (sgemm about 5x slower on such a machine).
#pragma once

namespace attnscope {

// When nobody chose a core (OPENBLAS_CORETYPE unset), OpenBLAS fell back to Prescott and the CPU
// has AVX2 + FMA: start this program once more (execv of /proc/self/exe with argv) with the Haswell
// kernels. Call first thing in main(); returns when nothing needs to change or the restart failed.
// The AVX-512 "SkylakeX" kernels of 0.3.21 are not chosen: with them the golden scores-above-88
// case's context differs from PyTorch's beyond the tests' tolerance. The app and the tests both call this, so a
// test that compares the command line's output with its own run sees the same kernels.
void prefer_known_blas_kernels(char** argv);

}  // namespace attnscope
