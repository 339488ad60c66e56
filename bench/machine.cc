// The machine line (machine.h): /proc/cpuinfo's first processor, the caches the kernels read.
#include "bench/machine.h"

#include <fstream>
#include <initializer_list>
#include <string>
#include <utility>

#include "autograd/kernels/matmul.h"
#include "autograd/kernels/thread_pool.h"

namespace attograd::bench {

std::string cpu_kind(const std::string& vendor, int family, int model) {
  // Model ranges as Linux's arch/x86/kernel/cpu/amd.c sorts them; a model outside every range
  // is unknown (""), not the nearest guess.
  const auto in = [model](std::initializer_list<std::pair<int, int>> ranges) {
    for (const auto& [first, last] : ranges)
      if (model >= first && model <= last) return true;
    return false;
  };
  if (vendor == "AuthenticAMD") {
    if (family == 0x17 && in({{0x00, 0xff}})) return "Zen 1-2";
    if (family == 0x19 && in({{0x00, 0x0f}, {0x20, 0x5f}})) return "Zen 3";
    if (family == 0x19 && in({{0x10, 0x1f}, {0x60, 0xaf}})) return "Zen 4";
    if (family == 0x1a && in({{0x00, 0x2f}, {0x40, 0x4f}, {0x60, 0x7f}})) return "Zen 5";
    return "";
  }
  if (vendor == "GenuineIntel" && family == 6) {
    switch (model) {
      case 0x55:
        return "Skylake-SP, Cascade Lake or Cooper Lake";
      case 0x6a:
        return "Ice Lake-SP";
      case 0x6c:
        return "Ice Lake-D";
      case 0x8f:
        return "Sapphire Rapids";
      case 0xcf:
        return "Emerald Rapids";
      case 0xad:
      case 0xae:
        return "Granite Rapids";
      default:
        return "";
    }
  }
  return "";
}

namespace {

// The value of "key : value" lines of /proc/cpuinfo's first processor ("" when absent).
struct CpuInfo {
  std::string vendor, family, model, name;
};

CpuInfo read_cpuinfo() {
  CpuInfo info;
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line) && !line.empty()) {  // a blank line ends the first processor
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon);
    key.erase(key.find_last_not_of(" \t") + 1);
    const auto start = line.find_first_not_of(' ', colon + 1);
    const std::string value = start == std::string::npos ? "" : line.substr(start);
    if (key == "vendor_id") info.vendor = value;
    if (key == "cpu family") info.family = value;
    if (key == "model") info.model = value;
    if (key == "model name") info.name = value;
  }
  return info;
}

}  // namespace

std::string machine_line() {
  const CpuInfo c = read_cpuinfo();
  const auto number = [](const std::string& s) {
    try {
      return std::stoi(s);
    } catch (...) {  // absent or not a number: no kind
      return -1;
    }
  };
  const std::string kind = cpu_kind(c.vendor, number(c.family), number(c.model));
  std::string line = "machine " + (c.name.empty() ? "?" : c.name) + " | " +
                     (c.vendor.empty() ? "?" : c.vendor) + " family " +
                     (c.family.empty() ? "?" : c.family) + " model " +
                     (c.model.empty() ? "?" : c.model);
  if (!kind.empty()) line += " (" + kind + ")";
  line += " | " + std::to_string(kernels::available_cpus()) + " CPUs";
  // the sizes the kernels block for (matmul_blocking: Linux's sysfs, else sysconf)
  const kernels::MatmulBlocking caches = kernels::matmul_blocking();
  line += " | L1d " + std::to_string(caches.l1d_bytes >> 10) + " KiB, L2 " +
          std::to_string(caches.l2_bytes >> 10) + " KiB, L3 " +
          std::to_string(caches.l3_bytes >> 20) + " MiB";
  return line;
}

}  // namespace attograd::bench
