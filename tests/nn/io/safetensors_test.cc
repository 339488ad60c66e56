// The safetensors reader and writer: round trips in every dtype and layout, conversions,
// streaming writes that are atomic (a full disk leaves the old file), and a strict reader:
// each rule it enforces is checked with a malformed file built here byte by byte, and the
// error must name the problem.
#define BOOST_TEST_MODULE safetensors
#include <boost/test/unit_test.hpp>

#include <sys/resource.h>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "autograd/ops.h"
#include "nn/io/safetensors.h"
#include "tests/test_util.h"

using namespace attograd;
using namespace attograd::nn;
using attograd::testing::expect_throw_with;
using attograd::testing::TempDir;
namespace fs = std::filesystem;

namespace {

// A safetensors file by hand: the 8-byte little-endian header length, the header text as
// given (so it can be malformed), then `data`.
void write_raw(const std::string& path, const std::string& header, const std::string& data) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  for (int i = 0; i < 8; ++i)
    f.put(static_cast<char>(static_cast<uint64_t>(header.size()) >> (8 * i)));
  f << header << data;
}

// Reading a hand-built file must fail with a message containing `needle`.
void expect_rejected(const TempDir& dir, const std::string& header, size_t data_bytes,
                     const std::string& needle) {
  const std::string path = (dir / "bad.safetensors");
  write_raw(path, header, std::string(data_bytes, '\0'));
  BOOST_TEST_INFO("header " << header);
  expect_throw_with<std::runtime_error>([&] { SafetensorsFile::read(path); }, needle);
}

// One F32 entry of shape (n,) at [begin, end).
std::string f32_entry(const std::string& name, int n, uint64_t begin, uint64_t end) {
  return "\"" + name + "\":{\"dtype\":\"F32\",\"shape\":[" + std::to_string(n) +
         "],\"data_offsets\":[" + std::to_string(begin) + "," + std::to_string(end) + "]}";
}

// Writes dir/file holding one f32 tensor "x" with these values; returns its path.
std::string write_x(const TempDir& dir, const std::string& file,
                    const std::vector<double>& values) {
  SafetensorsWriter w;
  w.add("x", Tensor::from_vector(values, {static_cast<int64_t>(values.size())}));
  w.write((dir / file));
  return (dir / file);
}

template <typename T>
std::string bytes_of(const std::vector<T>& v) {
  std::string s(v.size() * sizeof(T), '\0');
  std::memcpy(s.data(), v.data(), s.size());
  return s;
}

}  // namespace

BOOST_AUTO_TEST_CASE(every_dtype_and_layout_round_trips) {
  const TempDir dir;
  Generator gen(3);
  const Tensor a = Tensor::randn({3, 5}, gen);
  const Tensor b = Tensor::randn({4}, gen, DType::f64);
  const Tensor ids = Tensor::from_ids({7, -2, 1LL << 40}, {3});
  const Tensor s = Tensor::scalar(2.5);
  const Tensor empty = Tensor::zeros({0, 4});
  // Non-contiguous views, larger than the writer's 4 MB buffer: written in several row
  // blocks plus a tail.
  const Tensor big = Tensor::randn({1100, 700}, gen, DType::f64);
  const Tensor big_t = transpose(big, 0, 1);
  const Tensor cube = permute(Tensor::randn({3, 4, 5}, gen), {2, 0, 1});
  SafetensorsWriter w;
  w.metadata["note"] = "hello";
  const std::vector<std::pair<std::string, Tensor>> tensors = {
      {"a", a},         {"b", b},         {"ids", ids},  {"s", s},
      {"empty", empty}, {"big_t", big_t}, {"cube", cube}};
  for (const auto& [name, t] : tensors) w.add(name, t);
  const std::string path = (dir / "t.safetensors");
  w.write(path);
  BOOST_TEST(dir.entries() == std::vector<std::string>{"t.safetensors"});  // no temporary left
  BOOST_TEST(((fs::status(path).permissions() & fs::perms::others_read) !=
              fs::perms::none));  // not mkstemp's 0600

  const SafetensorsFile f = SafetensorsFile::read(path);
  BOOST_TEST(f.metadata().at("note") == "hello");
  BOOST_TEST(f.entries().at("ids").dtype == "I64");
  BOOST_TEST(f.entries().at("b").dtype == "F64");
  BOOST_TEST(f.tensor("a", DType::f32).to_vector() == a.to_vector());
  BOOST_TEST(f.tensor("b", DType::f64).to_vector() == b.to_vector());
  BOOST_TEST(f.doubles("b") == b.to_vector());
  BOOST_TEST(f.tensor("ids", DType::i64).to_ids() == ids.to_ids());
  BOOST_TEST(f.tensor("s", DType::f32).item() == 2.5);
  BOOST_TEST((f.tensor("empty", DType::f32).shape() == Shape{0, 4}));
  BOOST_TEST((f.entries().at("big_t").shape == Shape{700, 1100}));
  BOOST_TEST(f.tensor("big_t", DType::f64).to_vector() == big_t.to_vector());
  BOOST_TEST(f.tensor("cube", DType::f32).to_vector() == cube.to_vector());
  // F32 widened to f64 and F64 narrowed to f32, exactly as static_cast would.
  BOOST_TEST(f.tensor("a", DType::f64).to_vector() == a.to_vector());
  BOOST_TEST(
      attograd::testing::allclose(f.tensor("b", DType::f32).to_vector(), b.to_vector(), 1e-6, 0));
}

BOOST_AUTO_TEST_CASE(read_into_fills_contiguous_and_transposed_destinations) {
  const TempDir dir;
  Generator gen(4);
  const Tensor w_in_out =
      Tensor::randn({300, 2000}, gen);  // (in, out): several 4 MB blocks when f64
  SafetensorsWriter w;
  w.add("w", w_in_out);
  w.add("c", Tensor::zeros({2, 3, 4}));
  const std::string path = (dir / "w.safetensors");
  w.write(path);
  const SafetensorsFile f = SafetensorsFile::read(path);
  for (DType dtype : {DType::f32, DType::f64}) {
    const Tensor weight = Tensor::zeros({2000, 300}, dtype);  // (out, in), as a Linear holds it
    f.read_into("w", transpose(weight, 0, 1));
    BOOST_TEST(weight.to_vector() == transpose(w_in_out, 0, 1).to_vector());
    const Tensor plain = Tensor::zeros({300, 2000}, dtype);
    f.read_into("w", plain);
    BOOST_TEST(plain.to_vector() == w_in_out.to_vector());
  }
  const Tensor wrong = Tensor::zeros({2000, 300});
  expect_throw_with<std::runtime_error>(
      [&] { f.read_into("w", wrong); },
      "tensor 'w' has shape (300, 2000) but its destination is (2000, 300)");
  expect_throw_with<std::invalid_argument>(
      [&] {
        f.read_into("c", permute(Tensor::zeros({3, 2, 4}), {1, 0, 2}));
      },
      "must be contiguous or 2-D, got a strided (2, 3, 4) view");
  expect_throw_with<std::runtime_error>(
      [&] {
        f.read_into("w", Tensor::zeros({300, 2000}, DType::i64));
      },
      "is F32, which cannot become an i64 tensor");
  expect_throw_with<std::runtime_error>([&] { f.tensor("nope", DType::f32); },
                                        "no tensor named 'nope'");
}

// A tensor named __metadata__ would replace the header's metadata, and the reader refuses the
// file: the writer refuses the name.
BOOST_AUTO_TEST_CASE(the_metadata_key_is_not_a_tensor_name) {
  SafetensorsWriter w;
  expect_throw_with<std::invalid_argument>(
      [&] { w.add("__metadata__", Tensor::zeros({1})); },
      "'__metadata__' is the safetensors header's metadata key, not a tensor name");
}

BOOST_AUTO_TEST_CASE(half_bfloat_and_double_files_convert) {
  const TempDir dir;
  const std::string path = (dir / "h.safetensors");
  // F16: 1, -2, 0.5, the smallest subnormal 2^-24, inf. BF16: 1, -2.5. F64: 0.1. I64: 3.
  const std::string data = bytes_of<uint16_t>({0x3C00, 0xC000, 0x3800, 0x0001, 0x7C00}) +
                           bytes_of<uint16_t>({0x3F80, 0xC020}) + bytes_of<double>({0.1}) +
                           bytes_of<int64_t>({3});
  write_raw(path,
            R"({"h":{"dtype":"F16","shape":[5],"data_offsets":[0,10]},)"
            R"("bf":{"dtype":"BF16","shape":[2],"data_offsets":[10,14]},)"
            R"("d":{"dtype":"F64","shape":[1],"data_offsets":[14,22]},)"
            R"("i":{"dtype":"I64","shape":[],"data_offsets":[22,30]}})",
            data);
  const SafetensorsFile f = SafetensorsFile::read(path);
  BOOST_TEST(f.tensor("h", DType::f64).to_vector() ==
             (std::vector<double>{1, -2, 0.5, std::ldexp(1.0, -24), INFINITY}));
  BOOST_TEST(f.tensor("bf", DType::f32).to_vector() == (std::vector<double>{1, -2.5}));
  BOOST_TEST(f.tensor("d", DType::f64).item() == 0.1);  // not 8-aligned in the file: read unaligned
  BOOST_TEST(f.tensor("i", DType::i64).to_ids() == std::vector<int64_t>{3});
  BOOST_TEST(safetensors_converts("F16", DType::f32));
  BOOST_TEST(!safetensors_converts("I64", DType::f32));
  BOOST_TEST(!safetensors_converts("F32", DType::i64));
  BOOST_TEST(!safetensors_converts("U8", DType::f32));
  expect_throw_with<std::runtime_error>([&] { f.tensor("i", DType::f32); },
                                        "is I64, which cannot become an f32");
  expect_throw_with<std::runtime_error>([&] { f.doubles("h"); }, "is F16, expected F64");
}

// Issue 31, kind 10: require_finite reads NaN and infinities from the stored bits of every
// floating dtype (exponent all ones), counts them and names the first; the largest finite
// values and integers pass.
BOOST_AUTO_TEST_CASE(require_finite_finds_nan_and_infinity_in_every_floating_dtype) {
  const TempDir dir;
  const std::string path = (dir / "nf.safetensors");
  // F16: 1, 65504 (the largest finite), inf, NaN. BF16: -NaN, 1. F32: 3.4e38, -inf. F64: NaN.
  const std::string data =
      bytes_of<uint16_t>({0x3C00, 0x7BFF, 0x7C00, 0x7E00}) + bytes_of<uint16_t>({0xFFC0, 0x3F80}) +
      bytes_of<float>({3.4e38f, -INFINITY}) + bytes_of<double>({NAN}) + bytes_of<int64_t>({-1}) +
      bytes_of<float>({1.0f, std::numeric_limits<float>::max()});
  write_raw(path,
            R"({"h":{"dtype":"F16","shape":[4],"data_offsets":[0,8]},)"
            R"("bf":{"dtype":"BF16","shape":[2],"data_offsets":[8,12]},)"
            R"("f":{"dtype":"F32","shape":[2],"data_offsets":[12,20]},)"
            R"("d":{"dtype":"F64","shape":[1],"data_offsets":[20,28]},)"
            R"("i":{"dtype":"I64","shape":[1],"data_offsets":[28,36]},)"
            R"("ok":{"dtype":"F32","shape":[2],"data_offsets":[36,44]}})",
            data);
  const SafetensorsFile f = SafetensorsFile::read(path);
  expect_throw_with<std::runtime_error>(
      [&] { f.require_finite("h", "do this"); },
      "'h' holds 2 NaN or infinite values (the first at flat index 2); do this");
  expect_throw_with<std::runtime_error>(
      [&] { f.require_finite("bf", "x"); },
      "'bf' holds 1 NaN or infinite value (the first at flat index 0)");
  expect_throw_with<std::runtime_error>(
      [&] { f.require_finite("f", "x"); },
      "'f' holds 1 NaN or infinite value (the first at flat index 1)");
  expect_throw_with<std::runtime_error>(
      [&] { f.require_finite("d", "x"); },
      "'d' holds 1 NaN or infinite value (the first at flat index 0)");
  f.require_finite("i", "x");   // integers are finite
  f.require_finite("ok", "x");  // FLT_MAX is finite
  expect_throw_with<std::runtime_error>([&] { f.require_finite("none", "x"); }, "no tensor named");
}

BOOST_AUTO_TEST_CASE(the_mapping_moves_and_outlives_a_replaced_file) {
  const TempDir dir;
  const std::string path = write_x(dir, "m.safetensors", {1, 2, 3});
  SafetensorsFile f = SafetensorsFile::read(path);
  SafetensorsFile moved = std::move(f);
  // Replacing the file (rename over it) leaves the mapped old file readable.
  write_x(dir, "m.safetensors", {4, 5, 6});
  BOOST_TEST(moved.tensor("x", DType::f32).to_vector() == (std::vector<double>{1, 2, 3}));
  moved = SafetensorsFile::read(path);  // move assignment unmaps the old file
  BOOST_TEST(moved.tensor("x", DType::f32).to_vector() == (std::vector<double>{4, 5, 6}));
}

BOOST_AUTO_TEST_CASE(failed_writes_leave_the_old_file_and_no_temporary) {
#if defined(__EMSCRIPTEN__)
  // The full disk below is made with RLIMIT_FSIZE, which node's file system does not apply.
  if (!attograd::testing::build_has(false, "file-size limits (setrlimit)")) return;
#endif
  const TempDir dir;
  const std::string path = write_x(dir, "ckpt.safetensors", {1, 2, 3});
  const auto old_size = fs::file_size(path);

  expect_throw_with<std::runtime_error>(
      [&] { write_x(dir, "no_such_dir/ckpt.safetensors", {1}); },
      "cannot write '" + (dir / "no_such_dir/ckpt.safetensors") + "'");
  // A full disk, as the file-size limit makes it: every write's return is checked, so the
  // failure surfaces (EFBIG here, ENOSPC on a real disk) instead of a truncated checkpoint.
  SafetensorsWriter big;
  big.add("y", transpose(Tensor::zeros({512, 1024}), 0, 1));  // through the row-block buffer
  big.add("z", Tensor::zeros({1 << 20}));                     // straight from its memory
  rlimit saved{};
  ::getrlimit(RLIMIT_FSIZE, &saved);
  const auto previous_handler = std::signal(SIGXFSZ, SIG_IGN);
  // Fail in the header, in the row blocks of the transposed view, in the contiguous tensor.
  for (rlim_t limit : {rlim_t{100}, rlim_t{1 << 20}, rlim_t{3 << 20}}) {
    rlimit small = saved;
    small.rlim_cur = limit;
    ::setrlimit(RLIMIT_FSIZE, &small);
    try {
      big.write(path);
      BOOST_ERROR("a write past the size limit succeeded");
    } catch (const std::runtime_error& e) {
      BOOST_TEST_INFO(e.what());
      BOOST_TEST(std::string(e.what()).find("cannot write '" + path + "' (write: ") !=
                 std::string::npos);
      BOOST_TEST(std::string(e.what()).find("the previous file is untouched") != std::string::npos);
    }
    ::setrlimit(RLIMIT_FSIZE, &saved);
  }
  std::signal(SIGXFSZ, previous_handler);
  BOOST_TEST(dir.entries() == std::vector<std::string>{"ckpt.safetensors"});
  BOOST_TEST(fs::file_size(path) == old_size);
  BOOST_TEST(SafetensorsFile::read(path).tensor("x", DType::f32).to_vector() ==
             (std::vector<double>{1, 2, 3}));
  expect_throw_with<std::invalid_argument>([&] { big.add("u", Tensor()); },
                                           "tensor 'u' is undefined");
}

BOOST_AUTO_TEST_CASE(entries_must_tile_the_data_section) {
  const TempDir dir;
  // The tiling holds whatever the order of the entries in the header.
  write_raw((dir / "ok.safetensors"),
            "{" + f32_entry("b", 2, 8, 16) + "," + f32_entry("a", 2, 0, 8) + "}",
            std::string(16, '\0'));
  BOOST_TEST(SafetensorsFile::read((dir / "ok.safetensors")).entries().size() == 2u);
  write_raw((dir / "meta.safetensors"), R"({"__metadata__":{"k":"v"}})",
            "");  // no tensors, no data
  BOOST_TEST(SafetensorsFile::read((dir / "meta.safetensors")).metadata().at("k") == "v");

  expect_rejected(dir, "{" + f32_entry("a", 2, 0, 8) + "," + f32_entry("b", 2, 4, 12) + "}", 12,
                  "tensors 'a' [0, 8) and 'b' [4, 12) overlap in the data section");
  expect_rejected(dir, "{" + f32_entry("a", 2, 0, 8) + "," + f32_entry("b", 2, 0, 8) + "}", 8,
                  "tensors 'a' [0, 8) and 'b' [0, 8) overlap");
  expect_rejected(dir, "{" + f32_entry("a", 2, 0, 8) + "," + f32_entry("b", 2, 12, 20) + "}", 20,
                  "bytes [8, 12) of the data section belong to no tensor: a gap between 'a' [0, 8) "
                  "and 'b' [12, 20)");
  expect_rejected(dir, "{" + f32_entry("a", 2, 4, 12) + "}", 12,
                  "bytes [0, 4) of the data section belong to no tensor: a gap before 'a' [4, 12)");
  expect_rejected(dir, "{" + f32_entry("a", 2, 0, 8) + "}", 12,
                  "bytes [8, 12) at the end of the data section belong to no tensor (the last one "
                  "is 'a' [0, 8))");
  expect_rejected(dir, R"({"__metadata__":{}})", 4,
                  "bytes [0, 4) at the end of the data section belong to no "
                  "tensor (there are no tensors)");
  expect_rejected(dir, "{" + f32_entry("a", 2, 0, 8) + "}", 4,
                  "truncated: tensor 'a' needs bytes [0, 8) of the data section, which has 4");
  expect_rejected(dir, "{" + f32_entry("a", 2, 8, 0) + "}", 8,
                  "tensor 'a' has data_offsets [8, 0] that end before");
  expect_rejected(dir, "{" + f32_entry("a", 2, 0, 12) + "}", 12,
                  "tensor 'a' (2,) F32 should take 8 bytes, the file gives it 12");
}

BOOST_AUTO_TEST_CASE(duplicate_keys_are_refused) {
  const TempDir dir;
  expect_rejected(dir, "{" + f32_entry("a", 2, 0, 8) + "," + f32_entry("a", 2, 8, 16) + "}", 16,
                  "the header has the key 'a' twice");
  expect_rejected(dir, R"({"a":{"dtype":"F32","shape":[2],"dtype":"F64","data_offsets":[0,8]}})", 8,
                  "the header has the key 'dtype' twice in the entry 'a'");
  expect_rejected(dir, R"({"__metadata__":{"step":"1","step":"2"}})", 0,
                  "the header has the key 'step' twice in the entry '__metadata__'");
  expect_rejected(dir, R"({"__metadata__":{},"__metadata__":{}})", 0,
                  "the header has the key '__metadata__' twice");
}

BOOST_AUTO_TEST_CASE(shapes_must_be_non_negative_integers_whose_size_fits) {
  const TempDir dir;
  // {as written, as the message shows it}
  const std::vector<std::pair<std::string, std::string>> bad_sizes = {
      {"70.9", "70.9"},   {"-1", "-1"},     {"9223372036854775808", "9223372036854775808"},
      {"1e2", "100.0"},   {"2.0", "2.0"},   {"18446744073709551616", "1.8446744073709552e+19"},
      {"\"2\"", "\"2\""}, {"true", "true"}, {"null", "null"},
      {"[2]", "[2]"}};
  for (const auto& [bad, shown] : bad_sizes)
    expect_rejected(dir, R"({"a":{"dtype":"F32","shape":[)" + bad + R"(],"data_offsets":[0,8]}})",
                    8,
                    "tensor 'a' has shape [" + shown + "]: the entry " + shown +
                        " is not a non-negative integer below 2^63");
  expect_rejected(dir, R"({"a":{"dtype":"F32","shape":2,"data_offsets":[0,8]}})", 8,
                  "tensor 'a' has shape 2, not an array");
  // numel * 4 wraps to 72 bytes mod 2^64: the overflow, not the wrapped size, must decide.
  expect_rejected(
      dir, R"({"w":{"dtype":"F32","shape":[4611686018427387922],"data_offsets":[0,72]}})", 72,
      "tensor 'w' has an impossible shape (4611686018427387922,): its element count or byte size");
  // numel overflows int64 before the 0 would make it 0.
  expect_rejected(dir,
                  R"({"w":{"dtype":"U8","shape":[4294967296,2147483648,0],"data_offsets":[0,0]}})",
                  0, "impossible shape (4294967296, 2147483648, 0)");
}

BOOST_AUTO_TEST_CASE(offsets_dtypes_and_entries_must_be_well_formed) {
  const TempDir dir;
  const std::vector<std::pair<std::string, std::string>> bad_offsets = {
      {"[-1,8]", "[-1,8]"},   {"[0.5,8]", "[0.5,8]"},
      {"[0]", "[0]"},         {"[0,8,8]", "[0,8,8]"},
      {"\"0,8\"", "\"0,8\""}, {"[0,18446744073709551616]", "[0,1.8446744073709552e+19]"}};
  for (const auto& [bad, shown] : bad_offsets)
    expect_rejected(dir, R"({"a":{"dtype":"F32","shape":[2],"data_offsets":)" + bad + "}}", 8,
                    "tensor 'a' has data_offsets " + shown +
                        ": expected two non-negative integers [begin, end]");
  expect_rejected(dir, R"({"a":{"dtype":"F8","shape":[2],"data_offsets":[0,2]}})", 2,
                  "tensor 'a' has unknown dtype F8");
  expect_rejected(dir, R"({"a":{"dtype":4,"shape":[2],"data_offsets":[0,8]}})", 8,
                  "tensor 'a' has dtype 4, not a string");
  expect_rejected(dir, R"({"a":{"dtype":"F32","shape":[2]}})", 8,
                  "tensor 'a' has a malformed entry");
  expect_rejected(dir, R"({"a":[1,2]})", 8, "tensor 'a' has a malformed entry [1,2]");
  expect_rejected(dir, R"({"__metadata__":[1]})", 0, "__metadata__ is not a JSON object");
  expect_rejected(dir, R"([1,2])", 0, "the header does not start with '{'");
  expect_rejected(dir, R"({"a":)", 0, "the header is not valid JSON");
}

BOOST_AUTO_TEST_CASE(header_length_is_checked_before_anything_is_allocated) {
  const TempDir dir;
  const std::string path = (dir / "h.safetensors");
  // A header over the format's 100,000,000-byte limit, in a (sparse) file long enough for it.
  write_raw(path, "", "");
  {
    std::fstream f(path, std::ios::binary | std::ios::in | std::ios::out);
    const uint64_t n = 100'000'001;
    for (int i = 0; i < 8; ++i) f.put(static_cast<char>(n >> (8 * i)));
  }
  fs::resize_file(path, 8 + 100'000'001 + 16);
  expect_throw_with<std::runtime_error>(
      [&] { SafetensorsFile::read(path); },
      "its header declares 100000001 bytes, over the format's limit of 100000000");
  fs::resize_file(path, 8 + 50);
  expect_throw_with<std::runtime_error>(
      [&] { SafetensorsFile::read(path); },
      "not a safetensors file: its first 8 bytes declare a 100000001-byte header");
  write_raw(path, std::string(40, ' '), "");
  fs::resize_file(path, 8 + 20);
  expect_throw_with<std::runtime_error>(
      [&] { SafetensorsFile::read(path); },
      "truncated: the header declares 40 bytes but only 20 follow (an interrupted download or "
      "copy?); download or copy the file again");
  fs::resize_file(path, 5);
  expect_throw_with<std::runtime_error>(
      [&] { SafetensorsFile::read(path); },
      "truncated: 5 bytes, shorter than the 8-byte header length (an interrupted download or "
      "copy?); download or copy the file again");
}

// A file name with a newline and an escape byte is printed as one printable line.
BOOST_AUTO_TEST_CASE(a_file_name_with_control_bytes_is_escaped_in_messages) {
  const TempDir dir;
  expect_throw_with<std::runtime_error>(
      [&] { SafetensorsFile::read(dir / "i\nj\x1b[31m.safetensors"); },
      "safetensors file '" + (dir / "i\\nj\\x1b[31m.safetensors") + "': it does not exist");
}

BOOST_AUTO_TEST_CASE(deep_nesting_and_non_string_metadata_are_refused) {
  const TempDir dir;
  // A metadata value nested 100,000 levels deep used to overflow the stack when it was printed
  // back into a string; now the header is refused while it is parsed.
  const std::string deep = std::string(100'000, '[') + std::string(100'000, ']');
  expect_rejected(dir, R"({"__metadata__":{"x":)" + deep + "}}", 0,
                  "safetensors file '" + (dir / "bad.safetensors") +
                      "': the header nests deeper than 32 levels");
  expect_rejected(dir, R"({"a":{"dtype":"F32","shape":)" + deep + R"(,"data_offsets":[0,8]}})", 8,
                  "the header nests deeper than 32 levels");
  // The format keeps metadata as strings: a number or an object is not silently turned into one.
  expect_rejected(dir, R"({"__metadata__":{"step":12}})", 0,
                  "__metadata__ 'step' is 12, not a string (the format keeps metadata as strings)");
  expect_rejected(dir, R"({"__metadata__":{"config":{"n_layer":1}}})", 0,
                  "__metadata__ 'config' is {\"n_layer\":1}, not a string");
}

BOOST_AUTO_TEST_CASE(bytes_views_the_stored_tensor) {
  const TempDir dir;
  const std::string path = write_x(dir, "x.safetensors", {1, 2});
  const SafetensorsFile f = SafetensorsFile::read(path);
  BOOST_TEST(std::string(f.bytes("x")) == bytes_of(std::vector<float>{1, 2}));
  expect_throw_with<std::runtime_error>([&] { f.bytes("y"); }, "no tensor named 'y'");
}

// The header is a JSON object padded with spaces only (newcomer review of issue 8: a byte-order
// mark before it, or NUL padding after it, loaded).
BOOST_AUTO_TEST_CASE(a_header_with_bytes_around_its_json_is_refused) {
  const TempDir dir;
  const std::string ok = R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  expect_rejected(dir, "\xEF\xBB\xBF" + ok, 8, "the header does not start with '{'");
  expect_rejected(dir, " " + ok, 8, "the header does not start with '{'");
  expect_rejected(dir, ok + std::string(3, '\0'), 8, "followed by bytes other than space padding");
  expect_rejected(dir, ok + " x", 8, "the header is not valid JSON");
  std::string padded = ok + "    ";  // spaces are the format's padding
  const std::string path = (dir / "padded.safetensors");
  write_raw(path, padded, std::string(8, '\0'));
  BOOST_TEST(SafetensorsFile::read(path).contains("x"));
}
