// The ops spread their loops over the cores with OpenMP (libgomp). Inside such a loop every sgemm
// runs on its calling thread: OpenBLAS's own pthread pool would otherwise compete with OpenMP's
// threads for the same cores. SerialBlas sets OpenBLAS to one thread for its scope.
#pragma once

#include <cblas.h>

namespace attnscope {

class SerialBlas {
public:
    SerialBlas() : saved_(openblas_get_num_threads()) {
        if (saved_ != 1) openblas_set_num_threads(1);
    }
    ~SerialBlas() {
        if (saved_ != 1) openblas_set_num_threads(saved_);
    }
    SerialBlas(const SerialBlas&) = delete;
    SerialBlas& operator=(const SerialBlas&) = delete;

private:
    int saved_;
};

}  // namespace attnscope
