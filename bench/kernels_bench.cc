// Kernel benchmarks at the shapes a GPT trains with, against OpenBLAS in the same process.
//
//   env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE build/bench/kernels_bench
//
// Each matmul case runs twice, once through attograd's kernel and once through cblas_?gemm, at 1
// and 2 threads. Google Benchmark interleaves the repetitions of all cases in random order
// (--benchmark_enable_random_interleaving), so the two sides see the same machine weather;
// the table printed at the end gives, per case, the median time of each side and the ratio
// OpenBLAS time / attograd time (> 1: attograd is faster). Before timing, every case checks
// that the two sides agree to within float rounding, so a fast wrong kernel cannot score.
//
// OPENBLAS_CORETYPE=Haswell (set on the reference VM) makes OpenBLAS use its AVX2 kernels, about
// half as fast as its AVX-512 ones on this machine: unset it (and OPENBLAS_L2_SIZE) in the
// benchmark command, as above. The header line says which kernel OpenBLAS picked.
//
// --smoke: tiny shapes, one repetition each: what CI runs, to show the benchmark still works.
//
// matmul-bf16/...: matmul_bf16 (bf16 operands, f32 sums) against attograd's own f32 matmul at
// GPT-2 small's and baby's largest products, interleaved the same way, with a third side,
// bf16-portable, that forbids vdpbf16ps (the widening path the CPUs without AVX512-BF16 run).
// The second table gives each side's median GFLOP/s (2 M K N per product, whatever the
// precision), the ratio f32 time / bf16 time, and each side's share of its unit's peak (the
// bf16 side's of AMX's, vdpbf16ps's or the FMA's, whichever matmul_bf16 runs on). Only these:
//   build/bench/kernels_bench --benchmark_filter=matmul-bf16
//
// attention/...: the fused causal attention kernel (attention.h) on one head of head_dim 64 at
// T = 8 ... 1024, and nano's (head_dim 32, T = 64), forward alone and forward + backward, at 1
// thread: the time grows as T², the cost chapter 3 computes
// (docs/03-attention.md#the-cost-of-attention). Only these:
//   build/bench/kernels_bench --benchmark_filter=attention
#include <benchmark/benchmark.h>
#include <cblas.h>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "autograd/kernels/attention.h"
#include "autograd/kernels/bf16.h"
#include "autograd/kernels/elementwise.h"
#include "autograd/kernels/gelu.h"
#include "autograd/kernels/matmul.h"
#include "autograd/kernels/targets.h"
#include "autograd/kernels/thread_pool.h"
#include "bench/machine.h"
#include "bench/peak.h"

extern "C" char* openblas_get_corename(void);
extern "C" void openblas_set_num_threads(int);

namespace {

namespace k = attograd::kernels;

// One product C (M, N) = op(A) (M, K) @ op(B) (K, N) of a training step. The layout names the
// stored operands as BLAS does: N = as is, T = transposed.
//   NT: y = x Wᵀ, every Linear forward (W stored (out, in));
//   NN: dx = dy W, every Linear's input gradient;
//   TN: dW = dyᵀ x, every Linear's weight gradient.
struct GemmCase {
  const char* what;
  int64_t M, K, N;
  bool a_trans, b_trans;
};

const char* layout_name(const GemmCase& g) {
  return g.a_trans ? (g.b_trans ? "TT" : "TN") : (g.b_trans ? "NT" : "NN");
}

// The three products of one Linear (in -> out) applied to `rows` = B*T rows.
void add_linear(std::vector<GemmCase>& out, const char* what, int64_t rows, int64_t in,
                int64_t out_features) {
  out.push_back({what, rows, in, out_features, false, true});   // y = x Wᵀ
  out.push_back({what, rows, out_features, in, false, false});  // dx = dy W
  out.push_back({what, out_features, rows, in, true, false});   // dW = dyᵀ x
}

std::vector<GemmCase> gpt_cases() {
  std::vector<GemmCase> cases;
  // gpt2-small: B 4, T 64, C 768, V 50257.
  add_linear(cases, "gpt2 c_attn", 256, 768, 2304);
  add_linear(cases, "gpt2 attn.c_proj", 256, 768, 768);
  add_linear(cases, "gpt2 c_fc", 256, 768, 3072);
  add_linear(cases, "gpt2 mlp.c_proj", 256, 3072, 768);
  add_linear(cases, "gpt2 lm_head", 256, 768, 50257);
  // baby-shakespeare: B 8, T 256, C 384.
  add_linear(cases, "baby c_attn", 2048, 384, 1152);
  add_linear(cases, "baby c_fc", 2048, 384, 1536);
  add_linear(cases, "baby mlp.c_proj", 2048, 1536, 384);
  // nano: B 16, T 64, C 128.
  add_linear(cases, "nano c_attn", 1024, 128, 384);
  add_linear(cases, "nano c_fc", 1024, 128, 512);
  add_linear(cases, "nano mlp.c_proj", 1024, 512, 128);
  cases.push_back({"square", 1024, 1024, 1024, false, false});
  // pico (C 6, B*T 1024) and nano's head (V 65): products too thin for the packed kernel's tiles.
  add_linear(cases, "pico c_attn", 1024, 6, 18);
  add_linear(cases, "pico mlp.c_proj", 1024, 24, 6);
  add_linear(cases, "pico lm_head", 1024, 6, 65);
  add_linear(cases, "nano lm_head", 1024, 128, 65);
  // Generating one token at batch 1: every Linear forward is a matrix-vector product.
  cases.push_back({"gpt2 decode c_fc", 1, 768, 3072, false, true});
  cases.push_back({"gpt2 decode lm_head", 1, 768, 50257, false, true});
  return cases;
}

// The products bf16 is measured on: GPT-2 small's MLP and lm_head, baby's MLP, and nano's MLP
// and head (K = 128, and N = 65: where a bf16 training step was found slower than f32's).
std::vector<GemmCase> bf16_cases() {
  std::vector<GemmCase> cases;
  add_linear(cases, "gpt2 c_fc", 256, 768, 3072);
  add_linear(cases, "gpt2 lm_head", 256, 768, 50257);
  add_linear(cases, "baby c_fc", 2048, 384, 1536);
  add_linear(cases, "nano c_fc", 1024, 128, 512);
  add_linear(cases, "nano lm_head", 1024, 128, 65);
  return cases;
}

std::vector<GemmCase> f64_cases() {
  return {{"square", 512, 512, 512, false, false},
          {"gpt2 c_fc", 256, 768, 3072, false, true},
          {"gpt2 c_fc dW", 3072, 256, 768, true, false}};
}

std::vector<GemmCase> smoke_cases() {
  return {{"smoke", 37, 19, 23, false, false},
          {"smoke", 37, 19, 23, false, true},
          {"smoke", 23, 37, 19, true, false}};
}

// cblas with our argument convention: C = op(A) op(B), row-major.
void blas_gemm(float* c, const float* a, const float* b, const GemmCase& g) {
  cblas_sgemm(CblasRowMajor, g.a_trans ? CblasTrans : CblasNoTrans,
              g.b_trans ? CblasTrans : CblasNoTrans, static_cast<int>(g.M), static_cast<int>(g.N),
              static_cast<int>(g.K), 1.0f, a, static_cast<int>(g.a_trans ? g.M : g.K), b,
              static_cast<int>(g.b_trans ? g.K : g.N), 0.0f, c, static_cast<int>(g.N));
}
void blas_gemm(double* c, const double* a, const double* b, const GemmCase& g) {
  cblas_dgemm(CblasRowMajor, g.a_trans ? CblasTrans : CblasNoTrans,
              g.b_trans ? CblasTrans : CblasNoTrans, static_cast<int>(g.M), static_cast<int>(g.N),
              static_cast<int>(g.K), 1.0, a, static_cast<int>(g.a_trans ? g.M : g.K), b,
              static_cast<int>(g.b_trans ? g.K : g.N), 0.0, c, static_cast<int>(g.N));
}

template <typename T>
struct Operands {
  std::vector<T> a, b, c;
  explicit Operands(const GemmCase& g) : a(g.M * g.K), b(g.K * g.N), c(g.M * g.N) {
    std::mt19937_64 rng(1);
    std::uniform_real_distribution<double> dist(-1, 1);
    for (T& v : a) v = static_cast<T>(dist(rng));
    for (T& v : b) v = static_cast<T>(dist(rng));
  }
};

// attograd and OpenBLAS must agree before either is timed: |diff| <= 1e-4 (f32) / 1e-12 (f64)
// relative to sqrt(K) (the size of a sum of K products of values in [-1, 1]).
template <typename T>
void check_agreement(const GemmCase& g) {
  Operands<T> ops(g);
  std::vector<T> ours(ops.c.size()), theirs(ops.c.size());
  k::matmul<T>(ours.data(), ops.a.data(), ops.b.data(), g.M, g.K, g.N, g.a_trans, g.b_trans, false);
  blas_gemm(theirs.data(), ops.a.data(), ops.b.data(), g);
  const double tol = (sizeof(T) == 4 ? 1e-4 : 1e-12) * std::sqrt(static_cast<double>(g.K));
  for (size_t i = 0; i < ours.size(); ++i)
    if (!(std::abs(static_cast<double>(ours[i]) - theirs[i]) <= tol))
      throw std::runtime_error(std::string("matmul disagrees with OpenBLAS: ") + g.what + " " +
                               layout_name(g) + " at " + std::to_string(i) + ": " +
                               std::to_string(ours[i]) + " vs " + std::to_string(theirs[i]));
}

// matmul_bf16 must equal attograd's f32 matmul run on the operands rounded to bf16 up to the
// order of the f32 additions: the same 1e-4 sqrt(K) as above.
void check_bf16_agreement(const GemmCase& g) {
  Operands<float> ops(g);
  std::vector<float> ours(ops.c.size()), theirs(ops.c.size());
  k::matmul_bf16(ours.data(), ops.a.data(), ops.b.data(), g.M, g.K, g.N, g.a_trans, g.b_trans,
                 false);
  for (float& v : ops.a) v = k::round_to_bf16(v);
  for (float& v : ops.b) v = k::round_to_bf16(v);
  k::matmul<float>(theirs.data(), ops.a.data(), ops.b.data(), g.M, g.K, g.N, g.a_trans, g.b_trans,
                   false);
  const double tol = 1e-4 * std::sqrt(static_cast<double>(g.K));
  for (size_t i = 0; i < ours.size(); ++i)
    if (!(std::abs(static_cast<double>(ours[i]) - theirs[i]) <= tol))
      throw std::runtime_error(std::string("matmul_bf16 disagrees with matmul on bf16 values: ") +
                               g.what + " " + layout_name(g) + " at " + std::to_string(i) + ": " +
                               std::to_string(ours[i]) + " vs " + std::to_string(theirs[i]));
}

// 2 M K N: the floating-point operations of one product, for the GFLOP/s counters and tables.
double flops_of(const GemmCase& g) {
  return 2.0 * static_cast<double>(g.M) * static_cast<double>(g.K) * static_cast<double>(g.N);
}

// The three sides of a matmul-bf16 case.
enum class Precision { kF32, kBf16, kBf16Portable };

void bench_bf16(benchmark::State& state, GemmCase g, Precision precision, int threads) {
  Operands<float> ops(g);
  attograd::kernels::set_num_threads(threads);
  // Each run sets its own side: portable is neither AMX nor vdpbf16ps.
  k::allow_avx512_bf16(precision != Precision::kBf16Portable);
  k::allow_amx(precision != Precision::kBf16Portable);
  for (auto _ : state) {
    if (precision == Precision::kF32) {
      k::matmul<float>(ops.c.data(), ops.a.data(), ops.b.data(), g.M, g.K, g.N, g.a_trans,
                       g.b_trans, false);
    } else {
      k::matmul_bf16(ops.c.data(), ops.a.data(), ops.b.data(), g.M, g.K, g.N, g.a_trans, g.b_trans,
                     false);
    }
    benchmark::DoNotOptimize(ops.c.data());
    benchmark::ClobberMemory();
  }
  k::allow_avx512_bf16(true);
  k::allow_amx(true);
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops_of(g) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

template <typename T>
void bench_gemm(benchmark::State& state, GemmCase g, bool blas, int threads) {
  Operands<T> ops(g);
  attograd::kernels::set_num_threads(threads);
  openblas_set_num_threads(threads);
  for (auto _ : state) {
    if (blas) {
      blas_gemm(ops.c.data(), ops.a.data(), ops.b.data(), g);
    } else {
      k::matmul<T>(ops.c.data(), ops.a.data(), ops.b.data(), g.M, g.K, g.N, g.a_trans, g.b_trans,
                   false);
    }
    benchmark::DoNotOptimize(ops.c.data());
    benchmark::ClobberMemory();
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops_of(g) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// One causal attention head (B = NH = 1, Tq = Tk = T), forward alone or forward + backward,
// through the fused kernel the model trains with. FLOPs counted: Q Kᵀ and A V, 2 T² HS each
// (both halves, as chapter 3's table; the kernel skips the masked half), and twice that again
// for the backward's four products.
void bench_attention(benchmark::State& state, int64_t T, int64_t HS, bool backward) {
  attograd::kernels::set_num_threads(1);
  const k::AttentionDims dims{1, 1, T, T, HS};
  const k::HeadStrides s = k::contiguous_heads(1, T, HS);
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> q(T * HS), kk(T * HS), v(T * HS), y(T * HS), lse(T), dy(T * HS), dq(T * HS),
      dk(T * HS), dv(T * HS);
  for (auto* buf : {&q, &kk, &v, &dy})
    for (float& x : *buf) x = dist(rng);
  for (auto _ : state) {
    k::attention_forward<float>(y.data(), s, lse.data(), q.data(), s, kk.data(), s, v.data(), s,
                                dims);
    if (backward)
      k::attention_backward<float>(dq.data(), dk.data(), dv.data(), dy.data(), {s, s, s, s},
                                   y.data(), s, lse.data(), q.data(), s, kk.data(), s, v.data(), s,
                                   dims);
    benchmark::DoNotOptimize(y.data());
    benchmark::DoNotOptimize(dq.data());
    benchmark::ClobberMemory();
  }
  const double flops =
      (backward ? 3 : 1) * 4.0 * static_cast<double>(T) * static_cast<double>(T) * HS;
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

void register_attention(const std::vector<int64_t>& lengths, int64_t HS) {
  char name[96];
  for (const bool backward : {false, true})
    for (const int64_t T : lengths) {
      std::snprintf(name, sizeof name, "attention/f32/hs%lld/T%lld/%s", static_cast<long long>(HS),
                    static_cast<long long>(T), backward ? "forward+backward" : "forward");
      benchmark::RegisterBenchmark(name, bench_attention, T, HS, backward)
          ->Unit(benchmark::kMicrosecond)
          ->UseRealTime();
    }
}

// c_fc's product and its GELU, forward and the VJP's GELU part (issue 35, item 3), as the two
// graphs run them: unfused, linear's product with the bias, gelu_forward over h in memory, then
// gelu_backward's dh = dy gelu'(h) (what linear then gelu ran); fused, matmul_gelu (GELU on each
// tile as it is stored, gelu'(h) written beside y), then dh = dy * gelu'(h) (what linear_gelu
// runs). One thread; the GFLOP/s counts the product only.
void bench_c_fc_gelu(benchmark::State& state, GemmCase g, bool fused) {
  attograd::kernels::set_num_threads(1);
  Operands<float> ops(g);
  const size_t n = ops.c.size();
  std::vector<float> bias(static_cast<size_t>(g.N), 0.01f), h(n), dy(n, 0.5f), dh(n);
  for (auto _ : state) {
    if (fused) {  // ops.c is y, h the slope
      k::matmul_gelu<float>(ops.c.data(), h.data(), ops.a.data(), ops.b.data(), g.M, g.K, g.N,
                            g.a_trans, g.b_trans, bias.data());
      k::binary_forward<float>(k::BinaryOp::mul, dh.data(), dy.data(), h.data(),
                               static_cast<int64_t>(n));
    } else {
      k::matmul<float>(h.data(), ops.a.data(), ops.b.data(), g.M, g.K, g.N, g.a_trans, g.b_trans,
                       false, bias.data());
      k::gelu_forward<float>(ops.c.data(), h.data(), static_cast<int64_t>(n));
      k::gelu_backward<float>(dh.data(), h.data(), dy.data(), static_cast<int64_t>(n), false);
    }
    benchmark::DoNotOptimize(ops.c.data());
    benchmark::DoNotOptimize(dh.data());
    benchmark::ClobberMemory();
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops_of(g) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// GELU alone on 4,096 floats that stay in the L1: its arithmetic, without memory. The counter is
// elements per second (so ns per element is its inverse: 16 floats a vector on AVX-512).
void bench_gelu_in_l1(benchmark::State& state, bool backward) {
  attograd::kernels::set_num_threads(1);
  const int64_t n = 4096;
  std::vector<float> x(n), y(n), dy(n, 1.0f);
  for (int64_t i = 0; i < n; ++i) x[i] = -6.0f + 12.0f * static_cast<float>(i) / n;
  for (auto _ : state) {
    if (backward) {
      k::gelu_backward<float>(y.data(), x.data(), dy.data(), n, false);
    } else {
      k::gelu_forward<float>(y.data(), x.data(), n);
    }
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  state.counters["elements/s"] =
      benchmark::Counter(static_cast<double>(n), benchmark::Counter::kIsIterationInvariantRate);
}

void register_gelu() {
  for (const bool backward : {false, true})
    benchmark::RegisterBenchmark(backward ? "gelu/f32/n4096/backward" : "gelu/f32/n4096/forward",
                                 bench_gelu_in_l1, backward)
        ->UseRealTime();
  // The c_fc forwards of gpt_cases(): y = x Wᵀ over B*T rows (not the decode's one row).
  for (const GemmCase& g : gpt_cases()) {
    if (!std::string_view(g.what).ends_with(" c_fc") || g.a_trans || !g.b_trans || g.M == 1)
      continue;
    for (const bool fused : {false, true}) {
      const std::string name = std::string("c_fc+gelu/f32/") + g.what + "/t1/" +
                               (fused ? "matmul_gelu, mul" : "matmul, gelu, gelu_backward");
      benchmark::RegisterBenchmark(name.c_str(), bench_c_fc_gelu, g, fused)
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
    }
  }
}

// Collects every repetition and, at the end, prints one line per case: median ms of each side
// and their ratio. Benchmarks are named ".../attograd" and ".../openblas" (or ".../f32",
// ".../bf16" and ".../bf16-portable" for the matmul-bf16 cases); the rest is the case.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  // The floating-point operations of one iteration of a case, for the tables' GFLOP/s.
  void set_flops(const std::string& name, double flops) { flops_[name] = flops; }
  // The machine's peaks per thread count (bench/peak.h), for the tables' share of the peak.
  void set_peaks(std::map<int, attograd::bench::Peak> peaks) { peaks_ = std::move(peaks); }

  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      if (r.run_type != Run::RT_Iteration || r.error_occurred) continue;
      const std::string name = r.run_name.function_name;
      const size_t slash = name.rfind('/');
      times_[name.substr(0, slash)][name.substr(slash + 1)].push_back(r.GetAdjustedRealTime());
    }
  }

  // The tables, after Google Benchmark's own output (and after main measured the peaks again).
  void print_tables() {
    auto median = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v.empty() ? NAN : (v[(v.size() - 1) / 2] + v[v.size() / 2]) / 2;
    };
    std::vector<double> ratios;
    for (const auto& [name, sides] : times_) {
      const auto ours = sides.find("attograd"), theirs = sides.find("openblas");
      if (ours == sides.end() || theirs == sides.end()) continue;
      if (ratios.empty())  // the header once, and only above rows (a bf16-only filter has none)
        std::printf("\n%-44s %12s %12s %8s %9s %8s %8s\n",
                    "case (median of interleaved repetitions)", "attograd ms", "openblas ms",
                    "ratio", "GFLOP/s", "of peak", "openblas");
      const double a = median(ours->second), b = median(theirs->second);
      ratios.push_back(b / a);
      // matmul/<dtype>/.../t<threads>: the FMA peak of that dtype and thread count
      const double gflops = flops_[name] / (a * 1e6), peak = fma_peak(name);
      std::printf("%-44s %12.4f %12.4f %7.2fx %9.1f %7.0f%% %7.0f%%\n", name.c_str(), a, b, b / a,
                  gflops, 100 * gflops / peak, 100 * gflops * (a / b) / peak);
    }
    if (!ratios.empty())
      std::printf(
          "ratio = OpenBLAS time / attograd time (> 1: attograd faster); min %.2fx, median %.2fx\n"
          "GFLOP/s = attograd's (2 M K N per product); of peak = its share of the core's FMA peak "
          "in that dtype at that thread count, measured by this run (bench/peak.h); openblas = "
          "OpenBLAS's share\n",
          *std::min_element(ratios.begin(), ratios.end()), median(ratios));
    for (const auto& [threads, peak] : peaks_)
      std::printf("%s\n", attograd::bench::peak_line(peak).c_str());
    print_bf16_table(median);
  }

 private:
  // The peaks of the thread count a case is named for (".../t<threads>"), or null.
  const attograd::bench::Peak* peak_of(const std::string& name) const {
    const size_t t = name.rfind("/t");
    if (t == std::string::npos) return nullptr;
    const auto it = peaks_.find(std::atoi(name.c_str() + t + 2));
    return it == peaks_.end() ? nullptr : &it->second;
  }
  // The FMA peak for a case named matmul/<f32|f64>/.../t<threads>, NaN when unknown.
  double fma_peak(const std::string& name) const {
    const attograd::bench::Peak* p = peak_of(name);
    if (p == nullptr) return NAN;
    return name.find("/f64/") != std::string::npos ? p->f64_fma : p->f32_fma;
  }

  template <class Median>
  void print_bf16_table(const Median& median) {
    bool header = false;
    for (const auto& [name, sides] : times_) {
      const auto f32 = sides.find("f32"), bf16 = sides.find("bf16");
      const auto portable = sides.find("bf16-portable");
      if (f32 == sides.end() || bf16 == sides.end() || portable == sides.end()) continue;
      if (!header) {
        std::printf("\n%-44s %9s %9s %9s %8s %9s %8s %8s %8s\n", "case (median GFLOP/s)", "f32",
                    "bf16", "portable", "ratio", "f32 ms", "bf16 ms", "f32 pk", "bf16 pk");
        header = true;
      }
      const double t_f32 = median(f32->second), t_bf16 = median(bf16->second);
      const double t_portable = median(portable->second), flops = flops_[name];
      const attograd::bench::Peak* peak = peak_of(name);
      const double f32_peak = peak != nullptr ? peak->f32_fma : NAN;
      // The limit of the unit the bf16 side runs on.
      const double bf16_peak =
          peak != nullptr ? attograd::bench::bf16_unit_peak(*peak).gflops : NAN;
      // times are in the benchmarks' unit, ms
      std::printf("%-44s %9.1f %9.1f %9.1f %7.2fx %9.3f %8.3f %7.0f%% %7.0f%%\n", name.c_str(),
                  flops / (t_f32 * 1e6), flops / (t_bf16 * 1e6), flops / (t_portable * 1e6),
                  t_f32 / t_bf16, t_f32, t_bf16, 100 * flops / (t_f32 * 1e6) / f32_peak,
                  100 * flops / (t_bf16 * 1e6) / bf16_peak);
    }
    if (header)
      std::printf(
          "ratio = f32 time / bf16 time (> 1: bf16 faster); portable = bf16 without AMX or "
          "vdpbf16ps (bf16 here runs on %s); f32 pk = the f32 side's share of the FMA peak, "
          "bf16 pk = the bf16 side's share of the peak of what it runs on (AMX's tdpbf16ps, "
          "vdpbf16ps, or the FMA for the widening path)\n",
          k::matmul_bf16_uses_amx()           ? "AMX"
          : k::matmul_bf16_uses_avx512_bf16() ? "vdpbf16ps"
                                              : "the widening path");
  }

  std::map<std::string, std::map<std::string, std::vector<double>>> times_;
  std::map<std::string, double> flops_;
  std::map<int, attograd::bench::Peak> peaks_;
};

template <typename T>
void register_cases(const std::vector<GemmCase>& cases, const char* dtype,
                    const std::vector<int>& thread_counts, RatioReporter& reporter) {
  char name[160];
  for (const GemmCase& g : cases) {
    check_agreement<T>(g);
    for (const int t : thread_counts)
      for (const bool blas : {false, true}) {
        std::snprintf(name, sizeof name, "matmul/%s/%s/%s/%lldx%lldx%lld/t%d/%s", dtype, g.what,
                      layout_name(g), static_cast<long long>(g.M), static_cast<long long>(g.K),
                      static_cast<long long>(g.N), t, blas ? "openblas" : "attograd");
        const std::string case_name(name);
        reporter.set_flops(case_name.substr(0, case_name.rfind('/')), flops_of(g));
        benchmark::RegisterBenchmark(name, bench_gemm<T>, g, blas, t)
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime();
      }
  }
}

void register_bf16_cases(const std::vector<GemmCase>& cases, const std::vector<int>& thread_counts,
                         RatioReporter& reporter) {
  char name[160];
  const std::pair<Precision, const char*> sides[] = {{Precision::kF32, "f32"},
                                                     {Precision::kBf16, "bf16"},
                                                     {Precision::kBf16Portable, "bf16-portable"}};
  for (const GemmCase& g : cases) {
    check_bf16_agreement(g);
    for (const int t : thread_counts) {
      std::snprintf(name, sizeof name, "matmul-bf16/%s/%s/%lldx%lldx%lld/t%d", g.what,
                    layout_name(g), static_cast<long long>(g.M), static_cast<long long>(g.K),
                    static_cast<long long>(g.N), t);
      reporter.set_flops(name, flops_of(g));
      for (const auto& [precision, side] : sides)
        benchmark::RegisterBenchmark((std::string(name) + "/" + side).c_str(), bench_bf16, g,
                                     precision, t)
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime();
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  bool smoke = false;
  // Defaults first, so that flags given on the command line (parsed later) win.
  std::vector<char*> args{argv[0]};
  std::string reps = "--benchmark_repetitions=7",
              interleave = "--benchmark_enable_random_interleaving=true",
              min_time = "--benchmark_min_time=0.05";
  args.push_back(reps.data());
  args.push_back(interleave.data());
  args.push_back(min_time.data());
  std::string one_rep = "--benchmark_repetitions=1", tiny_time = "--benchmark_min_time=0.001";
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--smoke") == 0) {
      smoke = true;
      args.push_back(one_rep.data());
      args.push_back(tiny_time.data());
    } else {
      args.push_back(argv[i]);
    }
  }
  int n = static_cast<int>(args.size());
  benchmark::Initialize(&n, args.data());
  if (benchmark::ReportUnrecognizedArguments(n, args.data())) return 2;

  std::printf("%s\n", attograd::bench::machine_line().c_str());
  std::printf(
      "attograd kernels: Highway target %s%s; OpenBLAS core %s%s\n", k::active_target().c_str(),
      k::matmul_bf16_uses_amx()           ? " with AMX"
      : k::matmul_bf16_uses_avx512_bf16() ? " with AVX512-BF16"
                                          : "",
      openblas_get_corename(),
      std::getenv("OPENBLAS_CORETYPE") != nullptr ? " (forced by OPENBLAS_CORETYPE: unset it)"
                                                  : "");
  RatioReporter reporter;
  try {
    if (smoke) {
      register_cases<float>(smoke_cases(), "f32", {1, 2}, reporter);
      register_cases<double>(smoke_cases(), "f64", {1}, reporter);
      register_bf16_cases(smoke_cases(), {1}, reporter);
      register_attention({8, 16}, 64);
    } else {
      register_cases<float>(gpt_cases(), "f32", {1, 2}, reporter);
      register_cases<double>(f64_cases(), "f64", {1, 2}, reporter);
      register_bf16_cases(bf16_cases(), {1, 2}, reporter);
      register_attention({8, 16, 32, 64, 128, 256, 512, 1024}, 64);
      register_attention({64}, 32);  // nano's heads (n_embd 128 over 4 heads, block_size 64)
      register_gelu();
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kernels_bench: %s\n", e.what());
    return 1;
  }
  // The peaks, before and after the cases (the best of both: a busy moment only lowers one);
  // short in the smoke run.
  const double peak_seconds = smoke ? 0.03 : 0.6;
  std::map<int, attograd::bench::Peak> peaks;
  for (const int t : {1, 2}) peaks[t] = attograd::bench::measure_peak(t, peak_seconds);
  benchmark::RunSpecifiedBenchmarks(&reporter);
  for (const int t : {1, 2}) {
    const attograd::bench::Peak again = attograd::bench::measure_peak(t, peak_seconds);
    attograd::bench::Peak& p = peaks[t];
    p.f32_fma = std::max(p.f32_fma, again.f32_fma);
    p.f64_fma = std::max(p.f64_fma, again.f64_fma);
    p.bf16_dot = std::max(p.bf16_dot, again.bf16_dot);
    p.amx_bf16 = std::max(p.amx_bf16, again.amx_bf16);
  }
  reporter.set_peaks(peaks);
  reporter.print_tables();
  benchmark::Shutdown();
  return 0;
}
