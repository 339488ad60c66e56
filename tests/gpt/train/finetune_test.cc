// Fine-tuning (gpt/train/run.h's init_from, `attograd train --init-from`) from a Hugging Face
// GPT-2 file (random weights written in HF's layout by tests/gpt/model/hf_fixture.h) or from an
// attograd run, set up in-process as the CLI sets it up, with the model opened again from the
// files (Session::evaluate, what `attograd eval` prints) as the independent measure. llm.c's
// CPU quick start is this: GPT-2's val loss at step 0, then after N steps.
//
// The trainer evaluates eval_iters random batches of batch_size windows; Session::evaluate (and
// `eval`) every window of the split once. They coincide exactly when the val split is one window
// (block_size + 1 tokens) and one batch of one row is drawn: the corpus is cut to that length.
#define BOOST_TEST_MODULE finetune
#include <boost/test/unit_test.hpp>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <string>

#include "gpt/model/hf_export.h"
#include "gpt/model/open_model.h"
#include "gpt/text/bpe_tokenizer.h"
#include "gpt/train/run.h"
#include "tests/files.h"
#include "tests/gpt/model/hf_fixture.h"
#include "tests/gpt/train/train_run.h"
#include "tests/test_util.h"

using namespace attograd::gpt;
namespace nn = attograd::nn;
using attograd::testing::contains;
using attograd::testing::TempDir;
using attograd::testing::train_to_end;

namespace {

// A corpus whose GPT-2 BPE encoding has 161 to 170 tokens, so that its val split (the last
// ceil(10%)) is 17 tokens: one window of the fixture's block_size 16.
std::string one_window_val_corpus(const TempDir& dir) {
  const char* words[] = {" the", " cat", " sat", " on", " a", " mat", "."};
  const BpeTokenizer bpe = BpeTokenizer::gpt2();
  std::string text = "Once";
  for (size_t i = 0; bpe.encode(text).size() < 161; ++i) text += words[i % 7];
  return dir.file("corpus.txt", text);
}

// Fine-tuning the fixture's GPT-2 on `corpus` into `out`: one thread, batches of one sequence,
// one evaluation batch, evaluations only at the start and the end.
RunRequest fine_tune(const std::string& init_from, const std::string& corpus,
                     const std::string& out, int64_t steps) {
  RunRequest rq = attograd::testing::femto(corpus, out, steps);
  rq.config = ConfigOverrides();  // the file's
  rq.init_from = init_from;
  rq.options.batch_size = 1;
  rq.options.eval_iters = 1;
  rq.options.learning_rate = 1e-2;
  return rq;
}

TrainOptions recorded_options(const std::string& checkpoint) {
  return TrainOptions::from_json(
      nn::SafetensorsFile::read(checkpoint).metadata().at("train_options"));
}

}  // namespace

BOOST_AUTO_TEST_CASE(step_zero_is_the_hf_files_val_loss_and_training_lowers_it) {
  const TempDir dir("finetune_hf");
  std::filesystem::create_directories(dir.path / "hf");
  attograd::testing::write_small_hf_gpt2(dir.path / "hf");
  const std::string hf = dir / "hf/model.safetensors";
  const std::string corpus = one_window_val_corpus(dir);

  std::ostringstream log, err;
  const auto run = start(fine_tune(hf, corpus, dir / "run", 40), Communicator::world(), log);
  BOOST_TEST(contains(log.str(), "init    weights of the Hugging Face GPT-2 file " + hf +
                                     ", gpt2 tokenizer; step 0, fresh AdamW state"));
  BOOST_TEST(run->tokenizer().kind() == "gpt2");
  BOOST_TEST(run->model().config().n_head == 2);           // from the config.json beside the file
  BOOST_TEST_REQUIRE(run->data().size(Split::val) == 17);  // one window of block_size 16

  // The trainer's step-0 evaluation is the loss of the file's own weights, bit for bit: the
  // same window through the same forward as Session::evaluate on the Hugging Face file (what
  // `attograd eval --hf-gpt2 --corpus` prints for the val split).
  const EvalResult at_start = run->trainer().evaluate();
  const SequenceLoss hf_loss = open_hf_gpt2(hf).evaluate(run->data().tokens(Split::val));
  BOOST_TEST(at_start.val_loss == hf_loss.mean_nll);

  BOOST_TEST_REQUIRE(run->train(log, err) == 0);
  char step0[64];
  std::snprintf(step0, sizeof step0, "val loss %.4f", at_start.val_loss);
  BOOST_TEST(contains(log.str(), "eval at step 0: train loss"));
  BOOST_TEST(contains(log.str(), step0));
  // Training lowers it: 40 steps on the repeated phrase the val window continues.
  BOOST_TEST_MESSAGE("val loss " << at_start.val_loss << " -> " << run->result().val_loss);
  BOOST_TEST(run->result().val_loss < at_start.val_loss - 1.0);
  // The checkpoint holds the trained weights (opened from the run directory, as eval
  // --checkpoint does, they give the final evaluation) and records where they started.
  const SequenceLoss trained =
      open_checkpoint(dir / "run").evaluate(run->data().tokens(Split::val));
  BOOST_TEST(run->result().val_loss == trained.mean_nll);
  BOOST_TEST(recorded_options(run->checkpoint_path()).init_from ==
             std::filesystem::absolute(hf).lexically_normal().string());

  // attograd, exported to Hugging Face, fine-tuned again from the directory: the same weights,
  // so the new run's step 0 is this run's final evaluation, bit for bit.
  export_checkpoint_to_hf(dir / "run", dir / "exported");
  std::ostringstream again_log;
  const auto again = start(fine_tune(dir / "exported", corpus, dir / "again", 1),
                           Communicator::world(), again_log);
  BOOST_TEST(contains(again_log.str(), "Hugging Face GPT-2 file " + (dir / "exported") +
                                           "/model.safetensors, gpt2 tokenizer"));
  BOOST_TEST(again->trainer().evaluate().val_loss == run->result().val_loss);
}

BOOST_AUTO_TEST_CASE(a_fine_tuning_run_resumes_bit_for_bit) {
  const TempDir dir("finetune_resume");
  std::filesystem::create_directories(dir.path / "hf");
  attograd::testing::write_small_hf_gpt2(dir.path / "hf");
  const std::string hf = dir / "hf/model.safetensors", corpus = one_window_val_corpus(dir);
  auto whole = train_to_end(fine_tune(hf, corpus, dir / "whole", 6));
  const double whole_loss = whole->result().val_loss;
  whole.reset();  // its lock on the run directory goes with it

  RunRequest first = fine_tune(hf, corpus, dir / "halves", 3);
  first.options.lr_decay_steps = 6;  // the schedule of the whole run, cut in two
  train_to_end(first);
  std::string second_log;
  const auto resumed = train_to_end(attograd::testing::resume_to(dir / "halves", 6), &second_log);
  BOOST_TEST(contains(second_log, "resume  step 3 of "));
  BOOST_TEST(resumed->tokenizer().kind() == "gpt2");
  BOOST_TEST(resumed->result().val_loss == whole_loss);  // bit for bit
  BOOST_TEST(recorded_options(resumed->checkpoint_path()).init_from ==
             std::filesystem::absolute(hf).lexically_normal().string());
}

BOOST_AUTO_TEST_CASE(an_attograd_run_continues_with_its_tokenizer_from_its_last_evaluation) {
  const TempDir dir("finetune_run");
  std::string text;
  for (int i = 0; i < 100; ++i) text += "to be or not to be, that is the question.\n";
  const std::string corpus = dir.file("corpus.txt", text);
  RunRequest source;
  source.corpus = corpus;
  source.out_dir = dir / "source";
  source.config.preset = "pico";
  source.threads = 1;
  source.options.max_steps = 5;
  source.options.batch_size = 2;
  source.options.eval_iters = 2;
  source.options.eval_interval = 0;
  source.options.log_interval = 1000;
  const auto first = train_to_end(source);

  // The same evaluation batches (same seed, batch size and eval_iters) on the same weights: the
  // new run's step 0 is the source run's final evaluation, exactly.
  RunRequest tune = source;
  tune.config = ConfigOverrides();
  tune.out_dir = dir / "tuned";
  tune.init_from = dir / "source";
  tune.options.max_steps = 3;
  std::ostringstream log;
  const auto tuned = start(tune, Communicator::world(), log);
  BOOST_TEST(contains(log.str(), "init    weights of the attograd checkpoint " +
                                     (dir / "source/ckpt.safetensors") +
                                     " (trained 5 steps), char tokenizer; step 0"));
  BOOST_TEST(tuned->tokenizer().serialize() == first->tokenizer().serialize());
  BOOST_TEST((tuned->model().config() == first->model().config()));
  const EvalResult at_start = tuned->trainer().evaluate();
  BOOST_TEST(at_start.step == 0);
  BOOST_TEST(at_start.val_loss == first->result().val_loss);
  BOOST_TEST(at_start.train_loss == first->result().train_loss);
}

// A bigram's or average model's file reads no dropout, so --dropout with --init-from of one
// would be ignored: it is refused as `train --model bigram --dropout` is, naming the file, and
// leaves no out_dir behind. --block-size, which both read, is taken.
BOOST_AUTO_TEST_CASE(init_from_a_bigram_refuses_the_dropout_it_would_ignore) {
  const TempDir dir("finetune_bigram");
  std::string text;
  for (int i = 0; i < 50; ++i) text += "to be or not to be, that is the question.\n";
  const std::string corpus = dir.file("corpus.txt", text);
  for (const ModelKind kind : {ModelKind::bigram, ModelKind::average}) {
    const std::string name = model_kind_name(kind);
    RunRequest source = attograd::testing::femto(corpus, dir / name, 2);
    source.model = kind;
    train_to_end(source);
    RunRequest tune = source;
    tune.model = ModelKind::gpt;  // the file's kind decides
    tune.out_dir = dir / (name + "_tuned");
    tune.init_from = dir / name;
    tune.config = ConfigOverrides();  // the file's
    tune.config.set(&GPTConfig::dropout, 0.1);
    std::ostringstream log;
    attograd::testing::expect_throw_with<std::invalid_argument>(
        [&] { start(tune, Communicator::world(), log); },
        "--dropout does not apply to --model " + name + " (" +
            (kind == ModelKind::bigram
                 ? "a table of next-token logits: it reads only --block-size"
                 : "embeddings averaged over the context: no blocks, heads or dropout") +
            "; the model in " + (dir / name) + "/ckpt.safetensors is one); drop it");
    BOOST_TEST(!std::filesystem::exists(dir.path / (name + "_tuned")));
    tune.config = ConfigOverrides();
    tune.config.set(&GPTConfig::block_size, int64_t{8});
    std::ostringstream taken;
    BOOST_TEST((start(tune, Communicator::world(), taken)->model().kind() == kind));
  }
}

// llm.c's way: GPT-2 keeps its context (block_size 16 here) and trains on shorter sequences
// (block_size 8, llm.c's T); an override that changes the architecture is refused and leaves no
// out_dir behind.
BOOST_AUTO_TEST_CASE(a_fine_tuning_run_trains_on_shorter_sequences_than_the_context) {
  const TempDir dir("finetune_short");
  std::filesystem::create_directories(dir.path / "hf");
  attograd::testing::write_small_hf_gpt2(dir.path / "hf");
  const std::string hf = dir / "hf/model.safetensors", corpus = one_window_val_corpus(dir);
  RunRequest rq = fine_tune(dir / "hf", corpus, dir / "run", 2);
  rq.options.batch_size = 2;
  rq.config.set(&GPTConfig::block_size, int64_t{8});
  std::string log;
  train_to_end(rq, &log);
  BOOST_TEST(contains(log, "init    weights of the Hugging Face GPT-2 file " + hf));
  BOOST_TEST(contains(log, "block_size 16, vocab_size 50257"));  // the model keeps its context
  BOOST_TEST(contains(log, "train   2 steps, batch 2 x 8 tokens"));
  const TrainOptions recorded = recorded_options(dir / "run/ckpt.safetensors");
  BOOST_TEST(recorded.block_size == 8);
  BOOST_TEST(recorded.max_steps == 2);
  RunRequest wider = fine_tune(hf, corpus, dir / "refused", 2);
  wider.config.set(&GPTConfig::n_embd, int64_t{16});
  std::ostringstream refused;
  attograd::testing::expect_throw_with<std::invalid_argument>(
      [&] { start(wider, Communicator::world(), refused); },
      "--n-embd would change its architecture");
  BOOST_TEST(!std::filesystem::exists(dir.path / "refused"));
}

// The config options --init-from takes are GPTConfig's rows marked kKeepsWeights, no more and no
// fewer: RunRequest::validate refuses every other row with a flag, naming it, before any file is
// read (the list of names in run.cc and the rows are two writings of one fact until run.cc
// reads the trait).
BOOST_AUTO_TEST_CASE(init_from_takes_exactly_the_config_rows_that_keep_the_weights) {
  size_t kept = 0;
  GPTConfig::for_each_field([&](const auto& f) {
    if (f.flag == nullptr) return;
    RunRequest rq;
    rq.init_from = "model.safetensors";
    rq.config.given.insert(f.name);
    std::string refusal;
    try {
      rq.validate();
    } catch (const std::invalid_argument& e) {
      refusal = e.what();
    }
    BOOST_TEST_INFO(f.flag << ": " << refusal);
    BOOST_TEST(contains(refusal, std::string(f.flag) + " would change") == !f.keeps_weights());
    kept += f.keeps_weights();
  });
  BOOST_TEST(kept == 3u);  // --block-size, --n-head, --dropout
}
