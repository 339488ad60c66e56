// Checkpoints: round trip, Hugging Face layout, all-or-nothing loading with clear errors, and the
// optimizer moments read only when resuming.
#define BOOST_TEST_MODULE checkpoint
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <exception>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "autograd/ops.h"
#include "gpt/model/checkpoint.h"
#include "gpt/model/hf_import.h"
#include "tests/gpt/field_count.h"
#include "tests/gpt/model/training_state_fixture.h"
#include "tests/peak_memory.h"
#include "tests/test_util.h"

using namespace attograd;
using namespace attograd::gpt;
using attograd::testing::expect_throw_with;

namespace {

std::filesystem::path temp_dir() {
  const auto dir =
      std::filesystem::temp_directory_path() / ("attograd_ckpt_test_" + std::to_string(::getpid()));
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
    const nn::SafetensorsFile file = nn::SafetensorsFile::read(path);
    const CheckpointInfo info = read_checkpoint_info(file);
    BOOST_TEST(info.tokenizer_kind == "char");
    BOOST_TEST(info.tokenizer_data == "abc");
    BOOST_TEST(info.config.n_layer == 3);
    BOOST_TEST(!info.training.has_value());
    const auto loaded = load_model(file);
    const Tensor x = ids({1, 5, 9, 2, 64, 0, 3, 3});
    BOOST_TEST(loaded->forward(x).logits().to_vector() == model.forward(x).logits().to_vector());
  }
  std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(conv1d_weights_are_stored_transposed_like_hugging_face) {
  const auto dir = temp_dir();
  GPT model(preset("pico"), 22);
  const std::string path = (dir / "m.safetensors").string();
  save_checkpoint(path, model, "char", "");
  const nn::SafetensorsFile file = nn::SafetensorsFile::read(path);
  // attn.c_proj is square: only the name says it must be transposed.
  const Tensor stored = file.tensor("h.0.attn.c_proj.weight", DType::f32);
  BOOST_TEST(stored.to_vector() ==
             transpose(model.h[0]->attn->c_proj->weight.detach(), 0, 1).to_vector());
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
  expect_throw_with<std::runtime_error>(
      [&] { load_weights(femto, nn::SafetensorsFile::read(path)); },
      "'wte.weight' is (65, 6) in the file but (65, 2) in the module");
  BOOST_TEST(all_params(femto) == before);

  GPTConfig one_layer = preset("pico");
  one_layer.n_layer = 1;
  GPT small(one_layer, 3);
  const std::vector<double> small_before = all_params(small);
  expect_throw_with<std::runtime_error>(
      [&] { load_weights(small, nn::SafetensorsFile::read(path)); }, "not in the module): 'h.1.");
  BOOST_TEST(all_params(small) == small_before);

  GPTConfig four = preset("pico");
  four.n_layer = 4;
  GPT big(four, 3);
  expect_throw_with<std::runtime_error>([&] { load_weights(big, nn::SafetensorsFile::read(path)); },
                                        "missing (in the module, not in the file): 'h.3.");
  std::filesystem::remove_all(dir);
}

// Issue 31, kind 10: a checkpoint with a NaN weight or an infinite moment is refused when it is
// loaded, naming the tensor and the file, before any parameter is written; before, the NaN
// went into the model, and a resumed run's first loss was blamed on the learning rate.
BOOST_AUTO_TEST_CASE(a_nan_weight_or_an_infinite_moment_is_refused_at_load) {
  const auto dir = temp_dir();
  GPT pico(preset("pico"), 1);
  const std::string path = (dir / "nan.safetensors").string();
  // Element (1, 1) of the (18, 6) weight: index 19 of the file's Conv1D layout (6, 18).
  for (const auto& [name, p] : pico.named_parameters())
    if (name == "h.1.attn.c_attn.weight") p.data<float>()[7] = NAN;
  const int64_t n = pico.num_parameters();
  TrainingState state = attograd::testing::training_state(n, 3);
  state.adam_v.data<float>()[n - 1] = INFINITY;
  save_checkpoint(path, pico, "char", "", &state);
  const nn::SafetensorsFile file = nn::SafetensorsFile::read(path);

  GPT other(preset("pico"), 2);
  const std::vector<double> before = all_params(other);
  expect_throw_with<std::runtime_error>(
      [&] { load_weights(other, file); },
      "safetensors file '" + path +
          "': tensor 'h.1.attn.c_attn.weight' holds 1 NaN or infinite value (the first at flat "
          "index 19); the file is damaged, or was saved from a run that diverged");
  BOOST_TEST(all_params(other) == before);  // nothing written
  expect_throw_with<std::runtime_error>([&] { load_language_model(file); },
                                        "'h.1.attn.c_attn.weight' holds 1 NaN");
  // The moments are checked where they are read (train --resume), not when only the weights are.
  expect_throw_with<std::runtime_error>(
      [&] { read_checkpoint_info(file, Moments::load); },
      "tensor 'optimizer.v' holds 1 NaN or infinite value (the first at flat index " +
          std::to_string(n - 1) + "); AdamW's moments are damaged");
  BOOST_TEST(read_checkpoint_info(file, Moments::skip).training->step == 3);
  std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(truncated_and_garbage_files_are_clear_errors) {
  const auto dir = temp_dir();
  GPT model(preset("pico"), 4);
  const std::string path = (dir / "m.safetensors").string();
  save_checkpoint(path, model, "char", "");
  const auto size = std::filesystem::file_size(path);
  std::filesystem::resize_file(path, size - 100);
  expect_throw_with<std::runtime_error>([&] { nn::SafetensorsFile::read(path); }, "truncated");
  std::filesystem::resize_file(path, 20);
  expect_throw_with<std::runtime_error>([&] { nn::SafetensorsFile::read(path); }, "truncated");
  { std::ofstream(path, std::ios::trunc) << "not a checkpoint at all"; }
  expect_throw_with<std::runtime_error>([&] { nn::SafetensorsFile::read(path); },
                                        "safetensors file");
  expect_throw_with<std::runtime_error>(
      [&] { nn::SafetensorsFile::read((dir / "missing").string()); }, "does not exist");
  expect_throw_with<std::runtime_error>([&] { nn::SafetensorsFile::read(dir.string()); },
                                        "not a regular file");
  { std::ofstream(path, std::ios::trunc) << std::string(64, '\x7f'); }  // random-looking bytes
  expect_throw_with<std::runtime_error>([&] { nn::SafetensorsFile::read(path); },
                                        "not a safetensors file");
  // A shape whose byte size overflows 64 bits must not wrap around to a small, valid-looking size.
  {
    const std::string header =
        R"({"w":{"dtype":"F32","shape":[4611686018427387922],"data_offsets":[0,72]}})";
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    const uint64_t n = header.size();
    f.write(reinterpret_cast<const char*>(&n), 8);
    f << header << std::string(72, '\0');
  }
  expect_throw_with<std::runtime_error>([&] { nn::SafetensorsFile::read(path); },
                                        "impossible shape");
  std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(hugging_face_prefix_and_buffers_are_accepted) {
  const auto dir = temp_dir();
  GPT model(preset("femto"), 5);
  nn::SafetensorsWriter w;
  for (const auto& [name, t] : model.named_parameters()) {
    w.add("transformer." + name, is_conv1d_weight(name) ? transpose(t.detach(), 0, 1) : t.detach());
  }
  w.add("transformer.h.0.attn.bias", Tensor::ones({1, 1, 8, 8}));  // GPT-2's causal-mask buffer
  w.add("transformer.h.0.attn.masked_bias", Tensor::scalar(-1e4));
  w.add("lm_head.weight", model.wte->weight.detach());
  const std::string path = (dir / "hf.safetensors").string();
  w.write(path);
  GPT other(preset("femto"), 6);
  load_weights(other, nn::SafetensorsFile::read(path));
  BOOST_TEST(all_params(other) == all_params(model));
  std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(failed_write_leaves_the_old_file) {
  const auto dir = temp_dir();
  GPT model(preset("femto"), 7);
  const std::string path = (dir / "m.safetensors").string();
  save_checkpoint(path, model, "char", "old");
  expect_throw_with<std::runtime_error>(
      [&] {
        save_checkpoint((dir / "no_such_dir" / "m.safetensors").string(), model, "char", "x");
      },
      "cannot write");
  BOOST_TEST(read_checkpoint_info(nn::SafetensorsFile::read(path)).tokenizer_data == "old");
  std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(an_unconvertible_dtype_is_caught_before_any_parameter_is_written) {
  const auto dir = temp_dir();
  GPT model(preset("femto"), 8);
  nn::SafetensorsWriter w;
  for (const auto& [name, t] : model.named_parameters()) {
    const Tensor stored = is_conv1d_weight(name) ? transpose(t.detach(), 0, 1) : t.detach();
    // The last parameter in arena order: every other one would already be copied if loading
    // did not check the whole file first.
    w.add(name, name == model.named_parameters().back().first ? Tensor::zeros(t.shape(), DType::i64)
                                                              : stored);
  }
  const std::string path = (dir / "m.safetensors").string();
  w.write(path);
  GPT other(preset("femto"), 9);
  const std::vector<double> before = all_params(other);
  expect_throw_with<std::runtime_error>(
      [&] { load_weights(other, nn::SafetensorsFile::read(path)); },
      "'" + model.named_parameters().back().first +
          "' is I64 in the file, which does not convert to "
          "the module's f32");
  BOOST_TEST(all_params(other) == before);
  std::filesystem::remove_all(dir);
}

// The issue's example: a sparse file of U8 tensors with GPT-2's shapes (a few KB on disk) made
// the loader build a GPT of those shapes (about 190 MB here) before it named the dtype. The
// dtype is refused from the header now: a child process that tries the load must stay far
// below the model's size at its peak.
BOOST_AUTO_TEST_CASE(unconvertible_dtypes_are_refused_before_the_model_is_built) {
  const auto dir = temp_dir();
  const std::string path = (dir / "model.safetensors").string();
  // GPT-2 small's shapes, one block, every tensor U8 (1 byte per value).
  std::vector<std::pair<std::string, std::vector<int64_t>>> tensors{{"wte.weight", {50257, 768}},
                                                                    {"wpe.weight", {1024, 768}}};
  for (const auto& [name, shape] : std::vector<std::pair<std::string, std::vector<int64_t>>>{
           {"ln_1.weight", {768}},
           {"ln_1.bias", {768}},
           {"attn.c_attn.weight", {768, 2304}},
           {"attn.c_attn.bias", {2304}},
           {"attn.c_proj.weight", {768, 768}},
           {"attn.c_proj.bias", {768}},
           {"ln_2.weight", {768}},
           {"ln_2.bias", {768}},
           {"mlp.c_fc.weight", {768, 3072}},
           {"mlp.c_fc.bias", {3072}},
           {"mlp.c_proj.weight", {3072, 768}},
           {"mlp.c_proj.bias", {768}}})
    tensors.push_back({"h.0." + name, shape});
  tensors.push_back({"ln_f.weight", {768}});
  tensors.push_back({"ln_f.bias", {768}});
  nlohmann::json header;
  int64_t offset = 0;
  for (const auto& [name, shape] : tensors) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    header[name] = {{"dtype", "U8"}, {"shape", shape}, {"data_offsets", {offset, offset + n}}};
    offset += n;
  }
  const std::string text = header.dump();
  {
    std::ofstream out(path, std::ios::binary);
    const uint64_t size = text.size();
    out.write(reinterpret_cast<const char*>(&size), 8);
    out << text;
  }
  std::filesystem::resize_file(path, 8 + text.size() + static_cast<uintmax_t>(offset));  // sparse
  // 0: refused with the dtype named; 1: no error, 2: another error.
  const testing::MeasuredRun run = testing::run_measured([&] {
    try {
      load_hf_gpt2(nn::SafetensorsFile::read(path), 12);
    } catch (const std::runtime_error& e) {
      return std::string(e.what()).find("is U8, which cannot be loaded into an f32 model") !=
                     std::string::npos
                 ? 0
                 : 2;
    }
    return 1;
  });
  BOOST_TEST(run.exit_code == 0);
  BOOST_TEST((run.peak_kib >= 0 && run.peak_kib <= 64 * 1024), run.peak_kib << " KiB");
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
  const nn::SafetensorsFile file = nn::SafetensorsFile::read(path);
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
  BOOST_TEST(!light.training->val_loss.has_value());  // written without an evaluation
  std::filesystem::remove_all(dir);
}

// A checkpoint written at an evaluation records its val loss (best.safetensors knows what it is
// best by), to the bit, as JSON's shortest text for the double; one without the key (written
// before it existed, or at a step without an evaluation) reads as none.
BOOST_AUTO_TEST_CASE(the_val_loss_of_an_evaluation_is_read_back_to_the_bit) {
  const auto dir = temp_dir();
  GPT model(preset("femto"), 10);
  TrainingState s = attograd::testing::training_state(model.arena().params().numel(), 4);
  s.val_loss = 3.3623046875000004;
  const std::string path = (dir / "v.safetensors").string();
  save_checkpoint(path, model, "char", "abc", &s);
  const nn::SafetensorsFile file = nn::SafetensorsFile::read(path);
  BOOST_TEST(file.metadata().at("val_loss") == "3.3623046875000004");
  BOOST_TEST((read_checkpoint_info(file, Moments::skip).training->val_loss ==
              std::optional<double>(3.3623046875000004)));
  std::filesystem::remove_all(dir);
}

namespace {

// `text` with its one occurrence of `from` replaced by `to` (a hand edit of a checkpoint's
// config); fails the test if `from` is not there.
std::string edited(const std::string& text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  BOOST_REQUIRE_MESSAGE(at != std::string::npos, "'" + from + "' not in " + text);
  return text.substr(0, at) + to + text.substr(at + from.size());
}

// Copies the file at `from` to `to` with metadata `key` set to `value` and, if given, one more
// tensor: what a careless or hostile hand edit produces, valid as safetensors.
void copy_with(const std::string& from, const std::string& to, const std::string& key,
               const std::string& value, const std::string& extra_name = "",
               const Tensor& extra = Tensor()) {
  const nn::SafetensorsFile f = nn::SafetensorsFile::read(from);
  nn::SafetensorsWriter w;
  w.metadata = f.metadata();
  if (!key.empty()) w.metadata[key] = value;
  for (const auto& [name, e] : f.entries())
    w.add(name, f.tensor(name, e.dtype == "F64" ? DType::f64 : DType::f32));
  if (!extra_name.empty()) w.add(extra_name, extra);
  w.write(to);
}

// Rewrites the checkpoint at `path` with metadata[key] = value (the tensors as they are), as a
// corrupt or hand-edited file would have it.
void set_metadata(const std::string& path, const std::string& key, const std::string& value) {
  nn::SafetensorsWriter w;
  {
    const nn::SafetensorsFile file = nn::SafetensorsFile::read(path);
    w.metadata = file.metadata();
    for (const auto& [name, entry] : file.entries()) w.add(name, file.tensor(name, DType::f32));
  }
  w.metadata[key] = value;
  w.write(path);
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_config_that_disagrees_with_the_tensors_is_refused_before_allocating) {
  const auto dir = temp_dir();
  GPT pico(preset("pico"), 11);  // V 65, block 8, 3 layers, n_embd 6
  const std::string good = (dir / "pico.safetensors").string(),
                    bad = (dir / "bad.safetensors").string();
  save_checkpoint(good, pico, "char", "abc");
  const std::string config = nn::SafetensorsFile::read(good).metadata().at("config");
  const std::string where = "'" + bad + "': its config says ";
  // {edit of the config, what the error must say}: both values named, nothing allocated first
  // (n_layer 1,000,000 used to allocate blocks until memory ran out).
  const std::vector<std::pair<std::pair<std::string, std::string>, std::string>> cases = {
      {{"\"n_layer\":3", "\"n_layer\":1000000"},
       "n_layer is 1000000, expected an integer in [1, 1024]"},
      {{"\"n_layer\":3", "\"n_layer\":1000"},
       where + "n_layer 1000, but the file holds 3 block(s) (h.0 to h.2)"},
      {{"\"n_layer\":3", "\"n_layer\":2"},
       where + "n_layer 2, but the file holds 3 block(s) (h.0 to h.2)"},
      {{"\"vocab_size\":65", "\"vocab_size\":66"},
       where + "vocab_size 66 and n_embd 6, but wte.weight is (65, 6)"},
      {{"\"n_embd\":6", "\"n_embd\":3"},
       where + "vocab_size 65 and n_embd 3, but wte.weight is (65, 6)"},
      {{"\"block_size\":8", "\"block_size\":4096"},
       where + "block_size 4096 with learned positions, but wpe.weight is (8, 6)"},
      {{"\"learned\"", "\"rope\""},
       where + "rope positions, which have no table, but the file holds wpe.weight (8, 6)"},
  };
  for (const auto& [edit, needle] : cases) {
    copy_with(good, bad, "config", edited(config, edit.first, edit.second));
    BOOST_TEST_CONTEXT(edit.second) {
      expect_throw_with<std::runtime_error>([&] { load_model(nn::SafetensorsFile::read(bad)); },
                                            needle);
    }
  }
  // Tiny tensors under the right names must not make the model allocate a huge n_embd: wte and
  // wpe (1, 4096) agree with the config, but one block of n_embd 4096 needs 12 * 4096^2 values.
  nn::SafetensorsWriter w;
  w.metadata = nn::SafetensorsFile::read(good).metadata();
  w.metadata["config"] =
      R"({"bias":true,"block_size":1,"dropout":0.0,"n_embd":4096,"n_head":1,"n_layer":1,)"
      R"("pos_encoding":"learned","vocab_size":1})";
  w.add("wte.weight", Tensor::zeros({1, 4096}));
  w.add("wpe.weight", Tensor::zeros({1, 4096}));
  w.add("h.0.ln_1.weight", Tensor::zeros({1}));
  w.write(bad);
  expect_throw_with<std::runtime_error>([&] { load_model(nn::SafetensorsFile::read(bad)); },
                                        where +
                                            "n_layer 1 and n_embd 4096, at least 201326592 block "
                                            "parameters, but the file holds 8193 values in all");
  std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(config_and_counts_in_the_metadata_are_read_strictly) {
  const auto dir = temp_dir();
  GPT pico(preset("pico"), 12);
  TrainingState s;
  s.step = 4;
  s.batch_rng = Generator(1).state();
  s.adam_m = Tensor::zeros({pico.arena().params().numel()});
  s.adam_v = Tensor::zeros({pico.arena().params().numel()});
  s.adam_t = 4;
  s.train_options = "{}";
  const std::string good = (dir / "pico.safetensors").string(),
                    bad = (dir / "bad.safetensors").string();
  save_checkpoint(good, pico, "char", "abc", &s);
  const std::string config = nn::SafetensorsFile::read(good).metadata().at("config");
  const std::string what = "'" + bad + "': checkpoint metadata 'config'";
  const std::string any_int = ", expected an integer in [1, ";  // each field's own max
  // {metadata key, its new value, what the error must say}
  const std::vector<std::tuple<std::string, std::string, std::string>> cases = {
      {"config", edited(config, "\"n_head\":3", "\"n_head\":3.9"),
       what + ": n_head is 3.9" + any_int},
      {"config", edited(config, "\"n_layer\":3", "\"n_layer\":9223372036854775808"),
       what + ": n_layer is 9223372036854775808" + any_int},
      {"config", edited(config, "\"n_layer\":3", "\"n_layer\":18446744073709551616"),
       what + ": n_layer is 1.8446744073709552e+19" + any_int},
      {"config", edited(config, "\"n_embd\":6", "\"n_embd\":\"6\""),
       what + ": n_embd is \"6\"" + any_int},
      {"config", edited(config, "\"n_head\":3", "\"n_head\":-3"),
       what + ": n_head is -3" + any_int},
      {"config", edited(config, "\"n_head\":3", "\"n_head\":4"),
       what + ": GPTConfig: n_head 4 must divide n_embd 6"},
      {"config", edited(config, "\"bias\":true", "\"bias\":1"),
       what + ": bias is 1, expected true or false"},
      {"config", edited(config, "\"dropout\":0.0", "\"dropout\":1e400"),
       what + " is not valid JSON"},
      {"config", edited(config, "\"bias\":true", "\"bias\":true,\"tie_weights\":false"),
       what + " has an unknown field 'tie_weights'"},
      {"config", edited(config, "\"n_head\":3,", ""), what + " has no 'n_head'"},
      {"config", edited(config, "\"bias\":true", "\"bias\":true,\"bias\":false"),
       what + " has the key 'bias' twice"},
      {"config", std::string(100'000, '[') + std::string(100'000, ']'),
       what + " nests deeper than 32 levels"},
      {"config", "n_layer=3", what + " is not valid JSON"},
      {"tokenizer", R"({"kind":1,"data":"abc"})",
       "checkpoint metadata 'tokenizer': kind is 1, expected a string"},
      {"step", "12abc", "checkpoint metadata 'step' is '12abc', expected a count in [0, 2^63)"},
      {"step", "-1", "checkpoint metadata 'step' is '-1', expected a count"},
      {"step", " 4", "checkpoint metadata 'step' is ' 4', expected a count"},
      {"adam_t", "9223372036854775808",
       "checkpoint metadata 'adam_t' is '9223372036854775808', expected a count"},
      {"val_loss", "nan", "checkpoint metadata 'val_loss' is 'nan', expected a finite number"},
      {"val_loss", "1e400", "checkpoint metadata 'val_loss' is '1e400', expected a finite"},
      {"val_loss", " 3.25", "checkpoint metadata 'val_loss' is ' 3.25', expected a finite"},
      {"val_loss", "3.25x", "checkpoint metadata 'val_loss' is '3.25x', expected a finite"},
      {"val_loss", "", "checkpoint metadata 'val_loss' is '', expected a finite number"},
  };
  for (const auto& [key, value, needle] : cases) {
    copy_with(good, bad, key, value);
    BOOST_TEST_CONTEXT(key << " = " << value.substr(0, 200)) {
      expect_throw_with<std::runtime_error>(
          [&] { read_checkpoint_info(nn::SafetensorsFile::read(bad)); }, needle);
    }
  }
  copy_with(good, bad, "dropout_rng", "garbage");
  expect_throw_with<std::runtime_error>(
      [&] { load_model(nn::SafetensorsFile::read(bad)); },
      "'" + bad + "': checkpoint metadata 'dropout_rng': Generator::set_state: malformed");
  std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(every_tensor_is_consumed_or_known_and_checked) {
  const auto dir = temp_dir();
  GPTConfig no_bias = preset("femto");
  no_bias.bias = false;
  GPT femto(no_bias, 13);
  const std::string good = (dir / "femto.safetensors").string(),
                    bad = (dir / "bad.safetensors").string();
  save_checkpoint(good, femto, "char", "abc");
  const Tensor wte = femto.wte->weight.detach();
  // Names that a suffix or prefix match used to let through, each now refused by name (by
  // load_weights itself: load_model would refuse h.1 earlier, as a second block).
  const std::vector<std::pair<std::string, Tensor>> strays = {
      {"h.0.attn.c_attn.bias", Tensor::zeros({6})},   // ends in "attn.bias", but is a real bias
      {"h.1.attn.bias", Tensor::ones({1, 1, 8, 8})},  // a mask buffer of a block the model lacks
      {"optimizer.x", Tensor::zeros({1})},
      {"transformer.lm_head.weight", wte},
  };
  for (const auto& [name, t] : strays) {
    copy_with(good, bad, "", "", name, t);
    BOOST_TEST_CONTEXT(name) {
      GPT other(no_bias, 14);
      expect_throw_with<std::runtime_error>(
          [&] { load_weights(other, nn::SafetensorsFile::read(bad)); },
          "not in the module): '" + name + "'");
    }
  }
  // An untied head: evaluating with wte instead would silently change every prediction.
  copy_with(good, bad, "", "", "lm_head.weight", neg(wte));
  expect_throw_with<std::runtime_error>(
      [&] { load_model(nn::SafetensorsFile::read(bad)); },
      "lm_head.weight (65, 2) F32 is not a byte-for-byte copy of wte.weight (65, 2) "
      "F32: the file has an untied output head");
  copy_with(good, bad, "", "", "lm_head.weight",
            Tensor::from_vector(wte.to_vector(), wte.shape(),
                                DType::f64));  // equal values, another dtype: not tied storage
  expect_throw_with<std::runtime_error>([&] { load_model(nn::SafetensorsFile::read(bad)); },
                                        "lm_head.weight (65, 2) F64 is not");
  // The known extras load: a tied head and the mask buffers of blocks the model has.
  copy_with(good, bad, "", "", "lm_head.weight", wte);
  BOOST_TEST(all_params(*load_model(nn::SafetensorsFile::read(bad))) == all_params(femto));
  copy_with(good, bad, "", "", "h.0.attn.masked_bias", Tensor::scalar(-1e4));
  BOOST_TEST(all_params(*load_model(nn::SafetensorsFile::read(bad))) == all_params(femto));
  std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(hugging_face_config_json_is_read_strictly_and_must_agree_with_the_tensors) {
  const auto dir = temp_dir() / "hf";
  std::filesystem::create_directories(dir);
  GPTConfig c = preset("pico");  // n_layer 3, n_embd 6, block 8, V 65
  GPT model(c, 15);
  nn::SafetensorsWriter w;
  for (const auto& [name, t] : model.named_parameters())
    w.add("transformer." + name, is_conv1d_weight(name) ? transpose(t.detach(), 0, 1) : t.detach());
  const std::string path = (dir / "model.safetensors").string();
  w.write(path);
  const nn::SafetensorsFile file = nn::SafetensorsFile::read(path);
  const std::string config_json = (dir / "config.json").string();
  const auto write_config = [&](const std::string& text) {
    std::ofstream(config_json, std::ios::trunc) << text;
  };
  const std::string what = "'" + config_json + "' (beside '" + path + "')";

  // GPT-2's own fields, as the parity fixture's config.json has them, load.
  write_config(
      R"({"activation_function": "gelu_new", "layer_norm_epsilon": 1e-05, "model_type": "gpt2",
                   "n_ctx": 8, "n_embd": 6, "n_head": 3, "n_layer": 3, "n_positions": 8, "vocab_size": 65,
                   "n_inner": null, "tie_word_embeddings": true, "scale_attn_weights": true, "attn_pdrop": 0.1})");
  BOOST_TEST(infer_hf_gpt2_config(file).n_head == 3);
  // An override that agrees is taken; one that contradicts config.json is refused (it evaluated
  // another model and exited 0).
  BOOST_TEST(infer_hf_gpt2_config(file, 3).n_head == 3);
  expect_throw_with<std::runtime_error>(
      [&] { infer_hf_gpt2_config(file, 1); },
      "': --n-head 1 contradicts n_head 3 in the config.json beside it; drop --n-head");
  BOOST_TEST(all_params(*load_hf_gpt2(file)) == all_params(model));

  // {config.json, what the error must say}
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"n_head": 3,)",
       what + " is not valid JSON"},  // exists but broken: not "there is no config.json"
      {"", what + " is not valid JSON"},
      {R"({"n_head": 3.9})",
       what + ": n_head is 3.9, expected an integer in [1, 9223372036854775807]"},
      {R"({"n_head": 9223372036854775808})",
       what + ": n_head is 9223372036854775808, expected an integer"},
      {R"({"n_head": "3"})", what + ": n_head is \"3\", expected an integer"},
      {R"({"n_head": 3, "n_head": 1})", what + " has the key 'n_head' twice"},
      {R"([3])", what + " is [3], not a JSON object"},
      {R"({"n_head": 3, "n_layer": 12})", what + " says n_layer 12, but the tensors give 3"},
      {R"({"n_head": 3, "n_layer": 3.0})", what + ": n_layer is 3.0, expected an integer"},
      {R"({"n_head": 3, "n_embd": 768})", what + " says n_embd 768, but the tensors give 6"},
      {R"({"n_head": 3, "vocab_size": 50257})",
       what + " says vocab_size 50257, but the tensors give 65"},
      {R"({"n_head": 3, "n_positions": 1024})",
       what + " says n_positions 1024, but the tensors give 8"},
      {R"({"n_head": 3, "n_inner": 48})",
       what + " says n_inner 48; attograd's GPT-2 MLP is 4 * n_embd = 24 wide"},
      {R"({"n_head": 3, "activation_function": "relu"})",
       what +
           " says activation_function 'relu'; attograd's GPT-2 computes GELU's tanh approximation"},
      {R"({"n_head": 3, "layer_norm_epsilon": 1e-6})",
       what + " says layer_norm_epsilon 1e-06; attograd's GPT-2 computes with 1e-05"},
      {R"({"n_head": 3, "tie_word_embeddings": false})",
       what + " says tie_word_embeddings false; attograd's GPT-2 only computes with true"},
      {R"({"n_head": 3, "scale_attn_by_inverse_layer_idx": true})",
       what + " says scale_attn_by_inverse_layer_idx true"},
      {R"({"n_head": 3, "scale_attn_weights": false})", what + " says scale_attn_weights false"},
      {R"({"n_head": 3, "model_type": "gpt_neo"})",
       what + " says model_type 'gpt_neo'; only GPT-2"},
      {R"({"n_layer": 3})",
       "n_head is not stored in the weights, the config.json beside the file has none, and n_embd "
       "6 "
       "is not a standard GPT-2 size; pass --n-head"},
      {R"({"n_head": 4})", "GPTConfig: n_head 4 must divide n_embd 6"},
      {"{\"n_head\": " + std::string(100'000, '[') + std::string(100'000, ']') + "}",
       what + " nests deeper than 32 levels"},
  };
  for (const auto& [text, needle] : cases) {
    write_config(text);
    BOOST_TEST_CONTEXT(text.substr(0, 200)) {
      expect_throw_with<std::runtime_error>([&] { infer_hf_gpt2_config(file); }, needle);
    }
  }
  // --n-head decides n_head where config.json has none, but a config.json that is there is still
  // read and checked, and one whose n_head differs is a contradiction, refused.
  write_config(R"({"n_head": 3.9})");
  expect_throw_with<std::runtime_error>([&] { infer_hf_gpt2_config(file, 3); }, "n_head is 3.9");
  write_config(R"({"n_head": 2})");
  expect_throw_with<std::runtime_error>([&] { infer_hf_gpt2_config(file, 3); },
                                        "--n-head 3 contradicts n_head 2 in the config.json");
  write_config(R"({"n_layer": 3})");
  BOOST_TEST(infer_hf_gpt2_config(file, 3).n_head == 3);
  std::filesystem::remove(config_json);
  std::filesystem::create_directory(config_json);
  expect_throw_with<std::runtime_error>([&] { infer_hf_gpt2_config(file, 3); },
                                        what + " is not a regular file");
  std::filesystem::remove(config_json);
  BOOST_TEST(infer_hf_gpt2_config(file, 3).n_head ==
             3);  // no config.json at all: --n-head suffices
  // An --n-head that breaks a rule: the error names the file, and the rule is nested in it, for
  // the CLI to say in its options' words.
  try {
    infer_hf_gpt2_config(file, 4);
    BOOST_FAIL("expected std::runtime_error");
  } catch (const std::runtime_error& e) {
    BOOST_TEST(std::string(e.what()) == "'" + file.path() +
                                            "': GPTConfig: n_head 4 must divide n_embd 6 "
                                            "(head_dim = n_embd / n_head)");
    try {
      std::rethrow_if_nested(e);
      BOOST_FAIL("expected a nested ConfigRuleError");
    } catch (const ConfigRuleError& rule) {
      BOOST_TEST((rule.rule() == ConfigRule::head_divides_embd));
      BOOST_TEST(rule.config().n_head == 4);
    }
  }
  std::filesystem::remove_all(dir.parent_path());
}

// Found by tests/fuzz (safetensors target): values in the metadata that escaped load_model as
// std::invalid_argument with no file named, instead of the documented std::runtime_error.
BOOST_AUTO_TEST_CASE(malformed_config_and_generator_state_in_metadata_are_clear_errors) {
  const auto dir = temp_dir();
  GPT model(preset("femto"), 11);
  const std::string path = (dir / "m.safetensors").string();
  save_checkpoint(path, model, "char", "abc");
  std::string config = nn::SafetensorsFile::read(path).metadata().at("config");
  const size_t at = config.find("\"n_head\":1,");  // femto has one head
  BOOST_REQUIRE(at != std::string::npos);
  set_metadata(path, "config", config.replace(at, 11, "\"n_head\":0,"));
  expect_throw_with<std::runtime_error>(
      [&] { load_model(nn::SafetensorsFile::read(path)); },
      "m.safetensors': checkpoint metadata 'config': n_head is 0, expected an integer in [1,");
  save_checkpoint(path, model, "char", "abc");
  set_metadata(path, "dropout_rng", "not a generator state");
  expect_throw_with<std::runtime_error>(
      [&] { load_model(nn::SafetensorsFile::read(path)); },
      "m.safetensors': checkpoint metadata 'dropout_rng': Generator::set_state");
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
  nn::SafetensorsWriter w;
  for (const auto& [name, t] : model.named_parameters())
    w.add(name, is_conv1d_weight(name) ? transpose(t.detach(), 0, 1) : t.detach());
  const std::string path = (dir / "model.safetensors").string();
  w.write(path);
  for (const std::string n_head : {R"("two")", "3.9", "null"}) {
    std::ofstream(dir / "config.json") << R"({"n_head": )" << n_head << "}";
    expect_throw_with<std::runtime_error>([&] { load_hf_gpt2(nn::SafetensorsFile::read(path)); },
                                          "config.json' (beside '" + path + "'): n_head is " +
                                              n_head + ", expected an integer in [1,");
  }
  std::ofstream(dir / "config.json") << R"({"n_head": 2})";
  BOOST_TEST(load_hf_gpt2(nn::SafetensorsFile::read(path))->config().n_head == 2);
  std::filesystem::remove_all(dir);
}

// GPTConfig's JSON fields come from its table (config.h); config_to_json writes a key for every
// field of the struct and config_from_json reads each back.
BOOST_AUTO_TEST_CASE(every_config_field_is_written_and_read_back) {
  GPTConfig c;  // every field away from its default, and valid
  c.vocab_size = 65, c.block_size = 16, c.n_layer = 2, c.n_head = 2, c.n_embd = 8;
  c.dropout = 0.25, c.bias = false, c.pos_encoding = PosEncoding::rope;
  const nlohmann::json written = nlohmann::json::parse(config_to_json(c));
  BOOST_TEST(written.size() == attograd::testing::field_count<GPTConfig>());
  // (Each field at the ends of its range, through the CLI and validate() too, is
  // tests/cli/field_options_test.cc's: a new field needs no line here.)
  BOOST_TEST(written.at("pos_encoding") == "rope");
  BOOST_TEST((config_from_json(config_to_json(c), "config") == c));
  nlohmann::json missing = written;
  missing.erase("bias");
  expect_throw_with<std::runtime_error>([&] { config_from_json(missing.dump(), "config"); },
                                        "config has no 'bias'");
  nlohmann::json unknown = written;
  unknown["pos_encoding"] = "alibi";
  expect_throw_with<std::runtime_error>(
      [&] { config_from_json(unknown.dump(), "config"); },
      "config: pos_encoding is \"alibi\", expected learned, sinusoidal or rope");
}

// Loading weights writes the parameters in place: between a forward and its backward, the
// gradient would be that of weights no longer there, so backward() refuses (version counters).
BOOST_AUTO_TEST_CASE(loading_weights_between_forward_and_backward_is_refused) {
  const auto dir = temp_dir();
  GPTConfig c = preset("femto");
  c.vocab_size = 65;
  GPT model(c, 23);
  const std::string path = (dir / "f.safetensors").string();
  save_checkpoint(path, model, "char", "");
  const Tensor loss = model.forward(ids({1, 2, 3}), ids({2, 3, 4})).loss;
  load_weights(model, nn::SafetensorsFile::read(path));
  expect_throw_with<std::logic_error>([&] { loss.backward(); }, "changed in place since");
  // Loaded before the forward: the graph saw the loaded weights, and backward runs.
  model.zero_grad();
  const Tensor again = model.forward(ids({1, 2, 3}), ids({2, 3, 4})).loss;
  again.backward();
  BOOST_TEST(std::isfinite(again.item()));
  std::filesystem::remove_all(dir);
}
