// Reading and writing the safetensors format (Hugging Face): an 8-byte little-endian header
// length N, N bytes of JSON  {"__metadata__": {string: string},
//                             name: {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}}
// then the raw little-endian tensor bytes, offsets relative to the end of the header.
// Spec: https://github.com/huggingface/safetensors (format section).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "autograd/tensor.h"

namespace attograd::gpt {

/// One tensor's entry in a safetensors file.
struct SafetensorsEntry {
  std::string dtype;   // "F32", "F64", "F16", "BF16", "I64", ...
  Shape shape;
  uint64_t begin = 0;  // byte offsets into the data section
  uint64_t end = 0;
};

/// A parsed safetensors file: header, metadata and the data section kept in memory.
class SafetensorsFile {
 public:
  /// Reads and validates the whole file. Throws std::runtime_error naming the path and the
  /// problem: unreadable, truncated (header or data shorter than declared), malformed JSON,
  /// offsets out of range or overlapping, a size that does not match dtype and shape.
  static SafetensorsFile read(const std::string& path);

  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const std::map<std::string, SafetensorsEntry>& entries() const { return entries_; }
  bool contains(const std::string& name) const { return entries_.count(name) != 0; }
  /// The tensor `name` converted to dtype (F32, F64, F16, BF16 -> f32/f64; I64 -> i64).
  /// Throws std::runtime_error for a missing name or an unsupported conversion.
  Tensor tensor(const std::string& name, DType dtype) const;
  /// The raw values of an F64 tensor (optimizer moments).
  std::vector<double> doubles(const std::string& name) const;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::map<std::string, std::string> metadata_;
  std::map<std::string, SafetensorsEntry> entries_;
  std::vector<char> data_;
};

/// Tensors and metadata to write.
struct SafetensorsWriter {
  std::map<std::string, std::string> metadata;
  /// Adds a floating or i64 tensor (any layout; written contiguous, in its own dtype).
  void add(const std::string& name, const Tensor& t);
  /// Writes atomically: a temporary file in the same directory, flushed and fsync'ed, then
  /// renamed over `path`, so a crash never leaves a half-written checkpoint. Throws
  /// std::runtime_error naming the path on any I/O failure (the old file is then intact).
  void write(const std::string& path) const;

 private:
  struct Item {
    std::string dtype;
    Shape shape;
    std::vector<char> bytes;
  };
  std::map<std::string, Item> items_;
};

}  // namespace attograd::gpt
