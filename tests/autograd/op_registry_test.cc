// The op registry (autograd/op_registry.h) and what is generated from it.
//
// Every entry is a test case of its own, op/<name>, located at the entry in its ops_*.cc file
// (`build/tests/autograd/op_registry_test --run_test=op/softmax` checks one op): each of its
// gradcheck cases passes in float64 element by element and in fast mode, and in float32 with
// the wide step, and two backward passes agree bit for bit in each. The other cases check the
// registry against ops.h (every declared op has an entry) and against docs/derivatives.md (the
// committed table is the generated one). Suite `grad` has a case per entry too: autograd::grad
// for every subset of the op's inputs equals backward()'s gradients (check_grad_subsets).
#include "autograd/op_registry.h"

#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <deque>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "autograd/engine.h"
#include "autograd/gradcheck.h"
#include "autograd/gradcheck_inputs.h"
#include "autograd/ops.h"
#include "tests/allclose.h"
#include "tests/test_util.h"

using namespace attograd;
using attograd::testing::allclose;
using attograd::testing::expect_throw_with;
using attograd::testing::read_file;

namespace {

const std::string kSource = ATTOGRAD_SOURCE_DIR;

// Every case of one entry, in the three modes.
void check_entry(const OpEntry& e) {
  BOOST_TEST(!e.cases.empty());
  GradcheckOptions fast;
  fast.fast_mode = true;
  const struct {
    const char* mode;
    DType dtype;
    GradcheckOptions options;
  } modes[] = {{"float64", DType::f64, {}},
               {"float64 fast mode", DType::f64, fast},
               {"float32, wide step", DType::f32, GradcheckOptions::float32()}};
  for (const GradcheckCase& c : e.cases) {
    for (const auto& m : modes) {
      Generator gen(0);
      const GradcheckResult r =
          run_gradcheck(c.fn, c.make_inputs(gen, m.dtype, GradcheckSizes{}), m.options);
      BOOST_TEST_INFO(e.name << " " << c.label << ", " << m.mode << ": " << r.message);
      BOOST_TEST(r.passed);
      BOOST_TEST_INFO(e.name << " " << c.label << ", " << m.mode);
      BOOST_TEST(r.repeat_ok);
    }
  }
}

// autograd::grad against backward() for one entry, generated for every op (issue 32: 23 of 27
// ops threw "the tensor is undefined" in grad() when another trainable leaf was in the graph).
// For each gradcheck case, in float64: the loss sum(f(inputs) * r) + sum(f(twins) * r), where
// the twins are copies of the differentiable inputs, trainable leaves that are never asked for,
// so every op also runs on a leaf whose gradient grad() must not compute. Then for every
// non-empty subset of the differentiable inputs, grad(loss, subset) equals the matching slice of
// backward()'s gradients; and grad(loss, {x, x}) gives x's gradient twice.
void check_grad_subsets(const OpEntry& e) {
  for (const GradcheckCase& c : e.cases) {
    Generator gen(0);
    const std::vector<Tensor> inputs = c.make_inputs(gen, DType::f64, GradcheckSizes{});
    std::vector<Tensor> twins;
    std::vector<size_t> trainable;  // positions of the differentiable inputs
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (!inputs[i].requires_grad()) {
        twins.push_back(inputs[i]);
        continue;
      }
      trainable.push_back(i);
      twins.push_back(inputs[i].detach().clone().set_requires_grad(true));
    }
    BOOST_REQUIRE(!trainable.empty());
    const Tensor r = Tensor::randn(c.fn(inputs).shape(), gen, DType::f64);
    const auto loss = [&] { return sum(c.fn(inputs) * r) + sum(c.fn(twins) * r); };

    for (size_t i : trainable) inputs[i].zero_grad();
    loss().backward();
    std::vector<std::vector<double>> expected(inputs.size());
    for (size_t i : trainable) expected[i] = inputs[i].grad().to_vector();
    for (size_t i : trainable) inputs[i].zero_grad();

    const size_t n = trainable.size();
    for (size_t mask = 1; mask < (size_t{1} << n); ++mask) {
      std::vector<Tensor> wanted;
      std::vector<size_t> positions;
      for (size_t k = 0; k < n; ++k)
        if (mask & (size_t{1} << k)) {
          wanted.push_back(inputs[trainable[k]]);
          positions.push_back(trainable[k]);
        }
      std::vector<Tensor> got;
      try {
        got = grad(loss(), wanted);
      } catch (const std::exception& error) {
        BOOST_ERROR(e.name << " " << c.label << ", inputs mask " << mask << ": " << error.what());
        continue;
      }
      BOOST_REQUIRE_EQUAL(got.size(), wanted.size());
      for (size_t k = 0; k < got.size(); ++k) {
        BOOST_TEST_INFO(e.name << " " << c.label << ", inputs mask " << mask << ", input "
                               << positions[k]);
        BOOST_TEST(allclose(got[k].to_vector(), expected[positions[k]], 1e-12, 1e-12));
      }
    }
    // grad() leaves every .grad as it was (zeroed above), and a repeated input gets its
    // gradient at both positions.
    for (size_t i : trainable) {
      BOOST_TEST_INFO(e.name << " " << c.label << ": grad() wrote into input " << i << "'s grad");
      BOOST_TEST(allclose(inputs[i].grad().to_vector(),
                          std::vector<double>(expected[i].size(), 0.0), 0, 0));
    }
    const Tensor& x = inputs[trainable[0]];
    std::vector<Tensor> twice;
    BOOST_CHECK_NO_THROW(twice = grad(loss(), {x, x}));
    BOOST_REQUIRE_EQUAL(twice.size(), 2u);
    for (const Tensor& g : twice) {
      BOOST_TEST_INFO(e.name << " " << c.label << ": grad(loss, {x, x})");
      BOOST_TEST(allclose(g.to_vector(), expected[trainable[0]], 1e-12, 1e-12));
    }
  }
}

OpEntry entry_named(const std::string& name) {
  return {.name = name,
          .forward = "`x`",
          .vjp = "`dx = dy`",
          .cases = {gradcheck_inputs::unary_case([](const Tensor& x) { return exp(x); })}};
}

}  // namespace

// A new op in ops.h without an entry fails here; so does an entry for an op ops.h lacks, and
// an entry out of ops.h's order (the order of `attograd gradcheck` and of the table).
BOOST_AUTO_TEST_CASE(every_op_in_ops_h_has_an_entry) {
  const std::string src = read_file(kSource + "/autograd/ops.h");
  std::set<std::string> declared;
  std::vector<std::string> declared_order, registered_order;
  const std::regex decl(R"(^(?:Tensor|std::vector<Tensor>) (\w+)\()", std::regex::multiline);
  for (auto it = std::sregex_iterator(src.begin(), src.end(), decl); it != std::sregex_iterator();
       ++it)
    if (declared.insert((*it)[1]).second) declared_order.push_back((*it)[1]);
  BOOST_TEST(declared.size() >= 30u);  // the parse found the table of contents
  std::set<std::string> registered;
  for (const OpEntry& e : op_registry().entries()) {
    registered.insert(e.name);
    registered_order.push_back(e.name);
  }
  if (declared == registered)
    BOOST_TEST(registered_order == declared_order, boost::test_tools::per_element());
  for (const std::string& op : declared) {
    BOOST_TEST_INFO(
        "op '" << op
               << "' is declared in ops.h but has no entry: register one in its ops_*.cc section");
    BOOST_TEST(registered.count(op) == 1u);
  }
  for (const std::string& op : registered) {
    BOOST_TEST_INFO("entry for '" << op << "', which ops.h does not declare");
    BOOST_TEST(declared.count(op) == 1u);
  }
}

BOOST_AUTO_TEST_CASE(entries_say_where_they_are_and_what_their_vjp_is) {
  for (const OpEntry& e : op_registry().entries()) {
    BOOST_TEST_INFO(e.name << " at " << e.file << ":" << e.line);
    BOOST_TEST(!e.vjp.empty());
    BOOST_TEST_INFO(e.name << " at " << e.file << ":" << e.line);
    BOOST_TEST(std::regex_match(e.file, std::regex(R"(ops_\w+\.cc)")));
    // The line is the entry's own, inside the file.
    const std::string text = read_file(kSource + "/autograd/" + e.file);
    BOOST_TEST(e.line > 0);
    BOOST_TEST(e.line <= std::count(text.begin(), text.end(), '\n'));
  }
  const OpEntry* softmax = op_registry().find("softmax");
  BOOST_REQUIRE(softmax != nullptr);
  BOOST_TEST(softmax->file == "ops_attention.cc");
  BOOST_TEST(softmax->kernel == "kernels/softmax");
  BOOST_TEST(op_registry().find("softmaxx") == nullptr);
}

BOOST_AUTO_TEST_CASE(registry_refuses_a_second_entry_of_one_name_and_an_entry_without_cases) {
  OpRegistry r;
  r.add(entry_named("twice"));
  BOOST_TEST(r.entries().at(0).file == "op_registry_test.cc");
  BOOST_TEST(r.entries().at(0).line == __LINE__ - 2);
  expect_throw_with<std::invalid_argument>([&] { r.add(entry_named("twice")); },
                                           "'twice' is registered twice");
  OpEntry empty = entry_named("no_cases");
  empty.cases.clear();
  expect_throw_with<std::invalid_argument>([&] { r.add(empty); },
                                           "needs a name, a forward and a case");
}

// The committed table is the generated one: edit the entries, then regenerate.
BOOST_AUTO_TEST_CASE(derivatives_md_holds_the_generated_table) {
  const std::string doc = read_file(kSource + "/docs/derivatives.md");
  const std::string committed(generated_region(doc));
  const std::string generated = derivatives_table(op_registry());
  if (committed == generated) return;
  // Name the first line that differs rather than print two tables.
  std::istringstream a(committed), b(generated);
  std::string la, lb;
  int line = 1;
  while (std::getline(a, la) && std::getline(b, lb) && la == lb) ++line;
  BOOST_ERROR(
      "docs/derivatives.md's op table differs from the op entries in autograd/ops_*.cc at table "
      "line "
      << line << ":\n  committed: " << la << "\n  generated: " << lb
      << "\nregenerate it with `build/cli/attograd gradcheck --markdown docs/derivatives.md`");
}

BOOST_AUTO_TEST_CASE(table_has_one_row_per_entry_and_escapes_bars) {
  OpRegistry r;
  OpEntry e = entry_named("abs");
  e.forward = "`|x|`";
  e.kernel = "kernels/elementwise";
  r.add(e);
  BOOST_TEST(derivatives_table(r) ==
             "| op | forward | VJP | file | extra tests |\n|---|---|---|---|---|\n"
             "| abs | `\\|x\\|` | `dx = dy` | op_registry_test.cc, kernels/elementwise |  |\n");
  // An entry with an autocast text adds the second table, of those entries only.
  OpEntry mm = entry_named("mm");
  mm.autocast = "`bf16(a) @ bf16(b)`";
  r.add(mm);
  BOOST_TEST(derivatives_table(r).ends_with(
      "| mm | `x` | `dx = dy` | op_registry_test.cc |  |\n"
      "\n| op | under `AutocastGuard(MatmulPrecision::bf16)`, f32 inputs (autograd/autocast.h) "
      "|\n|---|---|\n| mm | `bf16(a) @ bf16(b)` |\n"));
  // Every op a row, and the ops autocast changes (matmul, linear, linear_gelu,
  // linear_cross_entropy) a row of the second table, below a blank line and its header.
  const std::string table = derivatives_table(op_registry());
  long autocast = 0;
  for (const OpEntry& e : op_registry().entries()) autocast += e.autocast.empty() ? 0 : 1;
  BOOST_TEST(autocast == 4);
  BOOST_TEST(std::count(table.begin(), table.end(), '\n') ==
             static_cast<long>(op_registry().entries().size()) + 2 + 3 + autocast);
}

BOOST_AUTO_TEST_CASE(only_the_region_between_the_markers_is_replaced) {
  const std::string begin(kDerivativesBegin), end(kDerivativesEnd);
  const std::string doc =
      "# title\nprose above\n" + begin + "\nold table\n" + end + "\nprose below\n";
  BOOST_TEST(generated_region(doc) == "old table\n");
  BOOST_TEST(replace_generated_region(doc, "| new |\n") ==
             "# title\nprose above\n" + begin + "\n| new |\n" + end + "\nprose below\n");
  // An empty region, and END as the last line without a newline.
  BOOST_TEST(replace_generated_region(begin + "\n" + end, "t\n") == begin + "\nt\n" + end);
  // A marker inside a line is not a marker line.
  expect_throw_with<std::invalid_argument>(
      [&] { (void)generated_region("see " + begin + "\n" + end + "\n"); },
      "no BEGIN marker line; add the line <!-- BEGIN");
  expect_throw_with<std::invalid_argument>([&] { (void)generated_region(begin + "\ntable\n"); },
                                           "no END marker line");
  expect_throw_with<std::invalid_argument>(
      [&] { (void)replace_generated_region(end + "\n" + begin + "\n", ""); },
      "END marker line comes before the BEGIN line");
  // Two pairs: which one to fill would be a guess.
  expect_throw_with<std::invalid_argument>(
      [&] { (void)generated_region(doc + doc); },
      "more than one BEGIN marker line (" + begin + "); keep one pair of markers");
  // CRLF line ends: the markers are found, and the new table gets CRLF too.
  const std::string crlf = "above\r\n" + begin + "\r\nold\r\n" + end + "\r\nbelow\r\n";
  BOOST_TEST(generated_region(crlf) == "old\r\n");
  BOOST_TEST(replace_generated_region(crlf, "| a |\n| b |\n") ==
             "above\r\n" + begin + "\r\n| a |\r\n| b |\r\n" + end + "\r\nbelow\r\n");
}

// One test case per entry: suite `op`, case = the op's name, located at its entry.
bool init_unit_test() {
  namespace ut = boost::unit_test;
  ut::test_suite& master = ut::framework::master_test_suite();
  master.p_name.value = "op_registry";
  ut::test_suite* ops = BOOST_TEST_SUITE("op");
  master.add(ops);
  // Suite `grad`: autograd::grad for every subset of each op's inputs (check_grad_subsets).
  ut::test_suite* grads = BOOST_TEST_SUITE("grad");
  master.add(grads);
  static std::deque<std::string> files;  // Boost keeps a pointer to each test case's file name
  for (const OpEntry& e : op_registry().entries()) {
    const OpEntry* entry = &e;  // op_registry() lives until exit
    files.push_back("autograd/" + e.file);
    ops->add(ut::make_test_case([entry] { check_entry(*entry); }, e.name, files.back(), e.line));
    grads->add(
        ut::make_test_case([entry] { check_grad_subsets(*entry); }, e.name, files.back(), e.line));
  }
  return true;
}

int main(int argc, char* argv[]) {
  return boost::unit_test::unit_test_main(&init_unit_test, argc, argv);
}
