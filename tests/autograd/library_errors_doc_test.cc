// docs/errors.md's "Library calls" rows, each run: the table (| bad input | call | message |) is
// read when the test starts, and every row's call is looked up by its text in kCalls below, where
// the same code runs; it must throw, and the message must hold the row's excerpt. A row whose call
// is not in kCalls fails (the document names code nobody runs), and so does a call in kCalls that
// no row names (an error the document no longer lists), so the two cannot drift. The CLI rows of
// the same document are tests/cli/errors_doc_test.cc's; this one needs nothing but autograd.
#define BOOST_TEST_MODULE library_errors_doc
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <exception>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "autograd/engine.h"
#include "autograd/ops.h"
#include "tests/markdown_table.h"
#include "tests/test_util.h"

using namespace attograd;

namespace {

const std::string kDoc = ATTOGRAD_ERRORS_DOC;
const std::string kSection = "## Library calls";
// The rows the section holds today: fewer means the parser found nothing, or a row was dropped
// (a decision, made here too).
constexpr size_t kMinRows = 7;

struct Row {
  std::string bad_input, call, message;
  size_t line = 0;
};

// The rows of the section's table, in order.
std::vector<Row> library_rows() {
  std::vector<Row> rows;
  for (const testing::TableRow& r :
       testing::section_table(kDoc, kSection, {"bad input", "call", "message"}))
    rows.push_back({r.cells[0], testing::markdown_code_span(r.cells[1]).value_or(""),
                    testing::markdown_code_span(r.cells[2]).value_or(""), r.line});
  return rows;
}

// The tensors the section's prose names, fresh for each call.
struct Inputs {
  Tensor w = Tensor::scalar(2, DType::f64);
  Tensor x = Tensor::scalar(3, DType::f64).set_requires_grad();
  Tensor v = Tensor::from_vector({0.5, -1}, {2}, DType::f64).set_requires_grad();
  Tensor weight = Tensor::from_vector({1, 2, 3, 4, 5, 6}, {3, 2}, DType::f64);
  Tensor x2 = Tensor::from_vector({1, -1}, {1, 2}, DType::f64).set_requires_grad();
  Tensor logits = Tensor::zeros({2, 3}, DType::f64);
  Tensor targets = Tensor::from_ids({0, 1}, {2});
  Tensor head = Tensor::zeros({3, 3}, DType::f64);
};

// Each row's call, keyed by its text in the table: the same code, run.
const std::map<std::string, std::function<void(Inputs&)>> kCalls = {
    {"Tensor y = mul(w, x); w.fill_(5); y.backward();",
     [](Inputs& in) {
       Tensor y = mul(in.w, in.x);
       in.w.fill_(5);
       y.backward();
     }},
    {"Tensor e = exp(v); e.fill_(5); sum(e).backward();",
     [](Inputs& in) {
       Tensor e = exp(in.v);
       e.fill_(5);
       sum(e).backward();
     }},
    {"Tensor y = linear(x2, weight); weight.copy_from(weight * 2.0); sum(y).backward();",
     [](Inputs& in) {
       Tensor y = linear(in.x2, in.weight);
       in.weight.copy_from(in.weight * 2.0);
       sum(y).backward();
     }},
    {"Tensor y = mul(w, x); w.data<double>()[0] = 5; w.bump_version(); y.backward();",
     [](Inputs& in) {
       Tensor y = mul(in.w, in.x);
       in.w.data<double>()[0] = 5;
       in.w.bump_version();
       y.backward();
     }},
    {"cross_entropy(logits, targets, -1, 1.5);",
     [](Inputs& in) { cross_entropy(in.logits, in.targets, -1, 1.5); }},
    {"nll_loss(logits, targets, -1, -0.1);",
     [](Inputs& in) { nll_loss(in.logits, in.targets, -1, -0.1); }},
    {"linear_cross_entropy(logits, head, targets, -1, NAN);",
     [](Inputs& in) { linear_cross_entropy(in.logits, in.head, in.targets, -1, NAN); }},
    {"where(Tensor::from_ids({1, 2}, {2}), v, v);",
     [](Inputs& in) {
       where(Tensor::from_ids({1, 2}, {2}), in.v, in.v);
     }},
    {"add(v, Tensor::zeros({2}));", [](Inputs& in) { add(in.v, Tensor::zeros({2})); }},
    {"cast(Tensor::scalar(NAN, DType::f64), DType::i64);",
     [](Inputs&) { cast(Tensor::scalar(NAN, DType::f64), DType::i64); }},
    {"select(weight, 0, 3);", [](Inputs& in) { select(in.weight, 0, 3); }},
};

}  // namespace

BOOST_AUTO_TEST_CASE(every_row_throws_its_message) {
  const std::vector<Row> rows = library_rows();
  BOOST_TEST(rows.size() >= kMinRows);
  for (const Row& row : rows) {
    BOOST_TEST_CONTEXT(kDoc << ":" << row.line << ": " << row.bad_input) {
      BOOST_TEST(!row.message.empty(), "the message is not one code span");
      const auto call = kCalls.find(row.call);
      if (call == kCalls.end()) {
        BOOST_ERROR("no code for the call `" << row.call << "`: add it to kCalls");
        continue;
      }
      Inputs in;
      std::string what;
      try {
        call->second(in);
      } catch (const std::exception& e) {
        what = e.what();
      }
      BOOST_TEST(!what.empty(), "the call did not throw");
      BOOST_TEST_INFO("message: " << what);
      BOOST_TEST(what.find(row.message) != std::string::npos);
    }
  }
}

BOOST_AUTO_TEST_CASE(every_call_has_its_row) {
  std::set<std::string> named;
  for (const Row& row : library_rows()) named.insert(row.call);
  for (const auto& [call, f] : kCalls)
    BOOST_TEST(named.count(call) == 1u, "`" << call << "` is in no row of " << kSection);
}
