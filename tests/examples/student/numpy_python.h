// Which Python runs the NumPy exercise's tests, and on which input.
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

/// attention_by_hand's arguments for the NumPy exercise (S8), as docs/exercises.md and the
/// scripts' docstrings write them (student_track_messages checks each copy): the worked example's
/// Q and V with a K of its own. With Q = K (the worked example), S = Q Kᵀ is symmetric and a
/// script computing K Qᵀ agreed at every step (issue 34).
inline constexpr const char* kNumpyExerciseArgs =
    "--json --Q \"1,0;0,1;1,1\" --K \"0,1;1,1;1,0\" --V \"1,2;3,4;5,6\"";

}  // namespace attograd::testing
