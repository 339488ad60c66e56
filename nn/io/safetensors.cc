#include "nn/io/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <utility>
#include <vector>

#include "autograd/engine.h"
#include "autograd/ops.h"
#include "nn/io/atomic_file.h"
#include "nn/io/strict_json.h"
#include "nn/io/utf8.h"

namespace attograd::nn {

namespace {

// The end of every "truncated" message: what cut it short, and the fix. (attograd's own writers
// rename a complete file into place, so a file of theirs is cut short only by a copy.)
constexpr const char* kCutShort =
    " (an interrupted download or copy?); download or copy the file again";

// The reference implementation's limit; also bounds what parsing the header can allocate.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;
// Non-contiguous tensors go through a buffer of at most this many bytes (or one row).
constexpr int64_t kBlockBytes = 4 << 20;

// The stored dtypes a tensor can be converted from, decoded once per tensor (never per element).
enum class Stored { f32, f64, f16, bf16, i64, other };

Stored stored_kind(const std::string& dtype) {
  if (dtype == "F32") return Stored::f32;
  if (dtype == "F64") return Stored::f64;
  if (dtype == "F16") return Stored::f16;
  if (dtype == "BF16") return Stored::bf16;
  if (dtype == "I64") return Stored::i64;
  return Stored::other;
}

size_t element_size(const std::string& dtype) {
  if (dtype == "F64" || dtype == "I64") return 8;
  if (dtype == "F32" || dtype == "I32") return 4;
  if (dtype == "F16" || dtype == "BF16" || dtype == "I16") return 2;
  if (dtype == "U8" || dtype == "I8" || dtype == "BOOL") return 1;
  return 0;
}

// The safetensors name of a dtype: attograd's in capitals (f32 -> F32, i64 -> I64).
std::string stored_name(DType dtype) {
  std::string name = dtype_name(dtype);
  for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return name;
}

// IEEE half to float (no dependency on _Float16 support).
float half_to_float(uint16_t h) {
  const uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      int e = -1;
      uint32_t m = mant;
      do {
        ++e;
        m <<= 1;
      } while ((m & 0x400u) == 0);
      bits = sign | static_cast<uint32_t>(127 - 15 - e) << 23 | (m & 0x3ffu) << 13;
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | mant << 13;
  } else {
    bits = sign | (exp + 127 - 15) << 23 | mant << 13;
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

float bf16_to_float(uint16_t h) {
  const uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// out[i] = value(raw i) for n raw values of type Raw at src, which need not be aligned.
template <typename Raw, typename T, typename F>
void decode(const char* src, T* out, int64_t n, F value) {
  for (int64_t i = 0; i < n; ++i) {
    Raw raw;
    std::memcpy(&raw, src + i * static_cast<int64_t>(sizeof(Raw)), sizeof(Raw));
    out[i] = static_cast<T>(value(raw));
  }
}

// Converts n stored elements at src into dst, of dtype `to` (a pair safetensors_converts
// accepts): one memcpy when the types match, else element by element.
void convert_run(const char* src, Stored from, void* dst, DType to, int64_t n) {
  if ((from == Stored::f32 && to == DType::f32) || (from == Stored::f64 && to == DType::f64) ||
      (from == Stored::i64 && to == DType::i64)) {
    std::memcpy(dst, src, static_cast<size_t>(n) * dtype_size(to));
    return;
  }
  dispatch_floating(to, "safetensors", [&]<typename T>() {
    T* out = static_cast<T*>(dst);
    auto same = [](auto x) { return x; };
    switch (from) {
      case Stored::f32:
        decode<float>(src, out, n, same);
        break;
      case Stored::f64:
        decode<double>(src, out, n, same);
        break;
      case Stored::f16:
        decode<uint16_t>(src, out, n, half_to_float);
        break;
      case Stored::bf16:
        decode<uint16_t>(src, out, n, bf16_to_float);
        break;
      default:
        throw std::logic_error("safetensors: unchecked conversion");
    }
  });
}

// dst(i, j) = src(i, j) for i < rows, j < cols, elements of esize (4 or 8) bytes moved as
// they are; each side has its own row and column strides, in elements. 32 x 32 tiles keep the
// strided side's cache lines alive while the tile uses them, so a transpose costs about what
// a copy does (the generic strided copy, one element at a time, is several times slower).
void copy_2d(char* dst, int64_t dst_row, int64_t dst_col, const char* src, int64_t src_row,
             int64_t src_col, int64_t rows, int64_t cols, size_t esize) {
  auto run = [&]<typename T>() {
    T* d = reinterpret_cast<T*>(dst);
    const T* s = reinterpret_cast<const T*>(src);
    constexpr int64_t kTile = 32;
    for (int64_t i0 = 0; i0 < rows; i0 += kTile)
      for (int64_t j0 = 0; j0 < cols; j0 += kTile)
        for (int64_t i = i0; i < std::min(rows, i0 + kTile); ++i)
          for (int64_t j = j0; j < std::min(cols, j0 + kTile); ++j)
            d[i * dst_row + j * dst_col] = s[i * src_row + j * src_col];
  };
  if (esize == 4)
    run.template operator()<uint32_t>();
  else
    run.template operator()<uint64_t>();
}

// Converts the stored elements at src (row-major, of the stored dtype) into dst: contiguous, or
// a 2-D view with any strides, reached through a buffer of at most kBlockBytes (or one row).
// The write is counted (Tensor::bump_version): loading weights between a forward and its
// backward is then refused by backward() instead of giving gradients of the old weights.
void convert_into(const char* src, const std::string& dtype, const Tensor& dst) {
  const Stored from = stored_kind(dtype);
  dst.bump_version();
  if (dst.is_contiguous()) {
    convert_run(src, from, dst.bytes(), dst.dtype(), dst.numel());
    return;
  }
  // A 2-D view (a transposed weight): convert a block of rows into a buffer, then scatter it.
  const int64_t rows = dst.size(0), cols = dst.size(1);
  const int64_t esize = static_cast<int64_t>(dtype_size(dst.dtype()));
  const int64_t stored_row = cols * static_cast<int64_t>(element_size(dtype));
  const int64_t block = std::clamp<int64_t>(kBlockBytes / (cols * esize), 1, rows);
  const Tensor buffer = Tensor::empty({block, cols}, dst.dtype());
  const int64_t row_stride = dst.strides()[0], col_stride = dst.strides()[1];
  for (int64_t r0 = 0; r0 < rows; r0 += block) {
    const int64_t n = std::min(block, rows - r0);
    convert_run(src + r0 * stored_row, from, buffer.bytes(), dst.dtype(), n * cols);
    copy_2d(dst.bytes() + r0 * row_stride * esize, row_stride, col_stride, buffer.bytes(), cols, 1,
            n, cols, static_cast<size_t>(esize));
  }
}

// madvise over the whole pages inside [begin, end) of the mapping (none for a small range).
void advise_pages(const char* begin, const char* end, int advice) {
  const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t b = (reinterpret_cast<uintptr_t>(begin) + page - 1) & ~(page - 1);
  const uintptr_t e = reinterpret_cast<uintptr_t>(end) & ~(page - 1);
  if (b < e) ::madvise(reinterpret_cast<void*>(b), e - b, advice);  // a hint: failure is harmless
}

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw std::runtime_error("safetensors file '" + escape_controls(path) + "': " + what);
}

// Closes a file descriptor when the scope ends.
struct FdCloser {
  int fd;
  ~FdCloser() { ::close(fd); }
};

// Reads exactly n bytes at `offset`; false at end of file. Throws on an I/O error.
bool read_exact(int fd, char* out, size_t n, uint64_t offset, const std::string& path) {
  while (n > 0) {
    const ssize_t got = ::pread(fd, out, n, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) fail(path, std::string("cannot read it: ") + std::strerror(errno));
    if (got == 0) return false;
    out += got;
    n -= static_cast<size_t>(got);
    offset += static_cast<uint64_t>(got);
  }
  return true;
}

// One tensor's entry, every number range-checked; data_size bounds the offsets.
SafetensorsEntry parse_entry(const std::string& name, const nlohmann::json& v, uint64_t data_size,
                             const std::string& path) {
  const std::string where = "tensor '" + json_key_text(name) + "'";
  if (!v.is_object() || !v.contains("dtype") || !v.contains("shape") || !v.contains("data_offsets"))
    fail(path, where + " has a malformed entry " + json_excerpt(v) +
                   ": expected {\"dtype\", \"shape\", \"data_offsets\"}");
  SafetensorsEntry e;
  if (!v["dtype"].is_string())
    fail(path, where + " has dtype " + json_excerpt(v["dtype"]) + ", not a string");
  e.dtype = v["dtype"].get<std::string>();
  const size_t esize = element_size(e.dtype);
  if (esize == 0) fail(path, where + " has unknown dtype " + e.dtype);
  if (!v["shape"].is_array())
    fail(path, where + " has shape " + json_excerpt(v["shape"]) + ", not an array");
  for (const nlohmann::json& d : v["shape"]) {
    const auto size = json_uint(d, static_cast<uint64_t>(INT64_MAX));
    if (!size)
      fail(path, where + " has shape " + json_excerpt(v["shape"]) + ": the entry " +
                     json_excerpt(d) + " is not a non-negative integer below 2^63");
    e.shape.push_back(static_cast<int64_t>(*size));
  }
  // numel (int64, as Tensor counts) and its byte size, both without overflow, before any
  // product is trusted.
  int64_t numel = 1;
  uint64_t bytes = 0;
  bool overflow = false;
  for (int64_t d : e.shape) overflow = overflow || __builtin_mul_overflow(numel, d, &numel);
  overflow = overflow || __builtin_mul_overflow(static_cast<uint64_t>(numel),
                                                static_cast<uint64_t>(esize), &bytes);
  if (overflow)
    fail(path, where + " has an impossible shape " + shape_str(e.shape) +
                   ": its element count or byte size overflows 64 bits");
  const nlohmann::json& offs = v["data_offsets"];
  std::optional<uint64_t> begin, end;
  if (offs.is_array() && offs.size() == 2) {
    begin = json_uint(offs[0], UINT64_MAX);
    end = json_uint(offs[1], UINT64_MAX);
  }
  if (!begin || !end)
    fail(path, where + " has data_offsets " + json_excerpt(offs) +
                   ": expected two non-negative integers [begin, end]");
  e.begin = *begin;
  e.end = *end;
  if (e.begin > e.end)
    fail(path, where + " has data_offsets [" + std::to_string(e.begin) + ", " +
                   std::to_string(e.end) + "] that end before they begin");
  if (e.end > data_size)
    fail(path, "truncated: " + where + " needs bytes [" + std::to_string(e.begin) + ", " +
                   std::to_string(e.end) + ") of the data section, which has " +
                   std::to_string(data_size) + kCutShort);
  if (e.end - e.begin != bytes)
    fail(path, where + " " + shape_str(e.shape) + " " + e.dtype + " should take " +
                   std::to_string(bytes) + " bytes, the file gives it " +
                   std::to_string(e.end - e.begin));
  return e;
}

// The entries, sorted by offset, must cover the data section exactly once: a gap or an
// overlap means a corrupt or hand-edited file, and an overlap lets two tensors share bytes.
void check_tiling(const std::map<std::string, SafetensorsEntry>& entries, uint64_t data_size,
                  const std::string& path) {
  std::vector<const std::pair<const std::string, SafetensorsEntry>*> order;
  for (const auto& kv : entries) order.push_back(&kv);
  std::stable_sort(order.begin(), order.end(), [](const auto* a, const auto* b) {  // ties: by name
    return std::tie(a->second.begin, a->second.end) < std::tie(b->second.begin, b->second.end);
  });
  auto span = [](const std::pair<const std::string, SafetensorsEntry>& kv) {
    return "'" + kv.first + "' [" + std::to_string(kv.second.begin) + ", " +
           std::to_string(kv.second.end) + ")";
  };
  uint64_t covered = 0;  // the data section's bytes [0, covered) belong to the tensors so far
  const std::pair<const std::string, SafetensorsEntry>* previous = nullptr;
  for (const auto* kv : order) {
    const uint64_t begin = kv->second.begin;
    if (begin < covered)
      fail(path,
           "tensors " + span(*previous) + " and " + span(*kv) + " overlap in the data section");
    if (begin > covered)
      fail(path, "bytes [" + std::to_string(covered) + ", " + std::to_string(begin) +
                     ") of the data section belong to no tensor: a gap " +
                     (previous != nullptr ? "between " + span(*previous) + " and "
                                          : std::string("before ")) +
                     span(*kv));
    covered = kv->second.end;
    previous = kv;
  }
  if (covered != data_size)
    fail(path, "bytes [" + std::to_string(covered) + ", " + std::to_string(data_size) +
                   ") at the end of the data section belong to no tensor" +
                   (previous != nullptr ? " (the last one is " + span(*previous) + ")"
                                        : std::string(" (there are no tensors)")));
}

}  // namespace

bool safetensors_converts(const std::string& stored_dtype, DType to) {
  const Stored from = stored_kind(stored_dtype);
  if (to == DType::i64) return from == Stored::i64;
  return from == Stored::f32 || from == Stored::f64 || from == Stored::f16 || from == Stored::bf16;
}

SafetensorsFile SafetensorsFile::read(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) fail(path, "it does not exist");
  if (!std::filesystem::is_regular_file(path, ec))
    fail(path, "it is not a regular file (a directory?)");
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(path, std::string("cannot open it for reading: ") + std::strerror(errno));
  const FdCloser closer{fd};  // the mapping keeps its own reference to the file
  struct stat st {};
  if (::fstat(fd, &st) != 0) fail(path, std::string("cannot stat it: ") + std::strerror(errno));
  const uint64_t file_size = static_cast<uint64_t>(st.st_size);
  unsigned char len_bytes[8];
  if (file_size < 8 || !read_exact(fd, reinterpret_cast<char*>(len_bytes), 8, 0, path))
    fail(path, "truncated: " + std::to_string(file_size) +
                   " bytes, shorter than the 8-byte header length" + kCutShort);
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = header_len << 8 | len_bytes[i];
  if (header_len > kMaxHeaderBytes && header_len > file_size - 8)
    fail(path, "not a safetensors file: its first 8 bytes declare a " + std::to_string(header_len) +
                   "-byte header, larger than the file");
  if (header_len > kMaxHeaderBytes)
    fail(path, "its header declares " + std::to_string(header_len) +
                   " bytes, over the format's limit of " + std::to_string(kMaxHeaderBytes));
  if (header_len > file_size - 8)
    fail(path, "truncated: the header declares " + std::to_string(header_len) + " bytes but only " +
                   std::to_string(file_size - 8) + " follow" + kCutShort);
  std::string header(header_len, '\0');
  if (!read_exact(fd, header.data(), header_len, 8, path))
    fail(path, std::string("truncated while reading its header") + kCutShort);

  // The format's header is a JSON object padded with spaces only: as the reference loader, refuse
  // anything before its '{' (a byte-order mark, blanks) and any other padding (NULs).
  if (header.empty() || header.front() != '{')
    fail(path,
         "the header does not start with '{' (a byte-order mark or other bytes before the JSON?)");

  SafetensorsFile f;
  f.path_ = path;
  // Duplicate keys at any depth are refused: which tensor (or dtype, or offsets) counts would be
  // anyone's guess. So is nesting deeper than any header needs.
  const nlohmann::json j =
      parse_json(header, "safetensors file '" + escape_controls(path) + "': the header");
  if (!j.is_object()) fail(path, "the header is not a JSON object");
  // (checked after parsing, which reports a cut-off JSON as such; the parser stops at a NUL)
  if (header[header.find_last_not_of(' ')] != '}')
    fail(path, "the header's JSON is followed by bytes other than space padding");
  const uint64_t data_size = file_size - 8 - header_len;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (!it.value().is_object()) fail(path, "__metadata__ is not a JSON object");
      // The format keeps metadata as strings (the reference implementation refuses anything else).
      for (auto m = it.value().begin(); m != it.value().end(); ++m) {
        if (!m.value().is_string())
          fail(path, "__metadata__ '" + json_key_text(m.key()) + "' is " + json_excerpt(m.value()) +
                         ", not a string (the format keeps metadata as strings)");
        f.metadata_[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    f.entries_[it.key()] = parse_entry(it.key(), it.value(), data_size, path);
  }
  check_tiling(f.entries_, data_size, path);

  void* map = ::mmap(nullptr, file_size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (map == MAP_FAILED)
    fail(path, std::string("cannot map it into memory: ") + std::strerror(errno));
  f.map_ = map;
  f.map_size_ = file_size;
  f.data_ = static_cast<const char*>(map) + 8 + header_len;
  return f;
}

SafetensorsFile::SafetensorsFile(SafetensorsFile&& other) noexcept
    : path_(std::move(other.path_)),
      metadata_(std::move(other.metadata_)),
      entries_(std::move(other.entries_)),
      map_(std::exchange(other.map_, nullptr)),
      map_size_(std::exchange(other.map_size_, 0)),
      data_(std::exchange(other.data_, nullptr)) {}

SafetensorsFile& SafetensorsFile::operator=(SafetensorsFile&& other) noexcept {
  if (this != &other) {
    if (map_ != nullptr) ::munmap(map_, map_size_);
    path_ = std::move(other.path_);
    metadata_ = std::move(other.metadata_);
    entries_ = std::move(other.entries_);
    map_ = std::exchange(other.map_, nullptr);
    map_size_ = std::exchange(other.map_size_, 0);
    data_ = std::exchange(other.data_, nullptr);
  }
  return *this;
}

SafetensorsFile::~SafetensorsFile() {
  if (map_ != nullptr) ::munmap(map_, map_size_);
}

const SafetensorsEntry& SafetensorsFile::entry(const std::string& name, DType dtype) const {
  auto it = entries_.find(name);
  if (it == entries_.end()) fail(path_, "no tensor named '" + name + "'");
  if (!safetensors_converts(it->second.dtype, dtype))
    fail(path_, "tensor '" + name + "' is " + it->second.dtype + ", which cannot become an " +
                    dtype_name(dtype) + " tensor");
  return it->second;
}

Tensor SafetensorsFile::tensor(const std::string& name, DType dtype) const {
  Tensor t = Tensor::empty(entry(name, dtype).shape, dtype);
  read_into(name, t);
  return t;
}

void SafetensorsFile::read_into(const std::string& name, const Tensor& dst) const {
  if (!dst.defined())
    throw std::invalid_argument("SafetensorsFile::read_into: undefined destination for '" + name +
                                "'");
  const SafetensorsEntry& e = entry(name, dst.dtype());
  if (dst.shape() != e.shape)
    fail(path_, "tensor '" + name + "' has shape " + shape_str(e.shape) +
                    " but its destination is " + shape_str(dst.shape()));
  if (dst.numel() == 0) return;
  if (!dst.is_contiguous() && dst.dim() != 2)
    throw std::invalid_argument("SafetensorsFile::read_into: the destination of '" + name +
                                "' must be contiguous or 2-D, got a strided " +
                                shape_str(dst.shape()) + " view");
  // The kernel reads the range ahead; once converted, its pages go back to the page cache
  // (they are clean: re-reading faults them in again), so the process holds the destination
  // and not a mapped copy of it as well.
  const char* src = data_ + e.begin;
  advise_pages(src, src + (e.end - e.begin), MADV_WILLNEED);
  convert_into(src, e.dtype, dst);
  advise_pages(src, src + (e.end - e.begin), MADV_DONTNEED);
}

std::vector<double> SafetensorsFile::doubles(const std::string& name) const {
  const SafetensorsEntry& e = entry(name, DType::f64);
  if (e.dtype != "F64") fail(path_, "tensor '" + name + "' is " + e.dtype + ", expected F64");
  std::vector<double> v(static_cast<size_t>(shape_numel(e.shape)));
  std::memcpy(v.data(), data_ + e.begin, v.size() * sizeof(double));
  return v;
}

std::string_view SafetensorsFile::bytes(const std::string& name) const {
  auto it = entries_.find(name);
  if (it == entries_.end()) fail(path_, "no tensor named '" + name + "'");
  return {data_ + it->second.begin, static_cast<size_t>(it->second.end - it->second.begin)};
}

void SafetensorsFile::require_finite(const std::string& name, const std::string& what_to_do) const {
  const std::string_view raw = bytes(name);
  const std::string& dtype = entries_.at(name).dtype;
  // A value is NaN or infinite when its exponent bits are all ones: the mask of those bits per
  // floating dtype (IEEE binary32, binary64, binary16, bfloat16).
  uint64_t exponent = 0;
  switch (stored_kind(dtype)) {
    case Stored::f32:
      exponent = 0x7F800000u;
      break;
    case Stored::f64:
      exponent = 0x7FF0000000000000u;
      break;
    case Stored::f16:
      exponent = 0x7C00u;
      break;
    case Stored::bf16:
      exponent = 0x7F80u;
      break;
    case Stored::i64:
    case Stored::other:
      return;  // integers are always finite
  }
  const size_t width = element_size(dtype);
  int64_t count = 0, first = -1;
  const size_t n = raw.size() / width;
  for (size_t i = 0; i < n; ++i) {
    uint64_t bits = 0;
    std::memcpy(&bits, raw.data() + i * width, width);  // little-endian, as stored
    if ((bits & exponent) == exponent) {
      if (first < 0) first = static_cast<int64_t>(i);
      ++count;
    }
  }
  if (count > 0)
    fail(path_, "tensor '" + name + "' holds " + std::to_string(count) + " NaN or infinite value" +
                    (count == 1 ? "" : "s") + " (the first at flat index " + std::to_string(first) +
                    "); " + what_to_do);
}

namespace {

// Streams t's bytes, row-major: straight from its memory when contiguous, else a block of
// rows at a time through a buffer of at most kBlockBytes (or one row): a 2-D view (a
// transposed weight) by a tiled gather, any other layout by the library's strided copy.
void write_tensor(AtomicFile& out, const Tensor& t) {
  const int64_t esize = static_cast<int64_t>(dtype_size(t.dtype()));
  if (t.numel() == 0) return;
  if (t.is_contiguous()) {
    out.write(t.bytes(), static_cast<size_t>(t.numel() * esize));
    return;
  }
  const int64_t rows = t.size(0), cols = t.numel() / rows;
  const int64_t block = std::clamp<int64_t>(kBlockBytes / (cols * esize), 1, rows);
  const Tensor buffer = t.dim() == 2 ? Tensor::empty({block, cols}, t.dtype()) : Tensor();
  for (int64_t r0 = 0; r0 < rows; r0 += block) {
    const int64_t n = std::min(block, rows - r0);
    Tensor part = buffer;
    if (t.dim() == 2)
      copy_2d(buffer.bytes(), cols, 1, t.bytes() + r0 * t.strides()[0] * esize, t.strides()[0],
              t.strides()[1], n, cols, static_cast<size_t>(esize));
    else
      part = contiguous(slice(t, 0, r0, r0 + n));
    out.write(part.bytes(), static_cast<size_t>(n * cols * esize));
  }
}

}  // namespace

void SafetensorsWriter::add(const std::string& name, const Tensor& t) {
  if (!t.defined())
    throw std::invalid_argument("SafetensorsWriter::add: tensor '" + name + "' is undefined");
  // The header's key for the metadata: a tensor of that name would replace the metadata in the
  // file, and the reader refuses it.
  if (name == "__metadata__")
    throw std::invalid_argument(
        "SafetensorsWriter::add: '__metadata__' is the safetensors header's metadata key, not a "
        "tensor name; choose another name");
  tensors_[name] = t.detach();
}

void SafetensorsWriter::write(const std::string& path) const {
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors_) {
    const uint64_t bytes = static_cast<uint64_t>(t.numel()) * dtype_size(t.dtype());
    header[name] = {{"dtype", stored_name(t.dtype())},
                    {"shape", t.shape()},
                    {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // the spec allows padding; keeps data 8-aligned
  unsigned char len_bytes[8];
  for (int i = 0; i < 8; ++i)
    len_bytes[i] = static_cast<unsigned char>(static_cast<uint64_t>(text.size()) >> (8 * i));
  NoGradGuard no_grad;  // the row blocks of a non-contiguous view are plain copies
  AtomicFile out(path);
  out.write(len_bytes, 8);
  out.write(text.data(), text.size());
  for (const auto& [name, t] : tensors_) write_tensor(out, t);
  out.commit();
}

}  // namespace attograd::nn
