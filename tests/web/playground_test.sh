#!/usr/bin/env bash
# scripts/playground.sh on a port another server holds, and with a port that is no number: one
# line saying what to do, exit status 1 (or 2), no Python traceback, and no build first (the
# check comes before it: the first build takes minutes). CTest test `playground_test`.
#   bash tests/web/playground_test.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
failures=0
check() {  # check CONDITION-STATUS WHAT
  if [ "$1" = 0 ]; then echo "ok    $2"; else echo "FAIL  $2"; failures=$((failures + 1)); fi
}

# A server of our own on a free port, kept listening while the playground tries it.
out=$(mktemp -d)
python3 -c '
import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()
print(s.getsockname()[1], flush=True)
time.sleep(60)' >"$out/port" &
holder=$!
trap 'kill $holder 2>/dev/null; rm -rf "$out"' EXIT
for _ in $(seq 50); do [ -s "$out/port" ] && break; sleep 0.1; done
port=$(cat "$out/port")

ATTOGRAD_PORT=$port timeout 60 bash scripts/playground.sh >"$out/stdout" 2>"$out/stderr"
status=$?
want="attograd playground: port $port on 127.0.0.1 is in use (Address already in use), perhaps by an \
earlier playground. Stop that server, or serve on another port: ATTOGRAD_PORT=$((port % 65535 + 1)) bash \
scripts/playground.sh"
[ $status = 1 ]; check $? "a busy port: exit status 1 (got $status)"
[ "$(cat "$out/stderr")" = "$want" ]; check $? "a busy port is said in one line: $(cat "$out/stderr")"
[ ! -s "$out/stdout" ]; check $? "nothing was built or served first: $(head -c 200 "$out/stdout")"
! grep -q Traceback "$out/stderr"; check $? "no Python traceback"

for bad in abc 0 70000; do
  ATTOGRAD_PORT=$bad timeout 60 bash scripts/playground.sh >"$out/stdout" 2>"$out/stderr"
  status=$?
  want="attograd playground: ATTOGRAD_PORT is '$bad': give a port number from 1 to 65535, e.g. \
ATTOGRAD_PORT=8001 bash scripts/playground.sh"
  [ $status = 2 ] && [ "$(cat "$out/stderr")" = "$want" ] && [ ! -s "$out/stdout" ]
  check $? "ATTOGRAD_PORT=$bad is refused before the build: $(cat "$out/stderr")"
done
echo "$failures failed"
[ $failures = 0 ]
