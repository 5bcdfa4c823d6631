// Fuzz target: the checkpoint and activation name mapping (recognize_role), which must answer any
// name and shape. Input: one byte of rank (mod 9), one byte per axis, then the name.
#include <algorithm>
#include <string>
#include <vector>

#include "fuzz_util.hpp"
#include "roles.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace attnscope;
    if (size == 0) return 0;
    const std::size_t rank = std::min<std::size_t>(data[0] % 9, size - 1);
    attnscope::Shape shape;
    for (std::size_t i = 0; i < rank; ++i) shape.push_back(data[1 + i]);
    const std::string name(reinterpret_cast<const char*>(data) + 1 + rank, size - 1 - rank);
    const Role role = recognize_role(name, shape);
    (void)describe_role(role);
    (void)blocks_of({role, role});
    (void)in_block(role, role.block);
    return 0;
}
