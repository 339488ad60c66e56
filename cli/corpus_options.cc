// Options shared by the commands that load a corpus (train, eval, tokenize).
#include "cli/command.h"
#include "gpt/text/corpus.h"

namespace attograd::cli {

CLI::Option* add_keep_cr_flag(CLI::App* cmd, bool& keep_cr) {
  return cmd->add_flag("--keep-cr", keep_cr, gpt::kKeepCrHelp);
}

}  // namespace attograd::cli
