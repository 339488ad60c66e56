#!/usr/bin/env bash
# Fuzzes each loader with libFuzzer (tests/fuzz/README.md): the fuzz targets come from the
# instrumented build shared with scripts/sanitize.sh (scripts/asan-build.sh: clang, ASan and
# UBSan, in build-asan/); runs each for ATTOGRAD_FUZZ_SECONDS seconds (default 60) from
# its seed corpus and saved crash inputs, as many targets at a time as there are cores
# (ATTOGRAD_FUZZ_JOBS), and prints each target's executions and coverage.
# What the fuzzing finds and keeps stays in build-fuzz/ (corpus/, crashes/, logs/).
# A crash fails the run and leaves its input in build-fuzz/crashes/<target>/: fix the bug, then
# add the input to tests/fuzz/regressions/<target>/, where CTest replays it in every build.
# Part of CI (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${ATTOGRAD_FUZZ_SECONDS:-60}"
bash scripts/asan-build.sh fuzzers  # nothing to do after scripts/sanitize.sh
bin=build-asan/tests/fuzz
mkdir -p build-fuzz

export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
# The harnesses write each input to a file in a directory of their own under $TMPDIR: on
# tmpfs (/dev/shm) that is 15 times faster than on disk for the file-reading targets. The
# whole directory goes at the end (what a crashed process leaves in it too).
if [ -d /dev/shm ] && [ -w /dev/shm ]; then
  TMPDIR=$(mktemp -d /dev/shm/attograd-fuzz.XXXXXX)
else
  TMPDIR=$(mktemp -d "$PWD/build-fuzz/tmp.XXXXXX")
fi
export TMPDIR
trap 'rm -rf "$TMPDIR"' EXIT

# The targets are listed once, in tests/fuzz/CMakeLists.txt, which writes them here.
mapfile -t targets < "$bin/fuzz_targets.txt"

# Fuzzes one target for $seconds and writes its line of the summary to build-fuzz/logs/. One
# libFuzzer process uses one core, so the targets run $jobs at a time (one per core: on CI's
# 2 cores, 10 targets x 25 s take 2 minutes, not 4), each in its own TMPDIR subdirectory.
fuzz_one() {
  local target=$1
  local work="build-fuzz/corpus/$target"  # what this and earlier runs found, grown from the seeds
  local crashes="build-fuzz/crashes/$target"
  local log="build-fuzz/logs/$target.log"
  mkdir -p "$work" "$crashes" "$(dirname "$log")" "$TMPDIR/$target"
  local dict=()
  [ -f "tests/fuzz/$target.dict" ] && dict=("-dict=tests/fuzz/$target.dict")
  echo "fuzzing $target for $seconds s (log: $log)"
  local status=ok
  if ! TMPDIR="$TMPDIR/$target" "$bin/fuzz_$target" -max_total_time="$seconds" -timeout=30 \
      -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$crashes/" "${dict[@]}" \
      "$work" "tests/fuzz/corpus/$target" "tests/fuzz/regressions/$target" >"$log" 2>&1; then
    # The input this run wrote (libFuzzer names it in its log), not an older one in $crashes.
    local artifact
    artifact=$(sed -n 's/^.*Test unit written to \(.*\)$/\1/p' "$log" | tail -n 1)
    status="FAILED: ${artifact:+crash input $artifact, }see $log"
    tail -n 40 "$log"
  fi
  # libFuzzer's last status line: "#N DONE cov: X ft: Y corp: U/S lim: L exec/s: E rss: R".
  local done_line runs cov ft corp rate
  done_line=$(grep -E '^#[0-9]+\s+DONE' "$log" | tail -n 1 || true)
  runs=$(sed -n 's/^stat::number_of_executed_units: //p' "$log" | tail -n 1)
  cov=$(grep -oE 'cov: [0-9]+' <<<"$done_line" | grep -oE '[0-9]+' || echo "?")
  ft=$(grep -oE 'ft: [0-9]+' <<<"$done_line" | grep -oE '[0-9]+' || echo "?")
  corp=$(grep -oE 'corp: [0-9]+' <<<"$done_line" | grep -oE '[0-9]+' || echo "?")
  rate=$(grep -oE 'exec/s: [0-9]+' <<<"$done_line" | grep -oE '[0-9]+' || echo "?")
  printf '%-16s %10s %8s %7s %7s %6s  %s\n' "$target" "${runs:-?}" "$rate" "$cov" "$ft" "$corp" \
    "$status" >"build-fuzz/logs/$target.summary"
}

jobs="${ATTOGRAD_FUZZ_JOBS:-$(nproc)}"
if ! [[ "$jobs" =~ ^[1-9][0-9]*$ ]]; then
  echo "fuzz.sh: ATTOGRAD_FUZZ_JOBS must be a whole number >= 1 (targets fuzzed at a time), got '$jobs'" >&2
  exit 2
fi
# Ctrl-C or a kill stops the running fuzzers too, and starts no more.
trap 'kill $(jobs -p) 2>/dev/null; exit 130' INT TERM
for target in "${targets[@]}"; do
  rm -f "build-fuzz/logs/$target.summary"
  fuzz_one "$target" &
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
done
wait

echo
printf '%-16s %10s %8s %7s %7s %6s  %s\n' target runs exec/s cov ft corpus result
failed=0
for target in "${targets[@]}"; do
  if [ -f "build-fuzz/logs/$target.summary" ]; then
    cat "build-fuzz/logs/$target.summary"
    grep -q '  ok$' "build-fuzz/logs/$target.summary" || failed=1
  else
    printf '%-16s %s\n' "$target" "FAILED: no summary (the fuzzing script itself failed)"
    failed=1
  fi
done
exit "$failed"
