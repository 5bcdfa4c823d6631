// Fuzz target: the .npz reader (libzip over the mapped bytes; stored and deflated members).
#include "fuzz_util.hpp"
#include "io.hpp"
#include "tensor_source.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace attnscope;
    fuzz::init_budget();
    try {
        const TensorSource source = TensorSource::open(fuzz::write_temp(data, size, ".npz"));
        for (const TensorInfo& t : source.tensors()) {
            try {
                (void)source.load(t.name);
            } catch (const FileError&) {
            }
        }
    } catch (const FileError&) {
    }
    return 0;
}
