// Tests autograd/kernels/attention.cc against attention_ref.h under every Highway target, for
// float and double: head sizes below, at and above a vector (both ways of summing over keys),
// fewer queries than keys, q/k/v read as views of a GPT's (B, T, 3C) buffer and y written in
// (B, T, NH, HS) order, misaligned buffers; causal averaging as a known value; accumulation;
// thread-count independence.
#define BOOST_TEST_MODULE attention
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "autograd/kernels/attention.h"
#include "autograd/kernels/attention_ref.h"
#include "autograd/kernels/thread_pool.h"
#include "tests/kernels/for_each_target.h"
#include "tests/kernels/test_support.h"

namespace k = attograd::kernels;
namespace ref = attograd::kernels::reference;
using namespace attograd::kernels::testing;
using k::AttentionDims;
using k::HeadStrides;

namespace {

// (B, NH, Tq, Tk, HS): one-element heads, the lecture's pico head (HS 2), head sizes around a
// vector of floats (16) and doubles (8), GPT-2's 64, a KV-cache shape (Tq < Tk), odd lengths,
// and heads long enough that the backward takes its queries in several chunks (kChunkBytes in
// attention.cc: 104 queries of floats, 52 of doubles at these lengths), also with Tq < Tk.
const AttentionDims kDims[] = {
    {1, 1, 1, 1, 1},      {2, 3, 5, 5, 2},      {1, 2, 7, 9, 3}, {2, 2, 17, 17, 16},
    {1, 1, 37, 37, 17},   {1, 2, 20, 33, 64},   {2, 1, 9, 9, 8}, {1, 1, 3, 3, 769},
    {1, 1, 300, 300, 16}, {1, 1, 130, 290, 33},
};

// Contiguous (B, NH, T, HS): the layout of the gradient buffers of causal_attention(q, k, v).
HeadStrides contiguous(const AttentionDims& n, int64_t T) {
  return k::contiguous_heads(n.NH, T, n.HS);
}

// q, k, v as the head-split views of one (B, T, 3, NH, HS) buffer, and y as (B, T, NH, HS): what
// a GPT's c_attn output and merged heads are. (Only meaningful for Tq == Tk.)
struct GptLayout {
  HeadStrides qkv, y;
  int64_t k_offset, v_offset;
  explicit GptLayout(const AttentionDims& n)
      : qkv{n.Tk * 3 * n.NH * n.HS, n.HS, 3 * n.NH * n.HS},
        y{n.Tq * n.NH * n.HS, n.HS, n.NH * n.HS},
        k_offset(n.NH * n.HS),
        v_offset(2 * n.NH * n.HS) {}
};

template <typename T>
void check_forward_and_backward(const AttentionDims& n, bool gpt_layout, int64_t offset,
                                std::mt19937_64& rng) {
  const auto what = describe("B=", n.B, " NH=", n.NH, " Tq=", n.Tq, " Tk=", n.Tk, " HS=", n.HS,
                             gpt_layout ? " (B, T, 3C) views" : " contiguous", " offset=", offset);
  const int64_t q_size = n.B * n.NH * n.Tq * n.HS, k_size = n.B * n.NH * n.Tk * n.HS;
  const GptLayout g(n);
  // Operands: separate contiguous buffers, or one shared qkv buffer.
  const Buffer<T> qkv =
      uniform<T>(gpt_layout ? 3 * k_size : q_size + 2 * k_size, offset, rng, -1.5, 1.5);
  const T* q = qkv.data();
  const T* kp = qkv.data() + (gpt_layout ? g.k_offset : q_size);
  const T* vp = qkv.data() + (gpt_layout ? g.v_offset : q_size + k_size);
  const HeadStrides qs = gpt_layout ? g.qkv : contiguous(n, n.Tq);
  const HeadStrides ks = gpt_layout ? g.qkv : contiguous(n, n.Tk);
  const HeadStrides ys = gpt_layout ? g.y : contiguous(n, n.Tq);

  Buffer<T> y(q_size, offset), y_ref(q_size, offset), lse(n.B * n.NH * n.Tq, offset),
      lse_ref(n.B * n.NH * n.Tq, offset);
  k::attention_forward(y.data(), ys, lse.data(), q, qs, kp, ks, vp, ks, n);
  ref::attention_forward(y_ref.data(), ys, lse_ref.data(), q, qs, kp, ks, vp, ks, n);
  BOOST_TEST(allclose(y, y_ref, kRtol<T>, kRtol<T>), what + " y");
  BOOST_TEST(allclose(lse, lse_ref, kRtol<T>, kRtol<T>), what + " lse");

  // Gradients start non-zero: the kernel must add into them. With the GPT layout they are the
  // head-split views of one (B, T, 3C) gradient, and dy has y's (B, T, NH, HS) layout.
  const Buffer<T> dy = uniform<T>(q_size, offset, rng);
  Buffer<T> grads = uniform<T>(gpt_layout ? 3 * k_size : q_size + 2 * k_size, offset, rng);
  Buffer<T> grads_ref = grads;
  const int64_t dk_at = gpt_layout ? g.k_offset : q_size,
                dv_at = gpt_layout ? g.v_offset : q_size + k_size;
  const k::AttentionGradStrides gs{ys, qs, ks, ks};
  k::attention_backward(grads.data(), grads.data() + dk_at, grads.data() + dv_at, dy.data(), gs,
                        y.data(), ys, lse.data(), q, qs, kp, ks, vp, ks, n);
  ref::attention_backward(grads_ref.data(), grads_ref.data() + dk_at, grads_ref.data() + dv_at,
                          dy.data(), gs, y_ref.data(), ys, lse_ref.data(), q, qs, kp, ks, vp, ks,
                          n);
  BOOST_TEST(allclose(grads, grads_ref, kRtol<T> * 10, kRtol<T> * 10), what + " dq, dk, dv");

  // Written (accumulate = false) over NaNs, which must not be read: exactly the kernel's sums
  // from zero, and the twin's within tolerance.
  const T nan = std::numeric_limits<T>::quiet_NaN();
  Buffer<T> from_zero(grads.size(), offset), written(grads.size(), offset, nan),
      written_ref(grads.size(), offset, nan);
  for (const bool accumulate : {true, false}) {
    Buffer<T>& out = accumulate ? from_zero : written;
    k::attention_backward(out.data(), out.data() + dk_at, out.data() + dv_at, dy.data(), gs,
                          y.data(), ys, lse.data(), q, qs, kp, ks, vp, ks, n, accumulate);
  }
  ref::attention_backward(written_ref.data(), written_ref.data() + dk_at,
                          written_ref.data() + dv_at, dy.data(), gs, y_ref.data(), ys,
                          lse_ref.data(), q, qs, kp, ks, vp, ks, n, false);
  check_equal(written.data(), from_zero.data(), grads.size(), what + " written vs added to zero");
  BOOST_TEST(allclose(written_ref, from_zero, kRtol<T> * 10, kRtol<T> * 10),
             what + " twin written");
}

}  // namespace

BOOST_AUTO_TEST_CASE_TEMPLATE(attention_matches_reference, T, Types) {
  if (!kernels_are_simd<T>()) return;  // the f64 kernels are their twins in wasm
  std::mt19937_64 rng(71);
  for_each_target([&] {
    for (const AttentionDims& n : kDims) {
      for (const int64_t offset : kOffsets) {
        check_forward_and_backward<T>(n, false, offset, rng);
        if (n.Tq == n.Tk) check_forward_and_backward<T>(n, true, offset, rng);
      }
    }
  });
}

// q = 0 makes every visible score equal, so attention is the causal average of the values:
//   y_t = (v_0 + ... + v_t) / (t + 1),  lse_t = log(t + 1)
// the lecture's first step ("averaging context vectors"), recovered as a special case.
BOOST_AUTO_TEST_CASE_TEMPLATE(zero_queries_give_the_causal_average, T, Types) {
  const AttentionDims n{1, 1, 4, 4, 2};
  const std::vector<T> q(8, T(0)), k = {1, 2, 3, 4, 5, 6, 7, 8}, v = {1, 10, 3, 30, 5, 50, 7, 70};
  const HeadStrides s{8, 8, 2};
  for_each_target([&] {
    std::vector<T> y(8), lse(4);
    k::attention_forward(y.data(), s, lse.data(), q.data(), s, k.data(), s, v.data(), s, n);
    const std::vector<T> want = {1, 10, 2, 20, 3, 30, 4, 40};
    BOOST_TEST(allclose(y, want, kRtol<T>, kRtol<T>), "causal average");
    for (int64_t t = 0; t < 4; ++t)
      BOOST_TEST(allclose(lse[t], static_cast<T>(std::log(t + 1.0)), kRtol<T>, kRtol<T>));
  });
}

// Null gradients are skipped; the others come out the same as when all three are asked for.
BOOST_AUTO_TEST_CASE_TEMPLATE(attention_backward_computes_only_what_is_asked, T, Types) {
  std::mt19937_64 rng(72);
  const AttentionDims n{2, 2, 6, 6, 5};
  const HeadStrides s = contiguous(n, 6);
  const int64_t size = 2 * 2 * 6 * 5;
  const Buffer<T> q = uniform<T>(size, 0, rng), kk = uniform<T>(size, 0, rng),
                  v = uniform<T>(size, 0, rng);
  const Buffer<T> dy = uniform<T>(size, 0, rng);
  Buffer<T> y(size, 0), lse(24, 0);
  k::attention_forward(y.data(), s, lse.data(), q.data(), s, kk.data(), s, v.data(), s, n);
  Buffer<T> dq_all(size, 0), dk_all(size, 0), dv_all(size, 0), dk_only(size, 0);
  const k::AttentionGradStrides gs{s, s, s, s};
  k::attention_backward(dq_all.data(), dk_all.data(), dv_all.data(), dy.data(), gs, y.data(), s,
                        lse.data(), q.data(), s, kk.data(), s, v.data(), s, n);
  k::attention_backward(static_cast<T*>(nullptr), dk_only.data(), static_cast<T*>(nullptr),
                        dy.data(), gs, y.data(), s, lse.data(), q.data(), s, kk.data(), s, v.data(),
                        s, n);
  check_equal(dk_only.data(), dk_all.data(), size, "dk alone vs with dq and dv");
}

// Heads are spread over threads, each head done whole by one, from kAttentionParallelMin of work
// on (B = 4 here): bit-identical with 1 and 2.
BOOST_AUTO_TEST_CASE_TEMPLATE(attention_is_thread_count_independent, T, Types) {
  if (!build_has_threads()) return;
  std::mt19937_64 rng(73);
  const int64_t B = k::kAttentionParallelMin / (3 * 40 * 40 * (16 + k::kAttentionScoreWork)) + 1;
  const AttentionDims n{B, 3, 40, 40, 16};
  const HeadStrides s = contiguous(n, 40);
  const int64_t size = B * 3 * 40 * 16;
  const Buffer<T> q = uniform<T>(size, 0, rng), kk = uniform<T>(size, 0, rng),
                  v = uniform<T>(size, 0, rng);
  const Buffer<T> dy = uniform<T>(size, 0, rng);
  const int threads = k::num_threads();
  std::vector<T> out[2];
  for (const int nthreads : {1, 2}) {
    k::set_num_threads(nthreads);
    Buffer<T> y(size, 0), lse(B * 3 * 40, 0), dq(size, 0), dk(size, 0), dv(size, 0);
    k::attention_forward(y.data(), s, lse.data(), q.data(), s, kk.data(), s, v.data(), s, n);
    k::attention_backward(dq.data(), dk.data(), dv.data(), dy.data(), {s, s, s, s}, y.data(), s,
                          lse.data(), q.data(), s, kk.data(), s, v.data(), s, n);
    for (const Buffer<T>* b : {&y, &dq, &dk, &dv})
      out[nthreads - 1].insert(out[nthreads - 1].end(), b->data(), b->data() + size);
  }
  k::set_num_threads(threads);
  check_equal(out[1].data(), out[0].data(), static_cast<int64_t>(out[0].size()),
              "attention 2 threads vs 1");
}
