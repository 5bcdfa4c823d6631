// Which OpenBLAS kernels the process runs on.
//
// OpenBLAS 0.3.21 (Debian 12) picks its kernels when it is loaded, from the CPU model; it does not
// know recent Xeons (e.g. family 6 model 207) and falls back to "Prescott", its slowest kernels
// (sgemm about 5x slower than its AVX-512 kernels on such a machine).
#pragma once

namespace attnscope {

// When nobody chose a core (OPENBLAS_CORETYPE unset) and OpenBLAS fell back to Prescott, start this
// program once more (execv of /proc/self/exe with argv) with the kernels OpenBLAS would have picked
// had it known the CPU: "SkylakeX" on a CPU with AVX-512 (F, BW, DQ, VL), else "Haswell" on one
// with AVX2 + FMA. Call first thing in main(); returns when nothing needs to change or the restart
// failed. The app and the tests both call this, so a test that compares the command line's output
// with its own run sees the same kernels.
void prefer_known_blas_kernels(char** argv);

// The kernels OpenBLAS runs on, e.g. "SkylakeX" (openblas_get_corename()).
const char* blas_kernels_name();

}  // namespace attnscope
