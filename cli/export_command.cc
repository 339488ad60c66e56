// `attograd export`: an attograd checkpoint written as a Hugging Face GPT-2 directory
// (model.safetensors and config.json) that transformers' GPT2LMHeadModel.from_pretrained loads as
// it is, and attograd's own --hf-gpt2 reads back. The export is the library's
// (gpt/model/hf_export.h): this file parses the options and prints what was written.
#include <cstdio>

#include "cli/command.h"
#include "gpt/model/hf_export.h"

namespace attograd::cli {

namespace {

struct ExportArgs {
  std::string checkpoint;
  std::string out;
  bool overwrite = false;
};

int run(const ExportArgs& a) {
  const gpt::HfExport r = gpt::export_checkpoint_to_hf(a.checkpoint, a.out, a.overwrite);
  std::printf("wrote   %s (%lld tensors, %lld parameters, F32)\n", r.files[0].c_str(),
              static_cast<long long>(r.tensors), static_cast<long long>(r.parameters));
  for (size_t i = 1; i < r.files.size(); ++i) std::printf("wrote   %s\n", r.files[i].c_str());
  // The char tokenizer lives only in the checkpoint: HF's GPT-2 tokenizer would give other ids.
  const std::string kind = gpt::open_checkpoint_tokenizer(a.checkpoint)->kind();
  if (kind != "gpt2")
    std::printf(
        "note    the model reads attograd's %s tokenizer's ids, not GPT-2's BPE: encode text "
        "with `attograd tokenize --checkpoint %s`, not Hugging Face's GPT-2 tokenizer\n",
        kind.c_str(), a.checkpoint.c_str());
  // eval --hf-gpt2 reads a corpus with GPT-2's tokenizer, so a char model's loss needs its own
  // ids (--ids): said here, or the line as printed fails on the vocabulary's size.
  std::printf(
      "load    GPT2LMHeadModel.from_pretrained(\"%s\") in transformers, or attograd eval "
      "--hf-gpt2 %s%s\n",
      a.out.c_str(), r.files[0].c_str(),
      kind == "gpt2" ? ""
                     : " --ids IDS (a file of the ids `attograd tokenize --checkpoint` gives)");
  return 0;
}

}  // namespace

void add_export_command(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<ExportArgs>();
  CLI::App* cmd = app.add_subcommand(
      "export",
      "write a checkpoint's GPT as a Hugging Face GPT-2 directory (model.safetensors, "
      "config.json, generation_config.json and the tokenizer: vocab.json and merges.txt, or "
      "char_vocab.json) for transformers' GPT2LMHeadModel.from_pretrained");
  cmd->add_option("--checkpoint", a->checkpoint,
                  "an attograd checkpoint of a GPT with learned positions (e.g. "
                  "runs/nano/ckpt.safetensors, or the run directory runs/nano)")
      ->required();
  cmd->add_option("--out", a->out,
                  "the directory to write the export into: new (created) or "
                  "empty, unless --overwrite")
      ->required()
      ->check(kOutputPath);
  cmd->add_flag("--overwrite", a->overwrite,
                "write into an --out that already holds files (model.safetensors and config.json "
                "are replaced, others left alone); never over the checkpoint being exported");
  cmd->footer(
      "Only the weights are written (no optimizer state), in Hugging Face's names and Conv1D "
      "layout, with GPT2Config's fields in config.json. A bigram or average model, and a GPT "
      "with rope or sinusoidal positions, have no GPT-2 counterpart and are refused.");
  cmd->callback([a, &exit_code] { exit_code = run(*a); });
}

}  // namespace attograd::cli
