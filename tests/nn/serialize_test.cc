// Saving and loading any nn::Module as safetensors (nn/serialize.h): a round trip, the
// strict refusal of a wrong file naming every problem with nothing written, the non-strict
// lists, dtype conversion, and both directions against PyTorch's load_state_dict and
// state_dict (tests/nn/torch_module_check.py, /usr/bin/python3 with torch).
#define BOOST_TEST_MODULE serialize
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "autograd/ops.h"
#include "nn/io/safetensors.h"
#include "nn/layers.h"
#include "nn/serialize.h"
#include "tests/cli/cli_run.h"
#include "tests/test_util.h"

using namespace attograd;
using namespace attograd::nn;
using attograd::testing::allclose;
using attograd::testing::expect_throw_with;
using attograd::testing::run_program;
using attograd::testing::TempDir;

namespace {

// The module of torch_module_check.py's Net, name for name: a buffer, then three children.
// Built as torch builds it: torch.nn.Linear's init from the default generator.
class Net : public nn::Module {
 public:
  Net() {
    scale = register_buffer("scale", Tensor::ones({2}, DType::f64));
    fc1 = register_module("fc1", std::make_shared<nn::Linear>(3, 4, true, DType::f64));
    norm = register_module("norm", std::make_shared<nn::LayerNorm>(4, DType::f64));
    fc2 = register_module("fc2", std::make_shared<nn::Linear>(4, 2, true, DType::f64));
  }
  Tensor forward(const Tensor& x) const {
    return mul(fc2->forward(tanh(norm->forward(fc1->forward(x)))), scale);
  }
  Tensor scale;
  std::shared_ptr<nn::Linear> fc1, fc2;
  std::shared_ptr<nn::LayerNorm> norm;
};

// Net with fc1 one wider and a layer more: a file of it is the wrong file for Net.
class Wider : public nn::Module {
 public:
  Wider() {
    fc1 = register_module("fc1", std::make_shared<nn::Linear>(3, 5, true, DType::f64));
    fc3 = register_module("fc3", std::make_shared<nn::Linear>(5, 2, false, DType::f32));
  }
  std::shared_ptr<nn::Linear> fc1, fc3;
};

std::vector<std::vector<double>> values_of(const nn::Module& m) {
  std::vector<std::vector<double>> out;
  for (const auto& [key, t] : m.state_dict()) out.push_back(t.to_vector());
  return out;
}

const Tensor kX = Tensor::from_vector({0.5, -1.0, 2.0, 1.5, 0.25, -0.75}, {2, 3}, DType::f64);

std::vector<double> parse_doubles(const std::string& line) {
  std::istringstream in(line);
  std::vector<double> v;
  for (double d; in >> d;) v.push_back(d);
  return v;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_module_round_trips_bit_for_bit) {
  const TempDir dir("serialize");
  manual_seed(1);
  Net a;
  a.scale.fill_(0.5);
  save_module(a, dir / "net.safetensors", {{"note", "kept"}});
  BOOST_TEST((dir.entries() == std::vector<std::string>{"net.safetensors"}));  // no temporary
  const nn::SafetensorsFile file = nn::SafetensorsFile::read(dir / "net.safetensors");
  BOOST_TEST(file.metadata().at("format") == "pt");
  BOOST_TEST(file.metadata().at("note") == "kept");
  BOOST_TEST(file.entries().size() == 7u);  // scale, fc1 (2), norm (2), fc2 (2)
  manual_seed(2);
  Net b;
  BOOST_TEST((values_of(b) != values_of(a)));
  const nn::LoadStateDictResult r = load_module(b, dir / "net.safetensors");
  BOOST_TEST(r.missing_keys.empty());
  BOOST_TEST(r.unexpected_keys.empty());
  BOOST_TEST((values_of(b) == values_of(a)));
  BOOST_TEST(b.forward(kX).to_vector() == a.forward(kX).to_vector());
}

// The wrong file: one error names the path and every problem, and the module is unchanged.
BOOST_AUTO_TEST_CASE(a_wrong_file_is_refused_naming_every_key) {
  const TempDir dir("serialize");
  Wider w;
  save_module(w, dir / "wider.safetensors");
  Net net;
  const auto before = values_of(net);
  try {
    load_module(net, dir / "wider.safetensors");
    BOOST_FAIL("expected std::runtime_error");
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    BOOST_TEST_MESSAGE(what);
    for (const std::string& needle : std::vector<std::string>{
             "'" + (dir / "wider.safetensors") +
                 "': load_state_dict: nothing was loaded from the file",
             "5 missing (in the module, not in the file): 'scale' (2,) f64, 'norm.weight' (4,) "
             "f64, "
             "'norm.bias' (4,) f64, 'fc2.weight' (2, 4) f64, 'fc2.bias' (2,) f64",
             "1 unexpected (in the file, not in the module): 'fc3.weight' (2, 5) F32",
             "2 mismatched: 'fc1.bias' is (5,) in the file but (4,) in the module, 'fc1.weight' is "
             "(5, 3) in the file but (4, 3) in the module"})
      BOOST_TEST(what.find(needle) != std::string::npos, "missing: " << needle);
  }
  BOOST_TEST((values_of(net) == before));
  // Not strict, the shapes still refuse; a file of the keys both have with others loads.
  expect_throw_with<std::runtime_error>(
      [&] { load_module(net, dir / "wider.safetensors", /*strict=*/false); }, "2 mismatched");
  BOOST_TEST((values_of(net) == before));
  nn::Linear fc2(4, 2, true, DType::f32);  // f32 values, loaded into f64 ones
  nn::SafetensorsWriter some;
  some.add("fc2.weight", fc2.weight);
  some.add("fc2.bias", fc2.bias);
  some.add("head.weight", Tensor::zeros({1}, DType::f64));
  some.write(dir / "some.safetensors");
  const nn::LoadStateDictResult r = load_module(net, dir / "some.safetensors", false);
  BOOST_TEST((r.missing_keys == std::vector<std::string>{"scale", "fc1.weight", "fc1.bias",
                                                         "norm.weight", "norm.bias"}));
  BOOST_TEST((r.unexpected_keys == std::vector<std::string>{"head.weight"}));
  BOOST_TEST(net.fc2->weight.to_vector() == fc2.weight.to_vector());  // f32 -> f64 exactly
  BOOST_TEST((values_of(net)[1] == before[1]));                       // fc1.weight kept
  // An I64 tensor where a float is expected does not convert.
  nn::SafetensorsWriter ids;
  ids.add("scale", Tensor::from_ids({1, 2}, {2}));
  ids.write(dir / "ids.safetensors");
  expect_throw_with<std::runtime_error>([&] { load_module(net, dir / "ids.safetensors", false); },
                                        "'scale' is I64 in the file, which does not convert to "
                                        "the module's f64");
  expect_throw_with<std::runtime_error>([&] { load_module(net, dir / "absent.safetensors"); },
                                        "does not exist");
}

// PyTorch reads what save_module wrote with load_state_dict(strict=True) and computes the same
// outputs; a file of torch's own state_dict loads strictly here and computes torch's outputs.
BOOST_AUTO_TEST_CASE(torch_loads_the_file_strictly_and_back) {
  if (run_program("/usr/bin/python3", "-c 'import torch, numpy'").exit_code != 0)
    return attograd::testing::skip_case(
        "/usr/bin/python3 with torch and numpy is not installed (apt-get install python3-torch)");
  const TempDir dir("serialize_torch");
  manual_seed(3);
  Net net;
  net.scale.fill_(-2.0);
  save_module(net, dir / "ours.safetensors");
  Wider w;  // and the strict refusal, seen from torch: a file of Wider is not Net's
  save_module(w, dir / "wider.safetensors");
  const auto run = run_program("/usr/bin/python3",
                               std::string(ATTOGRAD_SOURCE_DIR "/tests/nn/torch_module_check.py ") +
                                   (dir / "ours.safetensors") + " " + (dir / "torch.safetensors") +
                                   " " + (dir / "wider.safetensors"),
                               /*merge_stderr=*/true);
  BOOST_TEST_INFO(run.out);
  BOOST_TEST_REQUIRE(run.exit_code == 0);
  std::istringstream lines(run.out);
  std::string ours, theirs, refusal;
  std::getline(lines, ours);
  std::getline(lines, theirs);
  std::getline(lines, refusal);
  BOOST_TEST(allclose(net.forward(kX).to_vector(), parse_doubles(ours), 1e-12, 1e-12));
  Net from_torch;
  load_module(from_torch, dir / "torch.safetensors");
  BOOST_TEST(from_torch.scale.to_vector() == std::vector<double>(2, 3.0));
  BOOST_TEST(allclose(from_torch.forward(kX).to_vector(), parse_doubles(theirs), 1e-12, 1e-12));
  BOOST_TEST_INFO(refusal);
  BOOST_TEST(refusal.find("Missing key(s) in state_dict") != std::string::npos);
  BOOST_TEST(refusal.find("Unexpected key(s) in state_dict: \"fc3.weight\"") != std::string::npos);
}
