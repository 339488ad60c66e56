#!/usr/bin/env bash
# The companion page (web/): installs what it needs (emscripten, node), builds the WebAssembly
# module and the page into build-wasm/page/ (scripts/wasm.sh), and serves it on 127.0.0.1 with
# Python's small HTTP server. The page fetches nothing but its own files and works offline.
#   bash scripts/playground.sh           serve on port 8000 (ATTOGRAD_PORT=8123 for another)
# The first build takes several minutes (README.md says how long); later ones rebuild what changed.
set -euo pipefail
cd "$(dirname "$0")/.."

port=${ATTOGRAD_PORT:-8000}
if ! [[ $port =~ ^[0-9]{1,5}$ ]] || ((10#$port < 1 || 10#$port > 65535)); then
  echo "attograd playground: ATTOGRAD_PORT is '$port': give a port number from 1 to 65535," \
    "e.g. ATTOGRAD_PORT=8001 bash scripts/playground.sh" >&2
  exit 2
fi
port=$((10#$port))
# Whether the server can listen on the port, asked the way it will (SO_REUSEADDR, as
# http.server does): checked before the build, which may take minutes, and again after it, so
# that a port another server holds is said in one line rather than a traceback after the wait.
port_is_free() {
  python3 - "$port" <<'PY'
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
try:
    s.bind(("127.0.0.1", int(sys.argv[1])))
except OSError as e:
    print(e.strerror or e, file=sys.stderr)
    sys.exit(1)
PY
}
check_port() {
  local why
  if ! why=$(port_is_free 2>&1); then
    echo "attograd playground: port $port on 127.0.0.1 is in use ($why), perhaps by an earlier" \
      "playground. Stop that server, or serve on another port: ATTOGRAD_PORT=$((port % 65535 + 1))" \
      "bash scripts/playground.sh" >&2
    exit 1
  fi
}
check_port

bash scripts/wasm.sh --no-test
check_port
echo
echo "attograd playground: http://127.0.0.1:$port/   (Ctrl-C stops the server)"
exec python3 -m http.server "$port" --bind 127.0.0.1 --directory build-wasm/page
