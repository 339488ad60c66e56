// Checkpoints: round trip, Hugging Face layout, all-or-nothing loading with clear errors, and the
// optimizer moments read only when resuming.
#define BOOST_TEST_MODULE checkpoint
#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "autograd/ops.h"
#include "gpt/checkpoint.h"
#include "tests/test_util.h"

using namespace attograd;
using namespace attograd::gpt;
using attograd::testing::expect_throw_with;

namespace {

std::filesystem::path temp_dir() {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("attograd_ckpt_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir;
}

Tensor ids(std::vector<int64_t> v) {
  const int64_t T = static_cast<int64_t>(v.size());
  return Tensor::from_ids(v, {1, T});
}

std::vector<double> all_params(const GPT& m) { return m.arena().params().to_vector(); }

}  // namespace

BOOST_AUTO_TEST_CASE(save_and_load_give_identical_logits) {
  const auto dir = temp_dir();
  for (PosEncoding pe : {PosEncoding::learned, PosEncoding::rope}) {
    GPTConfig c = preset("pico");
    c.pos_encoding = pe;
    GPT model(c, 21);
    const std::string path = (dir / "m.safetensors").string();
    save_checkpoint(path, model, "char", "abc");
    BOOST_TEST(!std::filesystem::exists(path + ".tmp"));
    const SafetensorsFile file = SafetensorsFile::read(path);
    const CheckpointInfo info = read_checkpoint_info(file);
    BOOST_TEST(info.tokenizer_kind == "char");
    BOOST_TEST(info.tokenizer_data == "abc");
    BOOST_TEST(info.config.n_layer == 3);
    BOOST_TEST(!info.training.has_value());
    const auto loaded = load_model(file);
    const Tensor x = ids({1, 5, 9, 2, 64, 0, 3, 3});
    BOOST_TEST(loaded->forward(x).logits.to_vector() == model.forward(x).logits.to_vector());
  }
  std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(conv1d_weights_are_stored_transposed_like_hugging_face) {
  const auto dir = temp_dir();
  GPT model(preset("pico"), 22);
  const std::string path = (dir / "m.safetensors").string();
  save_checkpoint(path, model, "char", "");
  const SafetensorsFile file = SafetensorsFile::read(path);
  // attn.c_proj is square: only the name says it must be transposed.
  const Tensor stored = file.tensor("h.0.attn.c_proj.weight", DType::f32);
  BOOST_TEST(stored.to_vector() == transpose(model.h[0]->attn->c_proj->weight.detach(), 0, 1).to_vector());
  BOOST_TEST((file.entries().at("h.1.mlp.c_fc.weight").shape == Shape{6, 24}));  // (in, out)
  BOOST_TEST((file.entries().at("wte.weight").shape == Shape{65, 6}));           // not a Conv1D
  std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(mismatched_checkpoint_names_key_and_shapes_and_leaves_model_unchanged) {
  const auto dir = temp_dir();
  GPT pico(preset("pico"), 1);
  const std::string path = (dir / "pico.safetensors").string();
  save_checkpoint(path, pico, "char", "");
  GPT femto(preset("femto"), 2);
  const std::vector<double> before = all_params(femto);
  expect_throw_with<std::runtime_error>([&] { load_weights(femto, SafetensorsFile::read(path)); },
                                        "tensor 'wte.weight' has shape (65, 6) but the model expects (65, 2)");
  BOOST_TEST(all_params(femto) == before);

  GPTConfig one_layer = preset("pico");
  one_layer.n_layer = 1;
  GPT small(one_layer, 3);
  const std::vector<double> small_before = all_params(small);
  expect_throw_with<std::runtime_error>([&] { load_weights(small, SafetensorsFile::read(path)); }, "unexpected tensor 'h.1.");
  BOOST_TEST(all_params(small) == small_before);

  GPTConfig four = preset("pico");
  four.n_layer = 4;
  GPT big(four, 3);
  expect_throw_with<std::runtime_error>([&] { load_weights(big, SafetensorsFile::read(path)); }, "missing tensor 'h.3.");
  std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(truncated_and_garbage_files_are_clear_errors) {
  const auto dir = temp_dir();
  GPT model(preset("pico"), 4);
  const std::string path = (dir / "m.safetensors").string();
  save_checkpoint(path, model, "char", "");
  const auto size = std::filesystem::file_size(path);
  std::filesystem::resize_file(path, size - 100);
  expect_throw_with<std::runtime_error>([&] { SafetensorsFile::read(path); }, "truncated");
  std::filesystem::resize_file(path, 20);
  expect_throw_with<std::runtime_error>([&] { SafetensorsFile::read(path); }, "truncated");
  { std::ofstream(path, std::ios::trunc) << "not a checkpoint at all"; }
  expect_throw_with<std::runtime_error>([&] { SafetensorsFile::read(path); }, "safetensors file");
  expect_throw_with<std::runtime_error>([&] { SafetensorsFile::read((dir / "missing").string()); }, "does not exist");
  expect_throw_with<std::runtime_error>([&] { SafetensorsFile::read(dir.string()); }, "not a regular file");
  { std::ofstream(path, std::ios::trunc) << std::string(64, '\x7f'); }  // random-looking bytes
  expect_throw_with<std::runtime_error>([&] { SafetensorsFile::read(path); }, "not a safetensors file");
  // A shape whose byte size overflows 64 bits must not wrap around to a small, valid-looking size.
  {
    const std::string header = R"({"w":{"dtype":"F32","shape":[4611686018427387922],"data_offsets":[0,72]}})";
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    const uint64_t n = header.size();
    f.write(reinterpret_cast<const char*>(&n), 8);
    f << header << std::string(72, '\0');
  }
  expect_throw_with<std::runtime_error>([&] { SafetensorsFile::read(path); }, "impossible shape");
  std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(hugging_face_prefix_and_buffers_are_accepted) {
  const auto dir = temp_dir();
  GPT model(preset("femto"), 5);
  SafetensorsWriter w;
  for (const auto& [name, t] : model.named_parameters()) {
    w.add("transformer." + name, is_conv1d_weight(name) ? transpose(t.detach(), 0, 1) : t.detach());
  }
  w.add("transformer.h.0.attn.bias", Tensor::ones({1, 1, 8, 8}));  // GPT-2's causal-mask buffer
  w.add("transformer.h.0.attn.masked_bias", Tensor::scalar(-1e4));
  w.add("lm_head.weight", model.wte->weight.detach());
  const std::string path = (dir / "hf.safetensors").string();
  w.write(path);
  GPT other(preset("femto"), 6);
  load_weights(other, SafetensorsFile::read(path));
  BOOST_TEST(all_params(other) == all_params(model));
  std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(failed_write_leaves_the_old_file) {
  const auto dir = temp_dir();
  GPT model(preset("femto"), 7);
  const std::string path = (dir / "m.safetensors").string();
  save_checkpoint(path, model, "char", "old");
  expect_throw_with<std::runtime_error>(
      [&] { save_checkpoint((dir / "no_such_dir" / "m.safetensors").string(), model, "char", "x"); }, "cannot write");
  BOOST_TEST(read_checkpoint_info(SafetensorsFile::read(path)).tokenizer_data == "old");
  std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(an_unconvertible_dtype_is_caught_before_any_parameter_is_written) {
  const auto dir = temp_dir();
  GPT model(preset("femto"), 8);
  SafetensorsWriter w;
  for (const auto& [name, t] : model.named_parameters()) {
    const Tensor stored = is_conv1d_weight(name) ? transpose(t.detach(), 0, 1) : t.detach();
    // The last parameter in arena order: every other one would already be copied if loading
    // did not check the whole file first.
    w.add(name, name == model.named_parameters().back().first ? Tensor::zeros(t.shape(), DType::i64) : stored);
  }
  const std::string path = (dir / "m.safetensors").string();
  w.write(path);
  GPT other(preset("femto"), 9);
  const std::vector<double> before = all_params(other);
  expect_throw_with<std::runtime_error>([&] { load_weights(other, SafetensorsFile::read(path)); },
                                        "tensor '" + model.named_parameters().back().first +
                                            "' is I64, which cannot be loaded into an f32 model");
  BOOST_TEST(all_params(other) == before);
  std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(the_optimizer_moments_load_only_when_asked) {
  const auto dir = temp_dir();
  GPT model(preset("femto"), 10);
  const int64_t n = model.arena().params().numel();
  TrainingState s;
  s.step = 4;
  s.batch_rng = "rng";
  s.adam_m = Tensor::full({n}, 0.5);
  s.adam_v = Tensor::full({n}, 0.25);
  s.adam_t = 4;
  s.train_options = "{}";
  const std::string path = (dir / "m.safetensors").string();
  save_checkpoint(path, model, "char", "abc", &s);
  const SafetensorsFile file = SafetensorsFile::read(path);
  const CheckpointInfo full = read_checkpoint_info(file);
  BOOST_REQUIRE(full.training.has_value());
  BOOST_TEST(full.training->adam_m.to_vector() == s.adam_m.to_vector());
  BOOST_TEST(full.training->adam_v.to_vector() == s.adam_v.to_vector());
  // Sampling and evaluation read the config and tokenizer without two model-sized copies.
  const CheckpointInfo light = read_checkpoint_info(file, Moments::skip);
  BOOST_REQUIRE(light.training.has_value());
  BOOST_TEST(light.training->step == 4);
  BOOST_TEST(!light.training->adam_m.defined());
  BOOST_TEST(!light.training->adam_v.defined());
  BOOST_TEST(light.tokenizer_data == "abc");
  std::filesystem::remove_all(dir);
}

namespace {

// Rewrites the checkpoint at `path` with metadata[key] = value (the tensors as they are), as a
// corrupt or hand-edited file would have it.
void set_metadata(const std::string& path, const std::string& key, const std::string& value) {
  SafetensorsWriter w;
  {
    const SafetensorsFile file = SafetensorsFile::read(path);
    w.metadata = file.metadata();
    for (const auto& [name, entry] : file.entries()) w.add(name, file.tensor(name, DType::f32));
  }
  w.metadata[key] = value;
  w.write(path);
}

}  // namespace

// Found by tests/fuzz (safetensors target): values in the metadata that escaped load_model as
// std::invalid_argument with no file named, instead of the documented std::runtime_error.
BOOST_AUTO_TEST_CASE(malformed_config_and_generator_state_in_metadata_are_clear_errors) {
  const auto dir = temp_dir();
  GPT model(preset("femto"), 11);
  const std::string path = (dir / "m.safetensors").string();
  save_checkpoint(path, model, "char", "abc");
  std::string config = SafetensorsFile::read(path).metadata().at("config");
  const size_t at = config.find("\"n_head\":1,");  // femto has one head
  BOOST_REQUIRE(at != std::string::npos);
  set_metadata(path, "config", config.replace(at, 11, "\"n_head\":0,"));
  expect_throw_with<std::runtime_error>([&] { load_model(SafetensorsFile::read(path)); },
                                        "malformed checkpoint metadata: GPTConfig: n_head must be positive, got 0");
  save_checkpoint(path, model, "char", "abc");
  set_metadata(path, "dropout_rng", "not a generator state");
  expect_throw_with<std::runtime_error>([&] { load_model(SafetensorsFile::read(path)); },
                                        "m.safetensors': malformed checkpoint metadata 'dropout_rng': Generator::set_state");
  std::filesystem::remove_all(dir);
}

// Found by tests/fuzz (hf_import target): an n_head that is not an integer escaped as
// nlohmann's type_error ("type must be number"), or was truncated (3.9 -> 3).
BOOST_AUTO_TEST_CASE(a_config_json_n_head_that_is_not_an_integer_is_refused) {
  const auto dir = temp_dir();
  GPTConfig c = preset("femto");
  c.n_embd = 4;
  c.n_head = 2;
  GPT model(c, 12);
  SafetensorsWriter w;
  for (const auto& [name, t] : model.named_parameters())
    w.add(name, is_conv1d_weight(name) ? transpose(t.detach(), 0, 1) : t.detach());
  const std::string path = (dir / "model.safetensors").string();
  w.write(path);
  for (const std::string n_head : {R"("two")", "3.9", "null"}) {
    std::ofstream(dir / "config.json") << R"({"n_head": )" << n_head << "}";
    expect_throw_with<std::runtime_error>([&] { load_hf_gpt2(SafetensorsFile::read(path)); },
                                          "config.json': n_head is " + n_head + ", not an integer; fix config.json or pass --n-head");
  }
  std::ofstream(dir / "config.json") << R"({"n_head": 2})";
  BOOST_TEST(load_hf_gpt2(SafetensorsFile::read(path))->config().n_head == 2);
  std::filesystem::remove_all(dir);
}
