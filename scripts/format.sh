#!/usr/bin/env bash
# Formats the C++ sources (*.cc, *.h) with clang-format 14 and the rules in .clang-format.
#   bash scripts/format.sh                 rewrites every file that differs, in place
#   bash scripts/format.sh --check         changes nothing; lists the files that differ and
#                                          fails (exit 1) if there is one
#   bash scripts/format.sh [--check] F...  only the files F...
# The files are the ones git knows of plus new ones it does not ignore (never build*/).
# Debian 12's clang-format-14 is installed first when missing (scripts/install-deps.sh --format):
# another version formats some constructs differently, so the check uses this one only.
set -euo pipefail
cd "$(dirname "$0")/.."

check=0
case "${1:-}" in
  --check) check=1; shift ;;
  -h | --help) sed -n '2,9p' "$0" | cut -c3-; exit 0 ;;
  -*) echo "format.sh: unknown option '$1' (use --check, or no option)" >&2; exit 2 ;;
esac
for f in "$@"; do
  [ -f "$f" ] || { echo "format.sh: no file '$f' (paths are relative to the repository root)" >&2; exit 2; }
done

bash scripts/install-deps.sh --format
clang_format=clang-format-14

if [ $# -gt 0 ]; then
  files=("$@")
else
  mapfile -t files < <(git ls-files --cached --others --exclude-standard -- '*.cc' '*.h' \
    | while read -r f; do [ -f "$f" ] && echo "$f"; done)
fi

if [ "$check" -eq 0 ]; then
  printf '%s\0' "${files[@]}" | xargs -0 -r "$clang_format" -i --style=file
  exit 0
fi

differ=()
for f in "${files[@]}"; do
  "$clang_format" --style=file "$f" | cmp -s - "$f" || differ+=("$f")
done
if [ ${#differ[@]} -gt 0 ]; then
  printf '%s\n' "${differ[@]}"
  echo "format.sh: ${#differ[@]} of ${#files[@]} files are not formatted (fix: bash scripts/format.sh)" >&2
  exit 1
fi
echo "format.sh: all ${#files[@]} files are formatted"
