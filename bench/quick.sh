#!/usr/bin/env bash
# Runs the benchmark harness in quick mode, as CI does on every submission,
# so that it never rots: every approach on every configured backend, short
# cells, without -race (timings under the race detector mean nothing).
# Run from anywhere; the servers come from SLUICE_POSTGRES_DSN,
# SLUICE_MYSQL_DSN and SLUICE_REDIS_ADDR (with CI=true a missing one fails).
# Exits non-zero when a correctness check fails.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
go run ./bench -quick -out "$out" "$@"
