// Which Python runs the NumPy exercise's tests.
#pragma once

#include <string>

#include "tests/cli/cli_run.h"

namespace attograd::testing {

/// The first of Debian's /usr/bin/python3 and the python3 on PATH that imports NumPy; empty
/// when neither does. Debian's python3-numpy (which scripts/install-deps.sh installs) serves
/// /usr/bin/python3, while a pyenv or venv python3 earlier on PATH may lack NumPy: the tests
/// must not skip the exercise for that.
inline std::string numpy_python() {
  for (const char* python : {"/usr/bin/python3", "python3"})
    if (run_program(python, "-c 'import numpy'").exit_code == 0) return python;
  return "";
}

}  // namespace attograd::testing
