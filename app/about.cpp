#include "about.hpp"

#include <cblas.h>

#include <filesystem>
#include <system_error>

#include "vmath.hpp"

namespace attnscope {

namespace fs = std::filesystem;

BuildInfo build_info() {
    BuildInfo info;
    info.version = ATTNSCOPE_VERSION;
    info.openblas_config = openblas_get_config();
    info.openblas_kernels = openblas_get_corename();
    info.avx512 = vmath::avx512();
    return info;
}

std::string version_text() {
    const BuildInfo info = build_info();
    return "attnscope " + info.version + "\n" + info.openblas_config + "\nOpenBLAS kernels: " + info.openblas_kernels +
           "\nAVX-512 kernels: " + (info.avx512 ? "used" : "not used (no AVX-512F on this CPU, or ATTNSCOPE_NO_AVX512 set)");
}

std::string data_dir() {
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (ec) return ATTNSCOPE_DATA_FROM_BIN;  // relative to the working directory: the best left
    return (exe.parent_path() / ATTNSCOPE_DATA_FROM_BIN).lexically_normal().string();
}

std::string demo_model_path() { return data_dir() + "/models/demo_vit.safetensors"; }
std::string demo_image_path() { return data_dir() + "/samples/06_triangle.png"; }
std::string where_model_path() { return data_dir() + "/models/where_vit.safetensors"; }

bool demo_model_installed() {
    static const bool installed = fs::is_regular_file(demo_model_path());
    return installed;
}

bool where_model_installed() {
    static const bool installed = fs::is_regular_file(where_model_path());
    return installed;
}

}  // namespace attnscope
