// attograd: the command-line front end. Every error becomes one line on stderr and a
// non-zero exit code (2 for bad usage or input, 1 for a failed check or a diverged run).
#include <algorithm>
#include <exception>
#include <iostream>
#include <new>
#include <string>
#include <string_view>
#include <vector>

#include "autograd/kernels/targets.h"
#include "cli/command.h"
#include "gpt/io/fields.h"
#include "gpt/train/run.h"
#include "gpt/train/trainer.h"
#include "nn/io/utf8.h"
#include "options/field_options.h"

namespace {

// `attograd --version`: the release, the SIMD target the kernels run on this CPU, and the
// optional parts of this build: what a bug report needs.
std::string version_text() {
  namespace k = attograd::kernels;
  std::string targets;
  for (const std::string& t : k::supported_targets()) {
    if (!targets.empty()) targets += ", ";
    targets += t;
  }
  const auto yes = [](bool with) { return with ? "yes" : "no"; };
  return std::string("attograd ") + ATTOGRAD_VERSION + "\nkernels  Highway " +
         k::highway_version() + ", running " + k::active_target() +
         " (this CPU runs the compiled targets " + targets +
         ")\nparts    GPT-2 BPE tokenizer: " + yes(ATTOGRAD_WITH_BPE) +
         ", downloads: " + yes(ATTOGRAD_WITH_DOWNLOAD) + ", MPI: " + yes(ATTOGRAD_WITH_MPI);
}

// nanoGPT's names for attograd's options, for "did you mean": those the option tables' rows carry
// (Field::nanogpt_name), and sample.py's --start, which names `attograd sample`'s --prompt, an
// option of no table.
const std::vector<attograd::cli::FlagAlias>& nanogpt_flags() {
  static const std::vector<attograd::cli::FlagAlias> flags = [] {
    std::vector<attograd::cli::FlagAlias> f{{"--start", "--prompt"}};
    attograd::cli::add_nanogpt_flags<attograd::gpt::TrainOptions>(f);
    attograd::cli::add_nanogpt_flags<attograd::gpt::RunRequest>(f);
    return f;
  }();
  return flags;
}

}  // namespace

int main(int argc, char** argv) {
  // Under a launcher (mpirun -np N, srun) every rank runs this same program. Only `train` is
  // data-parallel; any other command would run N times, each printing (and writing the same
  // files). An error every rank meets is reported by rank 0 alone, in one write (mpirun
  // interleaves the ranks' output at the granularity of their writes).
  const bool quiet_rank = attograd::gpt::launched_rank() != 0;
  auto report = [quiet_rank](const std::string& message) {
    if (!quiet_rank) std::cerr << "attograd: error: " + message + "\n" << std::flush;
  };
  CLI::App app{
      "attograd: a from-scratch C++ autograd engine for learning and teaching transformers"};
  app.require_subcommand(1);
  app.set_version_flag("--version", version_text);
  // The parser's usage errors with the prefix of every other error (one way an error reads,
  // whatever found it), then its hint to run --help.
  app.failure_message([](const CLI::App* a, const CLI::Error& e) {
    return "attograd: error: " + CLI::FailureMessage::simple(a, e);
  });
  int exit_code = 0;
  attograd::cli::add_train_command(app, exit_code);
  attograd::cli::add_sample_command(app, exit_code);
  attograd::cli::add_eval_command(app, exit_code);
  attograd::cli::add_export_command(app, exit_code);
  attograd::cli::add_ngram_command(app, exit_code);
  attograd::cli::add_info_command(app, exit_code);
  attograd::cli::add_tokenize_command(app, exit_code);
  attograd::cli::add_gradcheck_command(app, exit_code);
  attograd::cli::add_attention_command(app, exit_code);
  attograd::cli::add_graph_command(app, exit_code);
  attograd::cli::add_figure_command(app, exit_code);
  attograd::cli::refuse_empty_values(app);  // after every option exists
  // Every registered command but train runs in one process (--help is still shown).
  const bool wants_help = std::any_of(argv + 1, argv + argc, [](const char* arg) {
    return std::string_view(arg) == "--help" || std::string_view(arg) == "-h";
  });
  const auto registered = [&](std::string_view name) {
    return !app.get_subcommands([&](CLI::App* c) { return c->get_name() == name; }).empty();
  };
  // A word that names no command (`attograd trian`): the nearest command, as git says it; the
  // parser would say only "A subcommand is required".
  if (argc > 1 && argv[1][0] != '-' && !registered(argv[1])) {
    std::vector<std::string> names;
    for (const CLI::App* c : app.get_subcommands([](CLI::App*) { return true; }))
      names.push_back(c->get_name());
    const std::string near = attograd::gpt::nearest_name(argv[1], names);
    report("unknown command '" + attograd::nn::escape_controls(std::string(argv[1]).substr(0, 40)) +
           "'" + (near.empty() ? "" : " (did you mean '" + near + "'?)") + "; the commands are " +
           attograd::gpt::join_names(names, "and"));
    return 2;
  }
  if (argc > 1 && std::string_view(argv[1]) != "train" && registered(argv[1]) && !wants_help) {
    try {
      attograd::cli::refuse_several_ranks(argv[1]);
    } catch (const std::invalid_argument& e) {
      report(e.what());
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; every usage error exits 2 like any other bad input. A rank
    // of `train` joins the other ranks' set-up, so that an error only it met is still said, and
    // so does one asked for --help: leaving at once, it would keep the others waiting for ever.
    if (argc > 1 && std::string_view(argv[1]) == "train" && attograd::gpt::launched_ranks() > 1) {
      const attograd::gpt::Communicator* comm = nullptr;
      try {
        comm = &attograd::gpt::Communicator::world();
      } catch (const std::exception&) {  // a build without MPI: no other rank to tell
      }
      if (comm != nullptr && comm->size() > 1) {
        const auto say_alone = [&] { app.exit(e); };
        if (e.get_exit_code() != 0) {
          comm->fail_setup(e.what(), say_alone, std::cerr);
          return 2;
        }
        // --help (or --version) is a failure to set up too: asked on every rank (`mpirun -np 2
        // attograd train --help`), the text is printed once and the job exits 0; asked on some
        // ranks only (mpirun's `a : b` form), those say so and every rank exits 2.
        const int asking = comm->fail_setup(
            "--help stops this rank while the others set up to train; run `attograd train "
            "--help` without mpirun",
            say_alone, std::cerr);
        return asking == comm->size() ? 0 : 2;
      }
    }
    if (quiet_rank) return e.get_exit_code() == 0 ? 0 : 2;
    // An unknown option close to a known one: say which (nanoGPT's --batch_size=16).
    if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr) {
      const CLI::App* command = &app;
      std::vector<std::string> extras = app.remaining();  // an unknown option climbs up to app
      for (const CLI::App* sub : app.get_subcommands()) {
        command = sub;
        for (const std::string& extra : sub->remaining()) extras.push_back(extra);
      }
      // Every unknown option, each with its hint, once one has a hint at all: a nanoGPT
      // command line often holds several (--batch_size=16 --max_iters=2000).
      std::vector<std::string> unknown;
      bool hinted = false;
      bool after_option = false;  // the word before was an unknown --option without '='
      bool words = false;         // a word that is no option is among them
      for (const std::string& extra : extras) {
        if (extra.rfind("--", 0) != 0) {
          // A word that is no option's value: nanoGPT's positional config or a corpus file.
          if (!after_option && command->get_option_no_throw("--corpus") != nullptr) {
            unknown.push_back("'" + attograd::nn::escape_controls(extra.substr(0, 80)) +
                              "' (give a corpus as --corpus FILE; --config reads a JSON file "
                              "of settings, not nanoGPT's Python)");
            hinted = words = true;
          }
          after_option = false;
          continue;
        }
        after_option = extra.find('=') == std::string::npos;
        const std::string hint = attograd::cli::did_you_mean(*command, extra, nanogpt_flags());
        hinted |= !hint.empty();
        unknown.push_back(extra.substr(0, extra.find('=')) + hint);
      }
      if (hinted) {
        std::string listed;
        for (const std::string& u : unknown) {
          if (!listed.empty()) listed += "; ";
          listed += u;
        }
        report(std::string(words ? "unknown argument" : "unknown option") +
               (unknown.size() == 1 ? " " : "s ") + listed);
        return 2;
      }
    }
    return app.exit(e) == 0 ? 0 : 2;
  } catch (const std::bad_alloc&) {
    report(
        "out of memory: the model, batch or context is too large for this machine (reduce "
        "--batch-size, --block-size or the model size)");
    return 2;
  } catch (const std::exception& e) {
    report(e.what());
    return 2;
  }
  return exit_code;
}
