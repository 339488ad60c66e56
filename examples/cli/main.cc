// attograd: the command-line front end. Every error becomes one line on stderr and a
// non-zero exit code (2 for bad usage or input, 1 for a failed check or a diverged run).
#include <exception>
#include <iostream>

#include "examples/cli/command.h"

int main(int argc, char** argv) {
  CLI::App app{"attograd: a from-scratch C++ autograd engine for learning and teaching transformers"};
  app.require_subcommand(1);
  int exit_code = 0;
  attograd::cli::add_train_command(app, exit_code);
  attograd::cli::add_sample_command(app, exit_code);
  attograd::cli::add_eval_command(app, exit_code);
  attograd::cli::add_info_command(app, exit_code);
  attograd::cli::add_gradcheck_command(app, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    std::cerr << "attograd: error: " << e.what() << "\n";
    return 2;
  }
  return exit_code;
}
