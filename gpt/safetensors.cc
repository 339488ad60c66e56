#include "gpt/safetensors.h"

#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <unistd.h>

namespace attograd::gpt {

namespace {

size_t element_size(const std::string& dtype) {
  if (dtype == "F64" || dtype == "I64") return 8;
  if (dtype == "F32" || dtype == "I32") return 4;
  if (dtype == "F16" || dtype == "BF16" || dtype == "I16") return 2;
  if (dtype == "U8" || dtype == "I8" || dtype == "BOOL") return 1;
  return 0;
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

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw std::runtime_error("safetensors file '" + path + "': " + what);
}

}  // namespace

SafetensorsFile SafetensorsFile::read(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) fail(path, "it does not exist");
  if (!std::filesystem::is_regular_file(path, ec)) fail(path, "it is not a regular file (a directory?)");
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) fail(path, "cannot open it for reading (permissions?)");
  const uint64_t file_size = static_cast<uint64_t>(in.tellg());
  in.seekg(0);
  if (file_size < 8) fail(path, "truncated: " + std::to_string(file_size) + " bytes, shorter than the 8-byte header length");
  unsigned char len_bytes[8];
  in.read(reinterpret_cast<char*>(len_bytes), 8);
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = header_len << 8 | len_bytes[i];
  if (header_len > (100u << 20) && header_len > file_size - 8)
    fail(path, "not a safetensors file: its first 8 bytes declare a " + std::to_string(header_len) +
                   "-byte header, larger than the file");
  if (header_len > file_size - 8)
    fail(path, "truncated: the header declares " + std::to_string(header_len) + " bytes but only " +
                   std::to_string(file_size - 8) + " follow (an interrupted download or copy?)");
  std::string header(header_len, '\0');
  in.read(header.data(), static_cast<std::streamsize>(header_len));

  SafetensorsFile f;
  f.path_ = path;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(header);
  } catch (const std::exception& e) {
    fail(path, std::string("the header is not valid JSON: ") + e.what());
  }
  if (!j.is_object()) fail(path, "the header is not a JSON object");
  const uint64_t data_size = file_size - 8 - header_len;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (!it.value().is_object()) fail(path, "__metadata__ is not a JSON object");
      for (auto m = it.value().begin(); m != it.value().end(); ++m)
        f.metadata_[m.key()] = m.value().is_string() ? m.value().get<std::string>() : m.value().dump();
      continue;
    }
    SafetensorsEntry e;
    try {
      e.dtype = it.value().at("dtype").get<std::string>();
      e.shape = it.value().at("shape").get<Shape>();
      const auto offs = it.value().at("data_offsets").get<std::vector<uint64_t>>();
      if (offs.size() != 2) fail(path, "tensor '" + it.key() + "' has malformed data_offsets");
      e.begin = offs[0];
      e.end = offs[1];
    } catch (const nlohmann::json::exception& ex) {
      fail(path, "tensor '" + it.key() + "' has a malformed entry: " + ex.what());
    }
    const size_t esize = element_size(e.dtype);
    if (esize == 0) fail(path, "tensor '" + it.key() + "' has unknown dtype " + e.dtype);
    // Sizes come from the file: check them without overflow before trusting any product.
    uint64_t bytes = esize;
    for (int64_t d : e.shape)
      if (d < 0 || __builtin_mul_overflow(bytes, static_cast<uint64_t>(d), &bytes))
        fail(path, "tensor '" + it.key() + "' has an impossible shape " + shape_str(e.shape));
    if (e.begin > e.end || e.end > data_size)
      fail(path, "truncated: tensor '" + it.key() + "' needs bytes [" + std::to_string(e.begin) + ", " +
                     std::to_string(e.end) + ") of the data section, which has " + std::to_string(data_size));
    if (e.end - e.begin != bytes)
      fail(path, "tensor '" + it.key() + "' " + shape_str(e.shape) + " " + e.dtype + " should take " +
                     std::to_string(bytes) + " bytes, the file gives it " +
                     std::to_string(e.end - e.begin));
    f.entries_[it.key()] = e;
  }
  f.data_.resize(data_size);
  in.read(f.data_.data(), static_cast<std::streamsize>(data_size));
  if (!in) fail(path, "could not read the data section");
  return f;
}

Tensor SafetensorsFile::tensor(const std::string& name, DType dtype) const {
  auto it = entries_.find(name);
  if (it == entries_.end()) fail(path_, "no tensor named '" + name + "'");
  const SafetensorsEntry& e = it->second;
  const char* src = data_.data() + e.begin;
  const int64_t n = shape_numel(e.shape);
  if (dtype == DType::i64) {
    if (e.dtype != "I64") fail(path_, "tensor '" + name + "' is " + e.dtype + ", expected I64");
    Tensor t = Tensor::empty(e.shape, DType::i64);
    std::memcpy(t.data<int64_t>(), src, static_cast<size_t>(n) * 8);
    return t;
  }
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    if (e.dtype == "F32") {
      float x;
      std::memcpy(&x, src + i * 4, 4);
      v[i] = x;
    } else if (e.dtype == "F64") {
      std::memcpy(&v[i], src + i * 8, 8);
    } else if (e.dtype == "F16") {
      uint16_t h;
      std::memcpy(&h, src + i * 2, 2);
      v[i] = half_to_float(h);
    } else if (e.dtype == "BF16") {
      uint16_t h;
      std::memcpy(&h, src + i * 2, 2);
      const uint32_t bits = static_cast<uint32_t>(h) << 16;
      float x;
      std::memcpy(&x, &bits, 4);
      v[i] = x;
    } else {
      fail(path_, "tensor '" + name + "' has dtype " + e.dtype + ", which cannot become a floating tensor");
    }
  }
  return Tensor::from_vector(v, e.shape, dtype);
}

std::vector<double> SafetensorsFile::doubles(const std::string& name) const {
  auto it = entries_.find(name);
  if (it == entries_.end()) fail(path_, "no tensor named '" + name + "'");
  if (it->second.dtype != "F64") fail(path_, "tensor '" + name + "' is " + it->second.dtype + ", expected F64");
  std::vector<double> v(static_cast<size_t>(shape_numel(it->second.shape)));
  std::memcpy(v.data(), data_.data() + it->second.begin, v.size() * 8);
  return v;
}

void SafetensorsWriter::add(const std::string& name, const Tensor& t) {
  const Tensor c = t.clone();  // contiguous
  Item item;
  item.dtype = c.dtype() == DType::f32 ? "F32" : c.dtype() == DType::f64 ? "F64" : "I64";
  item.shape = c.shape();
  item.bytes.resize(static_cast<size_t>(c.numel()) * dtype_size(c.dtype()));
  if (!item.bytes.empty()) std::memcpy(item.bytes.data(), c.impl()->storage->data, item.bytes.size());
  items_[name] = std::move(item);
}

void SafetensorsWriter::write(const std::string& path) const {
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const auto& [name, item] : items_) {
    header[name] = {{"dtype", item.dtype}, {"shape", item.shape}, {"data_offsets", {offset, offset + item.bytes.size()}}};
    offset += item.bytes.size();
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // the spec allows padding; keeps data 8-aligned
  // Unique per process, so two writers never share (and truncate) one temporary file.
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) throw std::runtime_error("cannot write checkpoint '" + tmp + "': " + std::strerror(errno));
  unsigned char len_bytes[8];
  for (int i = 0; i < 8; ++i) len_bytes[i] = static_cast<unsigned char>(static_cast<uint64_t>(text.size()) >> (8 * i));
  bool ok = std::fwrite(len_bytes, 1, 8, f) == 8 && std::fwrite(text.data(), 1, text.size(), f) == text.size();
  for (const auto& [name, item] : items_)
    ok = ok && std::fwrite(item.bytes.data(), 1, item.bytes.size(), f) == item.bytes.size();
  ok = ok && std::fflush(f) == 0 && ::fsync(fileno(f)) == 0;
  ok = (std::fclose(f) == 0) && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string err = std::strerror(errno);
    std::remove(tmp.c_str());
    throw std::runtime_error("could not write checkpoint '" + path + "' (" + err + "); the previous file is untouched");
  }
}

}  // namespace attograd::gpt
