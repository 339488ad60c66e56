// Options shared by the commands that load a corpus (train, eval, tokenize).
#include "cli/command.h"

namespace attograd::cli {

CLI::Option* add_keep_cr_flag(CLI::App* cmd, bool& keep_cr) {
  return cmd->add_flag("--keep-cr", keep_cr,
                       "keep a corpus file's CRLF and CR line ends as they are (by default each "
                       "becomes LF, so '\\r' "
                       "is never a token)");
}

}  // namespace attograd::cli
