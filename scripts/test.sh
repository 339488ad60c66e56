#!/usr/bin/env bash
# Builds attograd (Release) and runs every test through CTest. Installs missing packages first.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)"
status=0
ctest --test-dir build --output-on-failure -j "$(nproc)" | tee build/ctest.log || status=$?

# Name every skipped case and why, also when another test failed. Cases labelled `data` compare
# against figures measured on ../shared/data (Tiny Shakespeare) and skip without that folder;
# cases labelled `download` are about a build with downloads or one without, so each build runs
# one side and skips the other (tests/CMakeLists.txt).
mapfile -t skipped < <(sed -n 's/^[[:space:]]*[0-9]* - \(.*\) (Skipped)$/\1/p' build/ctest.log)
if ((${#skipped[@]} > 0)); then
  # The names of each label's tests, listed once (ctest -N prints "  Test  #N: NAME").
  data_tests=$(ctest --test-dir build -N -L '^data$' | awk '/Test +#/ { print $NF }')
  download_tests=$(ctest --test-dir build -N -L '^download$' | awk '/Test +#/ { print $NF }')
  echo "note: ${#skipped[@]} test cases were skipped (each one's reason: ctest --test-dir build -V -R NAME):"
  for name in "${skipped[@]}"; do
    if grep -qxF "$name" <<<"$data_tests" && [ ! -f ../shared/data/tinyshakespeare.txt ]; then
      why="needs ../shared/data/tinyshakespeare.txt beside the checkout"
    elif grep -qxF "$name" <<<"$download_tests"; then
      why="about the other kind of build (with or without downloads)"
    else
      why="see its reason"
    fi
    echo "  $name: $why"
  done
fi
exit "$status"
