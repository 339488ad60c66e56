// Tensor basics: creation, strides and views, element access, printing, the generator.
#define BOOST_TEST_MODULE tensor
#include <boost/test/unit_test.hpp>
#include <random>
#include <sstream>

#include "autograd/ops.h"
#include "tests/test_util.h"

using namespace attograd;
using attograd::testing::expect_throw_with;

BOOST_AUTO_TEST_CASE(creation_and_metadata) {
  Tensor t = Tensor::from_vector({1, 2, 3, 4, 5, 6}, {2, 3});
  BOOST_TEST(t.dim() == 2);
  BOOST_TEST(t.numel() == 6);
  BOOST_TEST(t.size(-1) == 3);
  BOOST_TEST((t.strides() == Shape{3, 1}));
  BOOST_TEST(t.is_contiguous());
  BOOST_TEST(t.at({1, 2}) == 6.0);
  BOOST_TEST(Tensor::zeros({3}, DType::f64).to_vector() == std::vector<double>({0, 0, 0}));
  BOOST_TEST(Tensor::full({2}, 2.5).to_vector() == std::vector<double>({2.5, 2.5}));
  BOOST_TEST(Tensor::scalar(4).item() == 4.0);
  BOOST_TEST(Tensor::from_ids({3, 1}, {2}).to_ids() == std::vector<int64_t>({3, 1}));
  // Storage is 64-byte aligned for every dtype.
  BOOST_TEST(reinterpret_cast<uintptr_t>(Tensor::empty({5}).data<float>()) % 64 == 0);
}

BOOST_AUTO_TEST_CASE(views_share_storage_and_have_strides) {
  Tensor t = Tensor::from_vector({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor tt = transpose(t, 0, 1);
  BOOST_TEST((tt.shape() == Shape{3, 2}));
  BOOST_TEST((tt.strides() == Shape{1, 3}));
  BOOST_TEST(!tt.is_contiguous());
  BOOST_TEST(tt.to_vector() == std::vector<double>({1, 4, 2, 5, 3, 6}));
  BOOST_TEST(tt.shares_storage(t));
  Tensor s = slice(t, 1, 1, 3);
  BOOST_TEST(s.to_vector() == std::vector<double>({2, 3, 5, 6}));
  BOOST_TEST(s.shares_storage(t));
  t.data<float>()[1] = 20;  // visible through both views
  BOOST_TEST(tt.at({1, 0}) == 20.0);
  BOOST_TEST(s.at({0, 0}) == 20.0);
  Tensor c = contiguous(tt);
  BOOST_TEST(c.is_contiguous());
  BOOST_TEST(c.to_vector() == std::vector<double>({1, 4, 20, 5, 3, 6}));
}

BOOST_AUTO_TEST_CASE(errors_name_the_problem) {
  expect_throw_with<std::invalid_argument>([] { Tensor::from_vector({1, 2}, {3}); }, "(3,)");
  expect_throw_with<std::invalid_argument>([] { Tensor::zeros({2, -1}); }, "negative dimension");
  Tensor t = Tensor::zeros({2});
  expect_throw_with<std::invalid_argument>([&] { t.data<double>(); }, "tensor is f32");
  expect_throw_with<std::invalid_argument>([&] { t.item(); }, "one-element");
  expect_throw_with<std::out_of_range>([&] { t.at({2}); }, "out of range");
  expect_throw_with<std::logic_error>([] { Tensor::from_ids({1}, {1}).set_requires_grad(); },
                                      "i64");
  expect_throw_with<std::logic_error>([] { Tensor().shape(); }, "undefined");
  expect_throw_with<std::invalid_argument>([] { exp(Tensor::from_ids({1}, {1})); },
                                           "expected a floating tensor");
}

BOOST_AUTO_TEST_CASE(printing) {
  std::ostringstream os;
  os << Tensor::from_vector({1, 2.5, 3, 4}, {2, 2});
  BOOST_TEST(os.str() == "tensor([[1, 2.5],\n        [3, 4]], shape (2, 2), f32)");
  std::ostringstream os2;
  os2 << Tensor::from_vector({0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, {10}, DType::f64);
  BOOST_TEST(os2.str() == "tensor([0, 1, 2, ..., 7, 8, 9], shape (10,), f64)");
}

BOOST_AUTO_TEST_CASE(generator_is_seeded_and_restorable) {
  Generator a(42), b(42);
  const Tensor x = Tensor::randn({100}, a, DType::f64);
  const Tensor y = Tensor::randn({100}, b, DType::f64);
  BOOST_TEST(x.to_vector() == y.to_vector());
  // Mean and variance of 100k normals are near 0 and 1 (5 sigma bounds).
  Generator g(1);
  const std::vector<double> v = Tensor::randn({100000}, g, DType::f64).to_vector();
  double m = 0, s = 0;
  for (double e : v) m += e;
  m /= v.size();
  for (double e : v) s += (e - m) * (e - m);
  s /= v.size();
  BOOST_TEST(std::abs(m) < 5 / std::sqrt(1e5));
  BOOST_TEST(std::abs(s - 1) < 5 * std::sqrt(2 / 1e5));
  // state()/set_state() reproduce the stream exactly, including a pending Box-Muller spare.
  Generator c(9);
  c.normal();
  const std::string st = c.state();
  const double next1 = c.normal(), next2 = c.normal();
  Generator d(0);
  d.set_state(st);
  BOOST_TEST(d.normal() == next1);
  BOOST_TEST(d.normal() == next2);
  expect_throw_with<std::invalid_argument>([&] { d.set_state("garbage"); }, "malformed");
  // A state read from a checkpoint must parse completely: nothing after it, a spare that is a
  // finite number.
  const std::string spare_pending = c.state();  // after two normals: no spare
  for (const std::string& bad : {st + " 12", st + "x", st.substr(0, st.rfind(' ')) + " zz",
                                 st.substr(0, st.rfind(' ')) + " inf", st.substr(0, st.size() / 2)})
    expect_throw_with<std::invalid_argument>([&] { d.set_state(bad); },
                                             "malformed generator state");
  d.set_state(spare_pending + " \n");  // trailing white space is harmless
  d.set_state(st);
  BOOST_TEST(d.normal() == next1);
}

// The engine is written out (autograd/random.h) so that its state reads the same in every
// build; its outputs must still be std::mt19937_64's, and its text libstdc++'s, which the
// checkpoints written before hold.
BOOST_AUTO_TEST_CASE(mersenne_twister_is_the_standard_one_with_portable_state) {
  Mt19937_64 fresh;
  for (int i = 1; i < 10000; ++i) fresh();
  BOOST_TEST(fresh() == 9981545732273789042ULL);  // the C++ standard's check value
  for (const uint64_t seed : {uint64_t{0}, uint64_t{42}, uint64_t{1337}, ~uint64_t{0}}) {
    Mt19937_64 ours(seed);
    std::mt19937_64 std_engine(seed);
    for (int i = 0; i < 1000; ++i) {
      BOOST_TEST_INFO("seed " << seed << ", draw " << i);
      BOOST_TEST(ours() == std_engine());
    }
#if defined(__GLIBCXX__)
    std::ostringstream libstdcxx;
    libstdcxx << std_engine;
    BOOST_TEST(ours.text() == libstdcxx.str());
#endif
    // Read back mid-block, it goes on where it was.
    std::istringstream is(ours.text());
    Mt19937_64 copy(7);
    copy.read(is);
    BOOST_TEST(!is.fail());
    for (int i = 0; i < 500; ++i) BOOST_TEST(copy() == ours());
  }
  for (const std::string& bad : {std::string("1 2 3"), std::string(400, '1')}) {
    std::istringstream is(bad);
    Mt19937_64 m;
    m.read(is);
    BOOST_TEST(is.fail());
  }
  Mt19937_64 m;
  std::istringstream index_too_big(m.text().substr(0, m.text().rfind(' ')) + " 313");
  m.read(index_too_big);
  BOOST_TEST(index_too_big.fail());
}

// The public writes that nn/ and gpt/ use instead of Tensor's insides.
BOOST_AUTO_TEST_CASE(public_writes_copy_fill_bytes_and_grad) {
  Tensor a = Tensor::zeros({2, 3}, DType::f64);
  const Tensor src = Tensor::from_vector({1, 2, 3, 4, 5, 6}, {3, 2}, DType::f64);
  a.copy_from(transpose(src, 0, 1));  // a strided source
  BOOST_TEST(a.to_vector() == (std::vector<double>{1, 3, 5, 2, 4, 6}),
             boost::test_tools::per_element());
  transpose(a, 0, 1).fill_(7);  // a strided destination
  BOOST_TEST(a.to_vector() == std::vector<double>(6, 7), boost::test_tools::per_element());
  expect_throw_with<std::invalid_argument>(
      [&] { a.copy_from(src); },
      "copy_from: source f64 (3, 2) does not match destination f64 (2, 3)");
  // bytes(): the first element of a view, whatever the dtype.
  const Tensor row = slice(src, 0, 1, 2);
  BOOST_TEST(reinterpret_cast<double*>(row.bytes())[0] == 3.0);
  BOOST_TEST(
      transpose(src, 0, 1).contiguous().to_vector() == (std::vector<double>{1, 3, 5, 2, 4, 6}),
      boost::test_tools::per_element());

  Tensor w = Tensor::ones({2}, DType::f64).set_requires_grad();
  const Tensor g = Tensor::zeros({2}, DType::f64);
  w.set_grad(g);
  sum(w * 3.0).backward();
  BOOST_TEST(g.to_vector() == (std::vector<double>{3, 3}),
             boost::test_tools::per_element());  // accumulated into g
  expect_throw_with<std::invalid_argument>(
      [&] { w.set_grad(Tensor::zeros({3}, DType::f64)); },
      "set_grad: expected a contiguous f64 (2,) gradient, got f64 (3,)");
}

// unallocated() + allocate_in(): how a parameter arena places parameters; a live tensor is
// never re-pointed.
BOOST_AUTO_TEST_CASE(unallocated_tensors_get_storage_once) {
  const Tensor buffer = Tensor::from_vector({1, 2, 3, 4, 5}, {5}, DType::f32);
  Tensor p = Tensor::unallocated({2, 2}, DType::f32);
  expect_throw_with<std::logic_error>([&] { p.to_vector(); }, "has no storage yet");
  expect_throw_with<std::out_of_range>([&] { p.allocate_in(buffer, 2); },
                                       "do not fit in a buffer of 5");
  p.allocate_in(buffer, 1);
  BOOST_TEST(p.to_vector() == (std::vector<double>{2, 3, 4, 5}), boost::test_tools::per_element());
  BOOST_TEST(p.shares_storage(buffer));
  expect_throw_with<std::logic_error>([&] { p.allocate_in(buffer, 0); },
                                      "already has storage; a live tensor is never re-pointed");
  expect_throw_with<std::invalid_argument>(
      [&] { Tensor::unallocated({2}, DType::f64).allocate_in(buffer, 0); },
      "expected an allocated contiguous f64 buffer, got f32 (5,)");
}

// version(): 0 when created, +1 for each in-place change through the public API (the counter
// backward() checks saved tensors against, engine.h), shared by every view of a storage, not by
// a clone; a write through data() counts once bump_version() says so.
BOOST_AUTO_TEST_CASE(every_in_place_write_bumps_the_storage_version) {
  Tensor t = Tensor::zeros({2, 3}, DType::f64);
  Tensor view = transpose(t, 0, 1);
  BOOST_TEST(t.version() == 0u);
  t.fill_(1);
  BOOST_TEST(t.version() == 1u);
  view.fill_(2);  // a non-contiguous view: copy_from underneath, counted once
  BOOST_TEST(t.version() == 2u);
  BOOST_TEST(view.version() == 2u);
  t.copy_from(Tensor::ones({2, 3}, DType::f64));
  BOOST_TEST(t.version() == 3u);
  Generator gen(1);
  t.normal_(gen);
  BOOST_TEST(t.version() == 4u);
  t.data<double>()[0] = 9;  // not seen...
  BOOST_TEST(t.version() == 4u);
  t.bump_version();  // ...until said
  BOOST_TEST(view.version() == 5u);
  Tensor copy = t.clone();
  copy.fill_(0);
  BOOST_TEST(copy.version() == 1u);
  BOOST_TEST(t.version() == 5u);
  Tensor ids = Tensor::from_ids({1, 2}, {2});
  ids.fill_(0);
  BOOST_TEST(ids.version() == 1u);
  BOOST_TEST(Tensor::unallocated({2}).version() == 0u);

  // A gradient changes in place as backward adds into it and zero_grad clears it.
  Tensor w = Tensor::ones({2}, DType::f64).set_requires_grad();
  sum(mul(w, w)).backward();
  const uint64_t after_one = w.grad().version();
  sum(mul(w, w)).backward();
  BOOST_TEST(w.grad().version() > after_one);
  const uint64_t before_zero = w.grad().version();
  w.zero_grad();
  BOOST_TEST(w.grad().version() == before_zero + 1);
}
