#!/usr/bin/env bash
# The companion page (web/): installs what it needs (emscripten, node), builds the WebAssembly
# module and the page into build-wasm/page/ (scripts/wasm.sh), and serves it on 127.0.0.1 with
# Python's small HTTP server. The page fetches nothing but its own files and works offline.
#   bash scripts/playground.sh           serve on port 8000 (ATTOGRAD_PORT=8123 for another)
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/wasm.sh --no-test
port=${ATTOGRAD_PORT:-8000}
echo
echo "attograd playground: http://127.0.0.1:$port/   (Ctrl-C stops the server)"
exec python3 -m http.server "$port" --bind 127.0.0.1 --directory build-wasm/page
