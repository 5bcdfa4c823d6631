// Fuzz target: the .npy reader, on bytes in memory and through TensorSource on a mapped file.
// The only acceptable outcomes are an array or a FileError naming the file.
#include "fuzz_util.hpp"
#include "io.hpp"
#include "tensor_source.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace attnscope;
    fuzz::init_budget();
    try {
        const Array a = parse_npy(data, size, "fuzz.npy");
        (void)a;
    } catch (const FileError&) {
    }
    try {
        const TensorSource source = TensorSource::open(fuzz::write_temp(data, size, ".npy"));
        for (const TensorInfo& t : source.tensors())
            if (t.problem.empty()) (void)source.load(t.name);
    } catch (const FileError&) {
    }
    return 0;
}
