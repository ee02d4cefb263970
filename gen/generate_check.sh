#!/usr/bin/env bash
# Regenerates every checked-in generated file under gen/ and fails if any
# differs from what is committed: generated code in the repository is never
# stale. The checked-in output is the golden files in testdata/golden (what
# sluicegen writes for every target, dialect and naming), rewritten by
# TestGolden with UPDATE_GOLDEN=1, plus whatever a //go:generate line in
# one of gen's modules writes. The ORM code the proofs compile is generated
# afresh by gen/proof's tests and never committed.
set -euo pipefail
cd "$(dirname "$0")"
UPDATE_GOLDEN=1 go test -count=1 -run '^TestGolden$' .
for m in . cmd/sluicegen proof; do
  (cd "$m" && go generate ./...)
done
if ! git diff --exit-code -- . || [ -n "$(git status --porcelain --untracked-files=all -- .)" ]; then
  echo "generated files are stale: run 'UPDATE_GOLDEN=1 go test -run TestGolden .' (and 'go generate ./...') in gen/ and commit" >&2
  git status --porcelain -- . >&2
  exit 1
fi
echo "generated files are fresh"
