#!/usr/bin/env bash
# Test of scripts/findservers.sh and its use by scripts/test.sh, run by CI:
#   1. with no SLUICE_* variable set and every candidate a closed port,
#      nothing is exported, each server is reported missing, and
#      scripts/test.sh on a package of server tests passes, its tests
#      skipped and summarised;
#   2. with no variable set and the usual local ports, every server that
#      answers its own client there is found and its variable exported (CI,
#      which runs the three servers, requires all three);
#   3. a variable that is set is used as it is, never probed.
#
#   bash scripts/test-findservers.sh
set -euo pipefail
cd "$(dirname "$0")/.."
fail() { echo "test-findservers: $*" >&2; exit 1; }
vars=(SLUICE_POSTGRES_DSN SLUICE_MYSQL_DSN SLUICE_REDIS_ADDR SLUICE_REDIS_CLUSTER_ADDRS)
# unset: env's options that unset every SLUICE_ variable the caller set
# (CI exports more than the four findservers.sh looks for, such as the
# Galera cluster's SLUICE_GALERA_DSNS), so each case starts from none.
unset=()
for v in "${vars[@]}" $(compgen -e | grep '^SLUICE_' | grep -v '^SLUICE_FIND_' || true); do unset+=(-u "$v"); done
closed=(SLUICE_FIND_PG='postgres://postgres@127.0.0.1:1/test?sslmode=disable'
  SLUICE_FIND_MYSQL='root@tcp(127.0.0.1:1)/test' SLUICE_FIND_REDIS=127.0.0.1:1)

# found ENV...: the SLUICE_ variables findservers.sh leaves set, and its report.
found() {
  env "${unset[@]}" "$@" \
    bash -c 'source scripts/findservers.sh 2>"$0"; env | grep "^SLUICE_[A-Z_]*=" | grep -v "^SLUICE_FIND_" | sort || true' "$report"
}
report=$(mktemp)
trap 'rm -f "$report"' EXIT

echo "--- 1. no variable, no server: nothing exported, the tests skip and pass"
got=$(found "${closed[@]}")
[ -z "$got" ] || fail "exported with no server answering: $got"
cat "$report"
[ "$(grep -c 'its tests skip' "$report")" -eq 3 ] || fail "want three servers reported missing"
out=$(env "${unset[@]}" -u CI "${closed[@]}" \
  bash scripts/test.sh -count=1 -run 'TestConformance$' -- ./adapters/pgx/pgxtest 2>&1) ||
  { echo "$out"; fail "scripts/test.sh failed on a machine without servers"; }
echo "$out" | tail -3
grep -q '^SKIPPED [0-9]* PostgreSQL tests' <<<"$out" || fail "no SKIPPED line for PostgreSQL"

echo "--- 2. no variable: the servers on their usual ports"
got=$(found)
cat "$report"
echo "$got" | sed 's/^/  exported /'
for v in "${vars[@]:0:3}"; do
  if grep -q "found at" <(grep -F "${v}" "$report"); then
    grep -q "^$v=" <<<"$got" || fail "$v reported found but not exported"
  elif [ "${CI:-}" = true ]; then
    fail "CI runs every server, but $v was not found"
  fi
done

echo "--- 3. a variable set is used as it is"
got=$(found SLUICE_MYSQL_DSN='nobody@tcp(127.0.0.1:1)/none' "${closed[@]}")
[ "$got" = 'SLUICE_MYSQL_DSN=nobody@tcp(127.0.0.1:1)/none' ] || fail "want the set variable alone, got: $got"
grep -q 'SLUICE_MYSQL_DSN is set, using' "$report" || fail "the set variable is not reported as used"
echo "ok"
