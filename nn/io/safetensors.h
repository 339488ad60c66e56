// Reading and writing the safetensors format (Hugging Face): an 8-byte little-endian header
// length N, N bytes of JSON  {"__metadata__": {string: string},
//                             name: {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}}
// then the raw little-endian tensor bytes, offsets relative to the end of the header.
// Spec: https://github.com/huggingface/safetensors (format section).
//
// Memory: neither side holds a second copy of the tensors. The reader validates the header,
// then maps the file read-only and converts each tensor straight from the mapping into its
// destination, handing the file's pages back to the page cache once they are converted (so
// the process holds the destination, not a mapped copy too). The writer keeps handles to the
// tensors and streams their bytes into the file (a non-contiguous view through a buffer of a
// few MB), so saving a model with its optimizer state costs a few MB beyond the tensors.
//
// Strictness (nothing is trusted from a file): the header is at most 100,000,000 bytes (the
// reference implementation's limit), has no duplicate keys and nests at most kMaxJsonDepth
// levels (see strict_json.h); metadata values are strings, as the format specifies; shapes are
// non-negative integers below 2^63 whose byte size (numel * element size) does not overflow and
// equals the entry's data_offsets; and the entries, sorted by offset, tile the data section exactly
// from 0 to its end, with no gap, no overlap and nothing after the last tensor.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "autograd/tensor.h"

namespace attograd::nn {

/// One tensor's entry in a safetensors file.
struct SafetensorsEntry {
  std::string dtype;  // "F32", "F64", "F16", "BF16", "I64", ...
  Shape shape;
  uint64_t begin = 0;  // byte offsets into the data section
  uint64_t end = 0;
};

/// True when a stored dtype converts to `to` (what SafetensorsFile::tensor and read_into
/// accept): F32, F64, F16 and BF16 to f32 or f64; I64 to i64.
bool safetensors_converts(const std::string& stored_dtype, DType to);

/// A validated safetensors file, mapped read-only. Move-only: the mapping lives as long as
/// the object and is unmapped by its destructor. (Like every mmap reader, a file truncated by
/// another process while it is mapped makes later reads fault; checkpoints are replaced by
/// rename, which leaves a mapped old file intact.)
class SafetensorsFile {
 public:
  /// Validates the header and maps the file. Throws std::runtime_error naming the path and
  /// the problem: missing, not a regular file, unreadable, truncated (header or data shorter
  /// than declared), a header over 100,000,000 bytes, malformed JSON, a duplicate key, nesting
  /// deeper than 32 levels, a metadata value that is not a string, an unknown dtype, a shape entry
  /// that is not a non-negative integer below 2^63, a byte size that overflows or differs from the
  /// entry's data_offsets, offsets out of range, and entries that overlap, leave a gap or leave
  /// bytes after the last tensor (naming the tensors and offsets involved).
  static SafetensorsFile read(const std::string& path);

  SafetensorsFile(SafetensorsFile&& other) noexcept;
  SafetensorsFile& operator=(SafetensorsFile&& other) noexcept;
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;
  ~SafetensorsFile();

  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const std::map<std::string, SafetensorsEntry>& entries() const { return entries_; }
  bool contains(const std::string& name) const { return entries_.count(name) != 0; }
  /// The tensor `name` converted to dtype (F32, F64, F16, BF16 -> f32/f64; I64 -> i64) in a
  /// new contiguous tensor. Throws std::runtime_error for a missing name or an unsupported
  /// conversion.
  Tensor tensor(const std::string& name, DType dtype) const;
  /// Converts the tensor `name` straight into dst, which has its shape and is contiguous or
  /// a 2-D view with any strides (e.g. transpose(weight, 0, 1) to store a transposed
  /// weight): no full-size temporary, at most a few MB of buffer. Throws std::runtime_error
  /// for a missing name, a shape mismatch (naming both shapes) or an unsupported conversion,
  /// std::invalid_argument for a destination of another layout; dst is then unchanged.
  void read_into(const std::string& name, const Tensor& dst) const;
  /// The raw values of an F64 tensor (reference values, learning rates). Throws
  /// std::runtime_error for a missing name or another dtype.
  std::vector<double> doubles(const std::string& name) const;
  /// The stored bytes of tensor `name` (little-endian, its stored dtype), a view into the
  /// mapping valid while this object lives: to compare two tensors without converting them.
  /// Throws std::runtime_error for a missing name.
  std::string_view bytes(const std::string& name) const;
  /// Refuses a tensor holding NaN or an infinity (F32, F64, F16, BF16, read from its stored
  /// bits; integer tensors have none): a loaded weight or moment that is not finite would turn
  /// the first step's loss into NaN, to be blamed on the learning rate, or show only when its
  /// row is first used. Throws std::runtime_error naming the path, the tensor, how many values
  /// and the first one's index, and `what_to_do`; also for a missing name.
  void require_finite(const std::string& name, const std::string& what_to_do) const;
  const std::string& path() const { return path_; }

 private:
  SafetensorsFile() = default;
  // The entry `name`, checked to convert to dtype; throws std::runtime_error otherwise.
  const SafetensorsEntry& entry(const std::string& name, DType dtype) const;
  std::string path_;
  std::map<std::string, std::string> metadata_;
  std::map<std::string, SafetensorsEntry> entries_;
  void* map_ = nullptr;  // the whole file, PROT_READ
  size_t map_size_ = 0;
  const char* data_ = nullptr;  // the data section, inside the mapping
};

/// Tensors and metadata to write. add() keeps a handle to each tensor (no copy) and write()
/// reads them, so a tensor must not change between its add() and the write().
struct SafetensorsWriter {
  std::map<std::string, std::string> metadata;
  /// Adds a floating or i64 tensor (any layout: written contiguous, in its own dtype),
  /// replacing an earlier one of the same name. Throws std::invalid_argument for an undefined
  /// tensor.
  void add(const std::string& name, const Tensor& t);
  /// Writes atomically and durably: the header, then every tensor's bytes streamed into a
  /// temporary file created (mkstemp) beside `path`, fsync'ed, renamed over `path`, and the
  /// directory fsync'ed, so a crash leaves either the old file or the new one. Contiguous
  /// tensors are written from their own memory, others through a buffer of a few MB. Throws
  /// std::runtime_error naming the path and the failed step on any I/O error (a full disk
  /// included); the temporary is then removed and the old file left intact. (Should only the
  /// final directory fsync fail, the new file is already in place, and the error says so.)
  void write(const std::string& path) const;

 private:
  std::map<std::string, Tensor> tensors_;
};

}  // namespace attograd::nn
