// Which OpenBLAS kernels the process runs on.
//
// OpenBLAS 0.3.21 (Debian 12) picks its kernels when it is loaded, from the CPU model; it does not
// know recent Xeons (e.g. family 6 model 207) and falls back to "Prescott", its slowest kernels
// (sgemm about 5x slower than its AVX-512 kernels on such a machine).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace attnscope {

// When nobody chose a core (OPENBLAS_CORETYPE unset) and OpenBLAS fell back to Prescott, start this
// program once more (execv of /proc/self/exe with argv) with the kernels OpenBLAS would have picked
// had it known the CPU: "SkylakeX" on a CPU with AVX-512 (F, BW, DQ, VL), else "Haswell" on one
// with AVX2 + FMA. Call first thing in main(); returns when nothing needs to change or the restart
// failed. The app and the tests both call this, so a test that compares the command line's output
// with its own run sees the same kernels.
void prefer_known_blas_kernels(char** argv);

// The desktop app computes in bursts between frames, on cores it shares with the GL rasterizer's
// threads. Idle worker threads that spin (libgomp's default; OpenBLAS's threads call sched_yield for
// 2^28 cycles before they sleep) take those cores from the rasterizer and the app thread, and the
// first frame comes later (README, Benchmark). Both libraries read their settings when they load, so this sets
// OMP_WAIT_POLICY=passive and OPENBLAS_THREAD_TIMEOUT=4 (2^4 cycles), each unless the user set it,
// and starts this program once more (execv of /proc/self/exe with argv); returns when nothing
// needs to change or the restart failed. The command line's commands keep spinning workers.
void prefer_sleeping_workers(char** argv);

// The settings prefer_sleeping_workers() adds to an environment read by `get`: none once it ran.
std::vector<std::pair<std::string, std::string>> sleeping_worker_settings(const char* (*get)(const char*));

// The kernels OpenBLAS runs on, e.g. "SkylakeX" (openblas_get_corename()).
const char* blas_kernels_name();

}  // namespace attnscope
