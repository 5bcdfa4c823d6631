// What the program says about itself (attnscope --version, Help > About) and where its installed
// data is. Window-free: the command line and the app both use it.
#pragma once

#include <string>

namespace attnscope {

struct BuildInfo {
    std::string version;          // CMake's project(VERSION), e.g. "0.1.0"
    std::string openblas_config;  // openblas_get_config(), e.g. "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY ..."
    std::string openblas_kernels; // openblas_get_corename(), e.g. "SkylakeX"
    bool avx512 = false;          // attnscope's own AVX-512 kernels run (core/kernels/vmath.hpp)
};

BuildInfo build_info();

// `attnscope --version`: "attnscope 0.1.0" on the first line, then the OpenBLAS build, its kernels
// and whether the AVX-512 kernels run (no newline at the end).
std::string version_text();

// The installed data (models/demo_vit.safetensors, samples/*.png): <the executable's folder>/
// ATTNSCOPE_DATA_FROM_BIN, e.g. /usr/bin/../share/attnscope, so a copied or relocated install finds
// its own. The build tree has the same layout (build/share/attnscope links to assets/).
std::string data_dir();

// The demo ViT and the picture --demo-vit opens, under data_dir().
std::string demo_model_path();
std::string demo_image_path();
// The demo ViT fine-tuned to answer where the red shape is (tools/train_where_vit.py): the model
// of the position experiment whose answer needs its position embeddings.
std::string where_model_path();
// Whether those files are there, looked up once (the panels ask every frame).
bool demo_model_installed();
bool where_model_installed();

}  // namespace attnscope
