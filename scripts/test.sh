#!/usr/bin/env bash
# The README's test command: `go test` over every module of the workspace
# (go test work), then one line per server the run went without, naming the
# tests that skipped for want of it and why. A plain `go test work` says
# "ok" for a package whose server tests all skipped, and hides what such a
# package prints unless -v, so the summary is computed here from the
# `go test -json` events of the tests that actually skipped. Before that,
# each server variable left unset is filled in when its server answers on
# its usual local port (scripts/findservers.sh), with one line per server
# saying what was found and used.
#
#   bash scripts/test.sh [go test flags] [-- packages]
#
# Flags go to go test (-race, -count=1, -run X, -v ...); packages default to
# "work". The exit status is go test's (or the summary's, if that failed).
set -uo pipefail
cd "$(dirname "$0")/.."

flags=() pkgs=() verbose=()
while [ $# -gt 0 ]; do
  if [ "$1" = "--" ]; then shift; pkgs=("$@"); break; fi
  case "$1" in -v|-v=true|-test.v|-test.v=true) verbose=(-v) ;; esac
  flags+=("$1"); shift
done
[ ${#pkgs[@]} -eq 0 ] && pkgs=(work)

# Build the summariser first, so that its own build never mixes with the
# test output and a failure to build it is reported as such.
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
if ! CGO_ENABLED=0 go build -o "$bin/testsummary" ./scripts/testsummary/main.go; then
  echo "scripts/test.sh: cannot build scripts/testsummary" >&2
  exit 2
fi

source scripts/findservers.sh
go test -json "${flags[@]}" "${pkgs[@]}" | "$bin/testsummary" "${verbose[@]}"
