#!/usr/bin/env bash
# Regenerates every checked-in generated file and fails if any differs from
# what is committed: generated code in the repository is never stale.
set -euo pipefail
cd "$(dirname "$0")"
go generate ./...
if ! git diff --exit-code -- . || [ -n "$(git status --porcelain --untracked-files=all -- .)" ]; then
  echo "generated files are stale: run 'go generate ./...' in gen/ and commit" >&2
  git status --porcelain -- . >&2
  exit 1
fi
echo "generated files are fresh"
