#!/usr/bin/env bash
# Builds attograd without MPI (-DATTOGRAD_MPI=OFF, in build-nompi/) and runs the tests that
# differ there: communicator_test checks that a process is rank 0 of 1 and that a build without
# MPI refuses to train when a launcher starts it as several ranks; distributed_test must show as
# skipped; train_model_kinds_test trains each model kind through the binary. Part of CI
# (.ci/run): the other stages build with MPI, which scripts/install-deps.sh installs.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
cmake -S . -B build-nompi -G Ninja -DCMAKE_BUILD_TYPE=Release -DATTOGRAD_MPI=OFF >/dev/null
cmake --build build-nompi -j "$(nproc)" --target attograd_cli communicator_test distributed_test \
  train_model_kinds_test
ctest --test-dir build-nompi --output-on-failure -j "$(nproc)" \
  -R '^(communicator_test|distributed_test|train_model_kinds_test)$'
