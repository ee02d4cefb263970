#!/usr/bin/env bash
# Install proof, run by CI: can a newcomer outside this clone install sluice
# with `go get` and run the README's quick start?
#
#   bash scripts/install-proof.sh
#
# It releases the current tree (tracked and untracked files, as CI tests
# it) at a release-candidate version into a file-based module proxy
# (scripts/release.sh -proxy), then, in a fresh module in a temporary
# directory, with no workspace and an empty module cache of its own:
#   - go get's core and every adapter at that version from that proxy, the
#     third-party modules coming from the local module cache (and from the
#     public proxy too outside CI, CI=true forbids it), checked against the
#     hashes this repository's go.sum files record;
#   - builds every adapter's package and examples/quickstart/main.go, the
#     README's complete program, byte for byte;
#   - runs it against an empty PostgreSQL database it creates on the server
#     of $SLUICE_POSTGRES_DSN (and drops at the end), and requires the
#     output the README shows (examples/quickstart/testdata/output.txt).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

version=v0.1.0-rc.0
prefix=github.com/sluice-go/sluice
dsn=${SLUICE_POSTGRES_DSN:-postgres://postgres@127.0.0.1:5432/test?sslmode=disable}
step() { printf -- '--- %s (%ds)\n' "$*" "$SECONDS"; }

modcache=$(go env GOMODCACHE)
work=$(mktemp -d)
dbname=sluice_install_proof_$$_$RANDOM
created=false
cleanup() {
  if $created; then
    psql "$dsn" -v ON_ERROR_STOP=1 -qc "DROP DATABASE IF EXISTS $dbname WITH (FORCE)" >/dev/null ||
      echo "install-proof: could not drop the database $dbname" >&2
  fi
  chmod -R u+w "$work" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

step "release $version into a file proxy"
bash scripts/release.sh "$version" -proxy "$work/proxy" >/dev/null

step "a fresh module outside the workspace"
mkdir "$work/app"
cp examples/quickstart/main.go "$work/app/main.go"
# Third-party hashes as this repository recorded them (each verified
# against the checksum database when it was added); the sluice modules
# at $version are in no checksum database, hence GONOSUMDB.
git ls-files --cached --others --exclude-standard '*go.sum' |
  while read -r f; do if [ -f "$f" ]; then cat "$f"; fi; done | sort -u >"$work/app/go.sum"
cd "$work/app"
proxies="file://$work/proxy,file://$modcache/cache/download"
if [ "${CI:-}" != true ]; then proxies="$proxies,https://proxy.golang.org"; fi
export GOWORK=off GOTOOLCHAIN=local GOMODCACHE="$work/modcache" GOPROXY="$proxies" \
  GONOSUMDB="$prefix" GOFLAGS="-mod=mod -modcacherw -trimpath"
go mod init example.com/sluice-install-proof >/dev/null 2>&1

step "go get core and the adapters at $version"
pkgs=("$prefix/core")
for a in gorm bun ent sql pgx redis; do pkgs+=("$prefix/adapters/$a"); done
if ! go get "${pkgs[@]/%/@$version}" 2>"$work/get.log"; then cat "$work/get.log" >&2; exit 1; fi

step "build every adapter and the quick start"
go build "${pkgs[@]}" "$prefix/core/ratelimit" "$prefix/core/apikey"
go build -o quickstart .
# The sluice modules the packages built came from: all at $version, none
# replaced.
got=$(go list -deps -f '{{with .Module}}{{.Path}} {{.Version}}{{with .Replace}} => {{.Path}}{{end}}{{end}}' \
  . "${pkgs[@]}" | grep "^$prefix/" | sort -u)
echo "$got" | sed 's/^/  /'
if [ "$(echo "$got" | wc -l)" -lt 7 ] || echo "$got" | grep -v " $version\$" | grep -q .; then
  echo "install-proof: want core and the six adapters, all at $version, got:" >&2; echo "$got" >&2; exit 1
fi

step "run the quick start on an empty database ($dbname)"
psql "$dsn" -v ON_ERROR_STOP=1 -qc "CREATE DATABASE $dbname" >/dev/null
created=true
appdsn=$(sed -E "s#^([a-z]+://[^/?]*)(/[^?]*)?#\1/$dbname#" <<<"$dsn")
DATABASE_URL=$appdsn ./quickstart >out.txt 2>err.txt || {
  echo "install-proof: the quick start failed:" >&2; cat out.txt err.txt >&2; exit 1
}
sed 's/^/  /' out.txt
if [ -s err.txt ]; then echo "  (stderr)"; sed 's/^/  /' err.txt; fi
if ! diff -u "$root/examples/quickstart/testdata/output.txt" out.txt; then
  echo "install-proof: the quick start's output is not the README's (examples/quickstart/testdata/output.txt)" >&2
  exit 1
fi
step "ok: installed with go get at $version and ran the quick start"
