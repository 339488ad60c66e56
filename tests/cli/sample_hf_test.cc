// `attograd sample --hf-gpt2`: a small random-weight GPT-2 written in Hugging Face's layout
// (transformer. prefix, Conv1D weights (in, out), attn.bias buffers, config.json beside it)
// with GPT-2's 50257-token vocabulary, sampled through the real binary with the BPE tokenizer.
#define BOOST_TEST_MODULE sample_hf
#include <unistd.h>
#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <fstream>

#include "autograd/ops.h"
#include "gpt/model/checkpoint.h"
#include "gpt/model/hf_import.h"
#include "gpt/model/sampler.h"
#include "gpt/text/bpe_tokenizer.h"
#include "tests/cli/cli_run.h"
#include "tests/gpt/model/hf_fixture.h"

using namespace attograd;
using namespace attograd::gpt;
using attograd::testing::contains;
using attograd::testing::run_cli;
using attograd::testing::write_small_hf_gpt2;

BOOST_AUTO_TEST_CASE(sample_from_a_hugging_face_layout_file) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("attograd_sample_hf_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  write_small_hf_gpt2(dir);
  const std::string path = (dir / "model.safetensors").string();

  // What the CLI must print: greedy generation through the importer and the BPE tokenizer.
  const auto loaded = load_hf_gpt2(nn::SafetensorsFile::read(path));
  BOOST_TEST(loaded->config().n_head == 2);
  const BpeTokenizer tok = BpeTokenizer::gpt2();
  GenerateOptions g;
  g.max_new_tokens = 20;  // past block_size 16 with the 2-token prompt: the cache is rebuilt
  g.sampling.temperature = 0;
  Generator sgen(1337);
  const std::vector<int64_t> ids = generate(*loaded, tok.encode("Hello world"), g, sgen);
  const std::string expected = tok.decode(ids);

  for (const char* cache : {"", " --no-kv-cache"}) {
    const auto r = run_cli("sample --hf-gpt2 " + path +
                           " --prompt \"Hello world\" --temperature 0 --max-new-tokens 20" + cache);
    BOOST_TEST_INFO(r.out);
    BOOST_TEST(r.exit_code == 0);
    BOOST_TEST(contains(
        r.out, "=== prompt \"Hello world\" | temperature 0 (greedy) ===\n" + expected + "\n"));
  }
  const auto both = run_cli("sample --hf-gpt2 " + path + " --checkpoint " + path);
  BOOST_TEST(both.exit_code == 2);
  BOOST_TEST(contains(both.out, "exactly one of --checkpoint"));
  std::filesystem::remove(dir / "config.json");  // n_embd 8 is no standard GPT-2 width
  const auto no_head = run_cli("sample --hf-gpt2 " + path + " --prompt hi");
  BOOST_TEST(no_head.exit_code == 2);
  BOOST_TEST(contains(no_head.out, "pass --n-head"));
  BOOST_TEST(run_cli("sample --hf-gpt2 " + path + " --n-head 2 --prompt hi --max-new-tokens 3")
                 .exit_code == 0);
  std::filesystem::remove_all(dir);
}
