// Generation benchmark: greedy decoding with the KV cache at batch 1, against the memory-bandwidth
// bound, where every weight is read once per token.
//
//   build/bench/generate_bench                    Google Benchmark: read bandwidth, then
//                                                 generation for gpt2 and gpt2_long, 1 and 2
//                                                 threads
//   build/bench/generate_bench --serve gpt2 --threads 1
//                                                 a decode server for bench/compare.py --generate
//   build/bench/generate_bench --smoke            the CI run: the nano preset, 16 MiB read
//
// The model: a preset (GPT-2 small: V 50257, 12 layers, 12 heads, n_embd 768, block 1024) with
// the random GPT-2 init, a prompt of random ids (8, or 960 for gpt2_long), then greedy tokens
// through gpt::generate with its KV cache. Only decode steps are timed: from the first new token
// to the last, so the prompt's pass is left out and each timed step feeds one token.
//
// The bound. At batch 1 every Linear is a matrix-vector product, so a decode step is limited by
// streaming the weights from memory. Bytes per token, f32:
//   4 * (every parameter once, but the embeddings: the gathers read one row of wte and one of
//        wpe, and the tied lm_head reads all of wte once)
//   = 4 * (N - block_size * C + 2 C)            (N = all parameters; 494.6 MB for GPT-2 small)
// The cache adds 2 L C 4 bytes per cached position (74 KB: 0.6 % at the 40 positions a short
// run averages, 15 % at gpt2_long's 992), which the bound leaves out (counter cache_MB/token).
// Bandwidth is measured in this binary: a SIMD sum (kernels::sum_axis) over a 1 GiB buffer, 32
// times the L3, split over the threads; the best of 10 passes. bound tokens/s = bandwidth /
// bytes per token.
//
// Counters: tokens/s, bound tokens/s, % of the bound, and tensor storage taken from the system
// per token after warm-up (allocator misses; 0 when the cache and the allocator reuse buffers).
//
// The serve mode (bench/bench_main.h) prints "ready <config> params N bytes_per_token B
// bandwidth_gbs G"; then "steps K" generates K + 1 tokens after the prompt and answers with the
// seconds the K decode steps took and the tensor storage they took from the system.
#include <benchmark/benchmark.h>
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "autograd/allocator.h"
#include "autograd/kernels/reduce.h"
#include "autograd/kernels/thread_pool.h"
#include "autograd/random.h"
#include "bench/bench_main.h"
#include "gpt/model/config.h"
#include "gpt/model/gpt2.h"
#include "gpt/model/sampler.h"

namespace {

using namespace attograd;
using Clock = std::chrono::steady_clock;

// A benchmark config: the model (a preset), the prompt length and the tokens generated per run.
struct GenConfig {
  const char* name;
  const char* preset;
  int64_t prompt, new_tokens;
};

// "gpt2": issue 7's shape (V 50257, 12 layers, 12 heads, n_embd 768, block 1024) and a short
// prompt. "gpt2_long": the same model decoding its last 64 positions after a 960-token prompt,
// where the cache is large (the prompt's pass takes a few seconds per run, untimed). "nano": the
// CI smoke run (well under a second).
const GenConfig kConfigs[] = {
    {"gpt2", "gpt2", 8, 64},
    {"gpt2_long", "gpt2", 960, 64},
    {"nano", "nano", 4, 16},
};

const GenConfig& find_config(const std::string& name) {
  for (const GenConfig& c : kConfigs)
    if (name == c.name) return c;
  throw std::invalid_argument("unknown config '" + name + "' (expected gpt2, gpt2_long or nano)");
}

// ---- Read bandwidth -----------------------------------------------------------------------------

// A buffer of `bytes` (far bigger than the caches), written once so that every page is mapped.
std::vector<float> read_buffer(size_t bytes) {
  return std::vector<float>(bytes / sizeof(float), 1.0f);
}

// Seconds one SIMD pass over the buffer takes with `threads` threads, each summing its own
// contiguous part (kernels::sum_axis runs one row per thread; a hand-written AVX-512 loop with
// four accumulators measured the same on this machine).
double read_pass(const std::vector<float>& buffer, int threads) {
  std::vector<float> sums(static_cast<size_t>(threads));
  attograd::kernels::set_num_threads(threads);
  const auto start = Clock::now();
  kernels::sum_axis<float>(sums.data(), buffer.data(), threads,
                           static_cast<int64_t>(buffer.size()) / threads, 1, false);
  const double secs = std::chrono::duration<double>(Clock::now() - start).count();
  benchmark::DoNotOptimize(sums.data());
  return secs;
}

constexpr size_t kBandwidthBytes = size_t{1} << 30;  // 1 GiB: 32 x this machine's 32 MiB L3

// Read bandwidth in bytes/s at `threads`: the best of 10 passes, measured once per process (the
// generation counters divide by it).
double read_bandwidth(int threads, size_t bytes) {
  static std::map<std::pair<int, size_t>, double> measured;
  auto [it, fresh] = measured.try_emplace({threads, bytes}, 0.0);
  if (fresh) {
    const std::vector<float> buffer = read_buffer(bytes);
    for (int pass = 0; pass < 10; ++pass)
      it->second = std::max(it->second, static_cast<double>(buffer.size() * sizeof(float)) /
                                            read_pass(buffer, threads));
  }
  return it->second;
}

void bench_bandwidth(benchmark::State& state, int threads, size_t bytes) {
  const std::vector<float> buffer = read_buffer(bytes);
  for (auto _ : state) state.SetIterationTime(read_pass(buffer, threads));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * buffer.size() * sizeof(float)));
}

// ---- Generation ---------------------------------------------------------------------------------

// A model with random weights, a random prompt, and greedy decoding timed per step.
struct Decoder {
  explicit Decoder(const GenConfig& g) : model(gpt::preset(g.preset), 1337) {
    Generator gen(7);
    for (int64_t i = 0; i < g.prompt; ++i)
      prompt.push_back(
          static_cast<int64_t>(gen.below(static_cast<uint64_t>(model.config().vocab_size))));
  }

  // Bytes of weights a decode step reads (see the top of this file).
  double bytes_per_token() const {
    const gpt::GPTConfig& c = model.config();
    return 4.0 *
           static_cast<double>(model.num_parameters() - c.block_size * c.n_embd + 2 * c.n_embd);
  }
  // Bytes of cached keys and values a decode step reads per cached position: 2 L C floats.
  double cache_bytes_per_position() const {
    return 4.0 * 2.0 * static_cast<double>(model.config().n_layer * model.config().n_embd);
  }

  // Generates steps + 1 greedy tokens after the prompt; returns the seconds of the `steps`
  // decode steps after the first new token (which comes from the prompt's pass).
  double decode(int64_t steps) {
    if (steps < 1 || static_cast<int64_t>(prompt.size()) + steps + 1 > model.config().block_size)
      throw std::invalid_argument(
          "decode steps must be in [1, " +
          std::to_string(model.config().block_size - static_cast<int64_t>(prompt.size()) - 1) +
          "] to stay within block_size, got " + std::to_string(steps));
    gpt::GenerateOptions o;
    o.max_new_tokens = steps + 1;
    o.sampling.temperature = 0;
    Clock::time_point first, last;
    int64_t seen = 0;
    o.on_token = [&](int64_t) { (seen++ == 0 ? first : last) = Clock::now(); };
    Generator gen(1);
    benchmark::DoNotOptimize(gpt::generate(model, prompt, o, gen));
    return std::chrono::duration<double>(last - first).count();
  }

  gpt::GPT model;
  std::vector<int64_t> prompt;
};

void bench_generate(benchmark::State& state, const GenConfig* config, int threads,
                    size_t bandwidth_bytes) {
  const double bandwidth = read_bandwidth(threads, bandwidth_bytes);
  attograd::kernels::set_num_threads(threads);
  Decoder d(*config);
  const int64_t steps = config->new_tokens - 1;
  d.decode(steps);  // warm-up: the allocator's cache and the pool's threads
  const size_t misses = allocator_stats().misses;
  for (auto _ : state) state.SetIterationTime(d.decode(steps));
  const double bound = bandwidth / d.bytes_per_token();
  state.counters["tokens/s"] =
      benchmark::Counter(static_cast<double>(steps), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["bound_tokens/s"] = bound;
  state.counters["MB/token"] = d.bytes_per_token() * 1e-6;
  // Mean over the timed steps, which see prompt + 1 .. prompt + steps cached positions.
  const double mean_positions =
      static_cast<double>(config->prompt) + 0.5 * static_cast<double>(steps + 1);
  state.counters["cache_MB/token"] = d.cache_bytes_per_position() * mean_positions * 1e-6;
  state.counters["GB/s_read"] = bandwidth * 1e-9;
  state.counters["new_storage/token"] =
      static_cast<double>(allocator_stats().misses - misses) /
      static_cast<double>(steps * std::max<int64_t>(state.iterations(), 1));
}

// Prints "% of the bound" per generation run beside Google Benchmark's table.
class BoundReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      const auto rate = r.counters.find("tokens/s"), bound = r.counters.find("bound_tokens/s");
      if (rate == r.counters.end() || bound == r.counters.end() || r.run_type != Run::RT_Iteration)
        continue;
      std::printf("  %s: %.1f tokens/s = %.1f%% of the bandwidth bound (%.1f tokens/s)\n",
                  r.run_name.function_name.c_str(), rate->second.value,
                  100.0 * rate->second.value / bound->second.value, bound->second.value);
    }
  }
};

// The decode server of bench/compare.py --generate (see the top of this file).
int serve(const std::string& name, int threads) {
  const double bandwidth = read_bandwidth(threads, kBandwidthBytes);
  attograd::kernels::set_num_threads(threads);
  Decoder d(find_config(name));
  std::printf("ready %s params %lld bytes_per_token %.6e bandwidth_gbs %.3f\n", name.c_str(),
              static_cast<long long>(d.model.num_parameters()), d.bytes_per_token(),
              bandwidth * 1e-9);
  std::fflush(stdout);
  return bench::serve_steps("generate_bench", [&](long long k) {
    const size_t misses = allocator_stats().misses;
    const double secs = d.decode(k);
    return std::pair{secs, allocator_stats().misses - misses};
  });
}

// Bandwidth at 1 and 2 threads, then generation for every config but the smoke one (or only it).
void register_benchmarks(bool smoke) {
  // The smoke run reads 16 MiB instead of 1 GiB: it checks the code runs, not the machine.
  const size_t bytes = smoke ? size_t{16} << 20 : kBandwidthBytes;
  for (const int t : {1, 2}) {
    auto* b = benchmark::RegisterBenchmark(("read_bandwidth/t" + std::to_string(t)).c_str(),
                                           bench_bandwidth, t, bytes)
                  ->UseManualTime()
                  ->Unit(benchmark::kMillisecond);
    if (smoke) b->Iterations(2);
  }
  for (const GenConfig& config : kConfigs) {
    if ((std::strcmp(config.name, "nano") == 0) != smoke) continue;
    for (const int t : {1, 2}) {
      const std::string name = std::string("generate/") + config.name + "/t" + std::to_string(t);
      auto* b = benchmark::RegisterBenchmark(name.c_str(), bench_generate, &config, t, bytes)
                    ->UseManualTime()
                    ->Unit(benchmark::kMillisecond);
      smoke ? b->Iterations(2) : b->MinTime(3.0);  // several runs of 63 steps
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  BoundReporter reporter;
  return attograd::bench::bench_main(argc, argv, "generate_bench", serve, register_benchmarks,
                                     reporter);
}
