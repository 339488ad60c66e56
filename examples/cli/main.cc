// attograd: the command-line front end. Every error becomes one line on stderr and a
// non-zero exit code (2 for bad usage or input, 1 for a failed check or a diverged run).
#include <unistd.h>
#include <algorithm>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <iostream>
#include <new>
#include <string>
#include <string_view>

#include "examples/cli/command.h"

int main(int argc, char** argv) {
  // How idle OpenMP workers wait between the parallel regions of a training step. Sleeping at once
  // (OMP_WAIT_POLICY=passive) makes every region pay a futex wake-up, which ate the second core's
  // gain: nano at 2 threads took 29.9 ms/step passive against 20.6 ms spinning for 10,000 rounds
  // first (GOMP_SPINCOUNT=10000, about a tenth of a millisecond) before sleeping; pico 2.38 vs
  // 1.89 ms (2-core reference VM, build/bench/train_bench). The bounded spin still sleeps through
  // longer gaps (evaluation, checkpoints, sampling). libgomp reads its settings once, when it is
  // loaded, before main runs, and has no call to change them later: so set the variable and
  // re-execute ourselves. Setting it earlier in-process does not work: the executable's
  // .preinit_array runs before libgomp's constructor, but also before libc's, which then resets
  // environ to the original block (glibc 2.36: environ is null in the preinit function, and libgomp
  // still reads 300000). A user's own OMP_WAIT_POLICY or GOMP_SPINCOUNT wins (the tests set
  // passive: ctest runs two programs on two cores); ATTOGRAD_NO_REEXEC=1 skips the re-execution
  // (under gdb or valgrind, which would otherwise follow a second image); if exec fails we simply
  // go on.
  // The executable's real path, not /proc/self/exe, is executed so that the process keeps its
  // name (ps, top, pgrep attograd), which the kernel takes from the executed file's name.
  const char* no_reexec = std::getenv("ATTOGRAD_NO_REEXEC");
  if (std::getenv("OMP_WAIT_POLICY") == nullptr && std::getenv("GOMP_SPINCOUNT") == nullptr &&
      (no_reexec == nullptr || std::string_view(no_reexec) != "1")) {
    std::error_code ec;
    const std::string self = std::filesystem::read_symlink("/proc/self/exe", ec).string();
    setenv("GOMP_SPINCOUNT", "10000", 1);
    execv(ec ? "/proc/self/exe" : self.c_str(), argv);
  }
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
  app.footer(
      "Environment: ATTOGRAD_NO_REEXEC=1 stops attograd from re-executing itself at start to set "
      "GOMP_SPINCOUNT=10000 (OpenMP workers spin briefly between parallel regions; faster on 2+ "
      "cores), "
      "e.g. under gdb or valgrind. Setting OMP_WAIT_POLICY or GOMP_SPINCOUNT yourself does the "
      "same.");
  int exit_code = 0;
  attograd::cli::add_train_command(app, exit_code);
  attograd::cli::add_sample_command(app, exit_code);
  attograd::cli::add_eval_command(app, exit_code);
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
    // of `train` joins the other ranks' set-up, so that an error only it met is still said.
    if (e.get_exit_code() != 0 && argc > 1 && std::string_view(argv[1]) == "train" &&
        attograd::gpt::launched_ranks() > 1) {
      const attograd::gpt::Communicator* comm = nullptr;
      try {
        comm = &attograd::gpt::Communicator::world();
      } catch (const std::exception&) {  // a build without MPI: no other rank to tell
      }
      if (comm != nullptr && comm->size() > 1) {
        const auto say_alone = [&] { app.exit(e); };
        return comm->fail_setup(e.what(), say_alone, std::cerr);
      }
    }
    if (quiet_rank) return e.get_exit_code() == 0 ? 0 : 2;
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
