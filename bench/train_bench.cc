// Training-step benchmark: one Trainer::train_step (forward, backward, gradient clipping at 1.0,
// AdamW) per iteration, for the five reference configs and the presets.
//
//   build/bench/train_bench                       Google Benchmark, every config, 1 and 2 threads
//   build/bench/train_bench --serve nano --threads 1
//                                                 a step server for bench/compare.py
//   build/bench/train_bench --mixed-precision bf16 [...]
//                                                 the same in bf16 mixed precision (the trainer's
//                                                 --mixed-precision: Linear and matmul products
//                                                 with bf16 operands, autograd/autocast.h)
//
// Counters: ms/step, tokens/s, model GFLOP/s and its share of this machine's peak at the run's
// thread count, measured (bench/peak.h; nanoGPT's estimate_mfu count: 6 N + 12 L C T flops per
// token, N the parameters without wpe), heap
// allocations per step after warm-up (every malloc in the process, counted by interposing it),
// and the peak RSS of the process.
//
// The serve mode answers bench/compare.py on stdin/stdout: "steps K" runs K steps and prints
// the seconds they took; "quit" ends. The driver alternates it with the same server written
// in PyTorch (bench/torch_reference.py), A B A B, so both see the same machine weather.
#include <benchmark/benchmark.h>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "autograd/autocast.h"
#include "autograd/kernels/thread_pool.h"
#include "autograd/random.h"
#include "bench/bench_main.h"
#include "gpt/model/config.h"
#include "gpt/model/gpt2.h"
#include "gpt/text/dataset.h"
#include "gpt/train/trainer.h"

// Every heap allocation of the process is counted while counting_mallocs() is on (operator new
// calls malloc): tensors, graph nodes, closures, vectors.
#include "instruments/malloc_counter.h"

namespace {

using namespace attograd;

// A benchmark config: the model and the batch (B sequences of T tokens).
struct BenchConfig {
  const char* name;
  int64_t vocab_size, n_layer, n_head, n_embd, T, B;
};

// The five configs of issue 7 (V, L, H, C, T, B).
const BenchConfig kConfigs[] = {
    {"femto", 65, 1, 1, 2, 16, 32},      {"pico", 65, 3, 3, 6, 32, 32},
    {"nano", 65, 4, 4, 128, 64, 16},     {"baby", 65, 6, 6, 384, 256, 8},
    {"gpt2", 50257, 12, 12, 768, 64, 4},
};

const BenchConfig& find_config(const std::string& name) {
  for (const BenchConfig& c : kConfigs)
    if (name == c.name) return c;
  throw std::invalid_argument("unknown config '" + name +
                              "' (expected femto, pico, nano, baby or gpt2)");
}

gpt::GPTConfig model_config(const BenchConfig& b) {
  gpt::GPTConfig c;
  c.vocab_size = b.vocab_size;
  c.n_layer = b.n_layer;
  c.n_head = b.n_head;
  c.n_embd = b.n_embd;
  c.block_size = b.T;
  c.dropout = 0.0;
  return c;
}

// The precision of every run of this process: --mixed-precision's value (f32 by default).
MatmulPrecision g_precision = MatmulPrecision::f32;

// Takes "--mixed-precision NAME" out of argv (NAME one of kMatmulPrecisionNames, the trainer's
// option's names), setting g_precision; the rest is bench_main's. Throws std::invalid_argument
// for another name or a missing one.
void take_precision_flag(int& argc, char** argv) {
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--mixed-precision") != 0) {
      argv[kept++] = argv[i];
      continue;
    }
    const std::string name = i + 1 < argc ? argv[++i] : "";
    const gpt::Choices precisions{kMatmulPrecisionNames};
    const std::optional<size_t> p = gpt::choice_index(name, precisions);
    if (!p)
      throw std::invalid_argument(
          "--mixed-precision takes " +
          gpt::join_names({precisions.names.begin(), precisions.names.end()}) + ", got '" + name +
          "'");
    g_precision = static_cast<MatmulPrecision>(*p);
  }
  argc = kept;
}

// A model, random tokens and a trainer with nanoGPT's step: AdamW, clipping at 1.0, in
// g_precision.
struct Run {
  explicit Run(const BenchConfig& b)
      : config(b), model(model_config(b), 1337), data(tokens(b), b.T) {
    gpt::TrainOptions o;
    o.mixed_precision = g_precision;
    o.batch_size = b.B;
    o.block_size = b.T;
    o.max_steps = 1000000;
    o.learning_rate = 3e-4;
    o.min_lr = 3e-5;
    o.warmup_steps = 10;
    o.grad_clip = 1.0;
    trainer = std::make_unique<gpt::Trainer>(model, data, o, "char", "", "");
  }
  static std::vector<int64_t> tokens(const BenchConfig& b) {
    Generator gen(7);
    std::vector<int64_t> t(static_cast<size_t>(std::max<int64_t>(100000, 20 * b.T * b.B)));
    for (int64_t& id : t) id = static_cast<int64_t>(gen.below(static_cast<uint64_t>(b.vocab_size)));
    return t;
  }
  // nanoGPT's estimate_mfu: 6 N + 12 L C T flops per trained token.
  double flops_per_step() const {
    return gpt::gpt_flops_per_token(model.config(), config.T) *
           static_cast<double>(config.T * config.B);
  }

  BenchConfig config;
  gpt::GPT model;
  gpt::Dataset data;
  std::unique_ptr<gpt::Trainer> trainer;
};

void bench_step(benchmark::State& state, const BenchConfig* config, int threads) {
  attograd::kernels::set_num_threads(threads);
  Run run(*config);
  for (int i = 0; i < 3; ++i) run.trainer->train_step();  // warm-up: caches and buffers grow
  instruments::malloc_count() = 0;
  instruments::counting_mallocs() = true;
  int64_t steps = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(run.trainer->train_step());
    ++steps;
  }
  instruments::counting_mallocs() = false;
  const double tokens = static_cast<double>(config->T * config->B);
  state.counters["tokens/s"] =
      benchmark::Counter(tokens, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["GFLOP/s"] = benchmark::Counter(run.flops_per_step() * 1e-9,
                                                 benchmark::Counter::kIsIterationInvariantRate);
  state.counters["allocs/step"] = static_cast<double>(instruments::malloc_count().load()) /
                                  static_cast<double>(std::max<int64_t>(steps, 1));
  state.counters["peak_RSS_MiB"] = bench::peak_rss_mib();
}

// The peak a run is a share of, measured once per thread count in this process (bench/peak.h;
// it was the Zen 5's 214.6 GFLOP/s per core, a constant that read every other machine wrong): a
// f32 run's of the FMAs, a bf16 run's of the unit its products run on (AMX, vdpbf16ps, else the
// FMAs), as compare.py states its rows. `smoke`: a short measurement.
bench::UnitPeak measured_peak(int threads, bool smoke) {
  static std::map<int, bench::Peak> peaks;
  auto it = peaks.find(threads);
  if (it == peaks.end())
    it = peaks.emplace(threads, bench::measure_peak(threads, smoke ? 0.03 : 0.3)).first;
  const bench::Peak& p = it->second;
  if (g_precision == MatmulPrecision::bf16) return bench::bf16_unit_peak(p);
  return {"FMA", p.f32_fma};
}

// Whether this run is the CI's smoke run (register_benchmarks' argument).
bool g_smoke = false;

// Prints "% of peak" per run beside Google Benchmark's table.
class PeakReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      const auto it = r.counters.find("GFLOP/s");
      if (it == r.counters.end() || r.run_type != Run::RT_Iteration) continue;
      const int threads = std::atoi(
          r.run_name.function_name.substr(r.run_name.function_name.rfind('t') + 1).c_str());
      const bench::UnitPeak peak = measured_peak(threads, g_smoke);
      std::printf("  %s: %.1f%% of the %d-thread %s peak (%.1f GFLOP/s, measured)\n",
                  r.run_name.function_name.c_str(), 100.0 * it->second.value / peak.gflops, threads,
                  peak.unit, peak.gflops);
    }
  }
};

// The step server of bench/compare.py (bench_main.h).
int serve(const std::string& name, int threads) {
  attograd::kernels::set_num_threads(threads);
  Run run(find_config(name));
  std::printf("ready %s params %lld flops_per_step %.6e mixed_precision %s\n", name.c_str(),
              static_cast<long long>(run.model.num_parameters()), run.flops_per_step(),
              matmul_precision_name(g_precision));
  std::fflush(stdout);
  return bench::serve_steps("train_bench", [&](long long k) {
    instruments::malloc_count() = 0;
    instruments::counting_mallocs() = true;
    const auto start = std::chrono::steady_clock::now();
    for (long long i = 0; i < k; ++i) run.trainer->train_step();
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    instruments::counting_mallocs() = false;
    return std::pair<double, int64_t>{secs, instruments::malloc_count().load()};
  });
}

void register_benchmarks(bool smoke) {
  g_smoke = smoke;
  for (const BenchConfig& c : kConfigs) {
    if (smoke && std::strcmp(c.name, "femto") != 0) continue;
    for (const int t : {1, 2}) {
      std::string name = std::string("train_step/") + c.name;
      if (g_precision != MatmulPrecision::f32)
        name += std::string("/") + matmul_precision_name(g_precision);
      name += "/t" + std::to_string(t);
      auto* b = benchmark::RegisterBenchmark(name.c_str(), bench_step, &c, t)
                    ->Unit(benchmark::kMillisecond)
                    ->UseRealTime();
      if (smoke) b->Iterations(2);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  try {
    take_precision_flag(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "train_bench: %s\n", e.what());
    return 2;
  }
  PeakReporter reporter;
  return attograd::bench::bench_main(argc, argv, "train_bench", serve, register_benchmarks,
                                     reporter);
}
