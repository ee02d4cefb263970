#!/usr/bin/env bash
# Stops the Galera cluster scripts/galera/start.sh started in DIR (the
# first argument, or $SLUICE_GALERA_DIR): node 3, 2, then 1, each by its pid,
# waiting for each to exit before the next, then removes DIR.
set -uo pipefail
DIR=${1:-${SLUICE_GALERA_DIR:-}}
[ -n "$DIR" ] && [ -d "$DIR" ] || { echo "usage: stop.sh DIR" >&2; exit 2; }
for n in 3 2 1; do
  pid=$(cat "$DIR/node$n/pid" 2>/dev/null) || continue
  kill "$pid" 2>/dev/null || continue
  for _ in $(seq 1 600); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then kill -9 "$pid" 2>/dev/null; sleep 0.5; fi
done
rm -rf "$DIR" || echo "note: could not remove $DIR" >&2
