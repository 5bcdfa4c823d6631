#include "tensor.hpp"

#include <cstdint>
#include <limits>
#include <sstream>

#include <sys/mman.h>
#include <unistd.h>

namespace attnscope {

Shape shape_of(const Array& a) { return Shape(a.shape().begin(), a.shape().end()); }

namespace {
template <typename Seq>
std::string join_bracketed(const Seq& items) {
    std::ostringstream out;
    out << '[';
    for (std::size_t i = 0; i < items.size(); ++i) out << (i ? ", " : "") << items[i];
    out << ']';
    return out.str();
}
}  // namespace

std::string format_shape(const Shape& shape) { return join_bracketed(shape); }
std::string format_strides(const Strides& strides) { return join_bracketed(strides); }
std::string format_axes(const Axes& axes) { return join_bracketed(axes); }

std::size_t checked_mul(std::size_t a, std::size_t b) {
    if (a != 0 && b > std::numeric_limits<std::size_t>::max() / a)
        throw std::overflow_error("size overflow: " + std::to_string(a) + " * " + std::to_string(b));
    return a * b;
}

std::size_t element_count(const Shape& shape) {
    std::size_t n = 1;
    for (std::size_t d : shape) n = checked_mul(n, d);
    return n;
}

Strides contiguous_strides(const Shape& shape) {
    Strides strides(shape.size());
    std::ptrdiff_t s = 1;
    for (std::size_t i = shape.size(); i-- > 0;) {
        strides[i] = s;
        s *= static_cast<std::ptrdiff_t>(shape[i] ? shape[i] : 1);
    }
    return strides;
}

Array make_array(const Shape& shape) {
    element_count(shape);  // throws on overflow before xtensor multiplies silently
    return Array::from_shape(shape);
}

void prefault_for_writing(void* p, std::size_t bytes) {
#ifdef MADV_POPULATE_WRITE
    if (bytes < (std::size_t(1) << 20)) return;
    static const std::uintptr_t page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
    const std::uintptr_t begin = (reinterpret_cast<std::uintptr_t>(p) + page - 1) / page * page;
    const std::uintptr_t end = (reinterpret_cast<std::uintptr_t>(p) + bytes) / page * page;
    if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_WRITE);  // a hint: errors ignored
#else
    (void)p;
    (void)bytes;
#endif
}

}  // namespace attnscope
