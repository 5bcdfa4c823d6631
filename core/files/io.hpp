// File formats: .npy and .safetensors, read into float32 and written from it.
//
// Every error is a FileError whose message starts with the path and says what is wrong, e.g.
// "x.npy: dtype '>f4' is big-endian; attnscope reads little-endian f2, f4, f8": a coded Message
// (message.hpp: Msg::npy_big_endian with file and descr) where its site has one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "message.hpp"
#include "tensor.hpp"

namespace attnscope {

struct FileError : CoreError {
    using CoreError::CoreError;
};

// A read-only memory map of a whole file (empty files map to size 0). Move-only.
class MappedFile {
public:
    static MappedFile open(const std::string& path);  // throws FileError
    MappedFile() = default;
    MappedFile(MappedFile&& other) noexcept;
    MappedFile& operator=(MappedFile&& other) noexcept;
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;
    ~MappedFile();

    const std::uint8_t* data() const { return data_; }
    std::size_t size() const { return size_; }
    const std::string& path() const { return path_; }

private:
    std::string path_;
    const std::uint8_t* data_ = nullptr;
    std::size_t size_ = 0;
};

// The dtypes (as safetensors spells them) that attnscope converts to float32: F16, BF16, F32, F64.
bool is_float_dtype(const std::string& dtype);
// count little-endian values of a float dtype at src (which may be unaligned) into out, rounding
// F64 to nearest.
void decode_floats(const std::string& dtype, const std::uint8_t* src, std::size_t count, float* out);

// Writes bytes to path atomically: a temporary file in the same folder, then rename.
void write_file_atomic(const std::string& path, const std::string& bytes);

// ---- .npy -----------------------------------------------------------------------------------
// Reads little-endian f2/f4/f8 (C or Fortran order) into a row-major float32 array.
Array read_npy(const std::string& path);
// The header of a .npy file, parsed without reading the data.
struct NpyHeader {
    std::string descr;  // "<f4"
    bool fortran_order = false;
    Shape shape;
    std::size_t data_offset = 0;  // magic + version + length field + header dict
    std::size_t data_bytes = 0;   // shape x item size
};
// The bytes before the data (magic, version, length field, dict), from the first 12 bytes alone.
std::size_t npy_header_size(const std::uint8_t* data, std::size_t size, const std::string& name_for_errors);
// Parses the header; the bytes may end right after it. Refuses dtypes parse_npy cannot convert.
NpyHeader parse_npy_header(const std::uint8_t* data, std::size_t size, const std::string& name_for_errors);
Array parse_npy(const std::uint8_t* data, std::size_t size, const std::string& name_for_errors);
// Writes float32, C order, format version 1.0 (atomically).
void write_npy(const std::string& path, const Array& values);
std::string encode_npy(const Array& values);

// ---- .safetensors ---------------------------------------------------------------------------
struct SafetensorsEntry {
    std::string name;
    std::string dtype;  // as in the file: "F32", "BF16", "I64" ...
    Shape shape;
    std::uint64_t begin = 0;  // byte offsets into the data section
    std::uint64_t end = 0;
};

class SafetensorsFile {
public:
    // Maps the file and validates the whole header (lengths, offsets, overlaps, dtype sizes).
    static SafetensorsFile open(const std::string& path);

    const std::string& path() const { return file_.path(); }
    const std::vector<SafetensorsEntry>& entries() const { return entries_; }  // file order
    const SafetensorsEntry* find(const std::string& name) const;
    const std::map<std::string, std::string>& metadata() const { return metadata_; }
    // Converts F16/BF16/F32/F64 to float32; FileError for other dtypes or unknown names.
    Array load(const std::string& name) const;

private:
    MappedFile file_;
    std::size_t data_start_ = 0;
    std::vector<SafetensorsEntry> entries_;
    std::map<std::string, std::string> metadata_;
};

// Writes F32 tensors (atomically), in the given order.
void write_safetensors(const std::string& path, const std::vector<std::pair<std::string, Array>>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace attnscope
