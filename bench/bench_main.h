// The command line and the --serve protocol of the benchmark binaries, written once.
//
//   <bench> [--smoke] [Google Benchmark flags]   the benchmarks (--smoke: tiny shapes, for CI)
//   <bench> ... --spin US                        the pool's spin bound (set_spin_microseconds)
//   <bench> --serve NAME [--threads N]           a server for bench/compare.py: each line
//                                                "steps K" on stdin gets "<seconds> allocs <n>
//                                                rss_mib <MiB>" on stdout; "quit" ends
//   <bench> --peak [--threads N] [--peak-seconds S]  the machine's arithmetic peaks at N
//                                                threads (bench/peak.h), one line, S seconds
//                                                per peak (default 1); compare.py reads it
//   <bench> --machine                            the line naming this CPU (bench/machine.h)
//                                                that the Python benchmarks print first
//   <bench> --cpu-kind VENDOR FAMILY MODEL       machine.h's microarchitecture name of that CPU
//                                                ("" if unknown), for its tests
//
// compare.py alternates such a server with its PyTorch twin, A B A B, so both see the same
// machine weather.
#pragma once

#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iostream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "autograd/kernels/thread_pool.h"
#include "bench/machine.h"
#include "bench/peak.h"

namespace attograd::bench {

/// Peak resident set size of this process, in MiB.
inline double peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

/// The serve loop: for each "steps K" line (K >= 1) calls run(K), which returns {seconds,
/// allocations} for the K steps, and prints them with the peak RSS. Returns 0 at "quit" or the
/// end of input, 2 after a malformed line (reported on stderr under `program`'s name).
template <typename Run>
int serve_steps(const char* program, Run&& run) {
  std::string cmd;
  long long k = 0;
  while (std::cin >> cmd) {
    if (cmd == "quit") break;
    if (cmd != "steps" || !(std::cin >> k) || k < 1) {
      std::fprintf(stderr, "%s: expected 'steps K' (K >= 1) or 'quit'\n", program);
      return 2;
    }
    const auto [secs, allocs] = run(k);
    std::printf("%.9f allocs %lld rss_mib %.1f\n", secs, static_cast<long long>(allocs),
                peak_rss_mib());
    std::fflush(stdout);
  }
  return 0;
}

/// The value of a numeric flag, all of `text`: "--threads abc" or "--peak-seconds 0.5s" is an
/// error that names the flag, not a 0 (atoi's answer) or a silently dropped suffix. Throws
/// std::invalid_argument.
template <typename T>
T flag_value(const char* flag, const char* text) {
  T value{};
  const char* end = text + std::strlen(text);
  const auto [stop, error] = std::from_chars(text, end, value);
  if (error == std::errc::result_out_of_range && stop == end)
    throw std::invalid_argument(std::string(flag) + " is out of range: '" + text + "'");
  if (error != std::errc() || stop != end || stop == text)
    throw std::invalid_argument(std::string(flag) + " takes a number, got '" + text + "'");
  return value;
}

/// main() of a benchmark binary. With --serve NAME returns serve(NAME, threads) (an exception
/// becomes one line on stderr and exit code 2); otherwise calls register_benchmarks(smoke), then
/// runs Google Benchmark with the flags left over, reporting through `reporter`. Returns the
/// exit code (2 for an unknown flag).
template <typename Serve, typename Register>
int bench_main(int argc, char** argv, const char* program, Serve&& serve,
               Register&& register_benchmarks, benchmark::BenchmarkReporter& reporter) {
  std::string serve_name;
  int threads = 1;
  bool smoke = false, peak = false;
  double peak_seconds = 1.0;
  int spin = kernels::kDefaultSpinMicroseconds;
  std::vector<char*> args{argv[0]};
  try {
    for (int i = 1; i < argc; ++i) {
      if (std::strcmp(argv[i], "--serve") == 0 && i + 1 < argc) {
        serve_name = argv[++i];
      } else if (std::strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
        threads = flag_value<int>("--threads", argv[++i]);
      } else if (std::strcmp(argv[i], "--spin") == 0 && i + 1 < argc) {
        spin = flag_value<int>("--spin", argv[++i]);
      } else if (std::strcmp(argv[i], "--smoke") == 0) {
        smoke = true;
      } else if (std::strcmp(argv[i], "--peak") == 0) {
        peak = true;
      } else if (std::strcmp(argv[i], "--machine") == 0) {
        std::printf("%s\n", machine_line().c_str());
        return 0;
      } else if (std::strcmp(argv[i], "--cpu-kind") == 0) {
        // the microarchitecture list (machine.h) for a given vendor, family and model: its tests
        if (argc != i + 4)
          throw std::invalid_argument(
              "--cpu-kind takes exactly VENDOR FAMILY MODEL (e.g. AuthenticAMD 25 17)");
        const int family = flag_value<int>("--cpu-kind FAMILY", argv[i + 2]);
        const int model = flag_value<int>("--cpu-kind MODEL", argv[i + 3]);
        if (family < 0 || family > 0x10e || model < 0 || model > 0xff)
          throw std::invalid_argument(
              "--cpu-kind: FAMILY must be in [0, 270] and MODEL in [0, 255] (cpuid's ranges)");
        std::printf("%s\n", cpu_kind(argv[i + 1], family, model).c_str());
        return 0;
      } else if (std::strcmp(argv[i], "--peak-seconds") == 0 && i + 1 < argc) {
        peak_seconds = flag_value<double>("--peak-seconds", argv[++i]);
      } else {
        args.push_back(argv[i]);
      }
    }
    kernels::set_spin_microseconds(spin);
    if (peak) {
      std::printf("%s\n", peak_line(measure_peak(threads, peak_seconds)).c_str());
      return 0;
    }
    if (!serve_name.empty()) return serve(serve_name, threads);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", program, e.what());
    return 2;
  }
  int n = static_cast<int>(args.size());
  benchmark::Initialize(&n, args.data());
  if (benchmark::ReportUnrecognizedArguments(n, args.data())) return 2;
  register_benchmarks(smoke);
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}

}  // namespace attograd::bench
