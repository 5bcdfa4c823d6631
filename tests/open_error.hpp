// The error a file gets when it is opened as a tensor source, for the tests of the readers.
#pragma once

#include <string>

#include "io.hpp"
#include "tensor_source.hpp"

namespace attnscope::testing {

// TensorSource::open's one-line FileError for `path`, or "" when the file opens.
inline std::string open_error(const std::string& path) {
    try {
        TensorSource::open(path);
    } catch (const FileError& e) {
        return e.what();
    }
    return "";
}

}  // namespace attnscope::testing
