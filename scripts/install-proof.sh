#!/usr/bin/env bash
# Install proof, run by CI: can a newcomer outside this clone install sluice
# with `go get` and run what the README shows?
#
#   bash scripts/install-proof.sh
#
# It releases the current tree (tracked and untracked files, as CI tests
# it) at a release-candidate version into a file-based module proxy
# (scripts/release.sh -proxy) and takes the environment that release.sh
# prints for it (GOPROXY: the file proxy, then the proxy the go command
# used; GONOSUMDB: sluice's modules), exactly as printed. The proxy it
# runs release.sh under is the local module cache (and, outside CI, the
# go command's own GOPROXY too: CI=true forbids the network). Then, each in
# a fresh module in a temporary directory, with no workspace and an empty
# module cache of its own, third-party modules checked against the hashes
# this repository's go.sum files record:
#   - go get's core and every adapter at that version, builds every
#     adapter's package and examples/quickstart/main.go (docs/quickstart.md's
#     complete program, byte for byte), and runs it against an empty
#     PostgreSQL database, requiring examples/quickstart/testdata/output.txt;
#   - for SQLite, PostgreSQL and MariaDB: the README's snippets, verbatim
#     (examples/quickstart/cmd/readmeapp writes them as a program: the
#     database's opening from README.md or docs/adapters.md, the limiter,
#     the API-key check), after the go get line the README or
#     docs/adapters.md gives for that database and nothing else: sluice's
#     modules @latest, which this proxy serves at the release candidate,
#     third-party modules at the versions this repository uses (under CI,
#     offline, every module at least at this repository's version: the
#     older versions the modules named require are not in the cache). The
#     line must name the module of every package the program imports, the
#     build may not add one (-mod=readonly), and the program must print
#     what the README shows after the snippets. The databases are created
#     empty on the servers of $SLUICE_POSTGRES_DSN and $SLUICE_MYSQL_DSN
#     and dropped at the end; SQLite's file is in the module's folder.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

version=v0.1.0-rc.0
prefix=github.com/sluice-go/sluice
dsn=${SLUICE_POSTGRES_DSN:-postgres://postgres@127.0.0.1:5432/test?sslmode=disable}
mydsn=${SLUICE_MYSQL_DSN:-root@tcp(127.0.0.1:3306)/test}
step() { printf -- '--- %s (%ds)\n' "$*" "$SECONDS"; }
fail() { echo "install-proof: $*" >&2; exit 1; }

# The MySQL DSN's parts, for the mariadb client and the program's own DSN.
if ! [[ $mydsn =~ ^([^:@]*)(:([^@]*))?@tcp\(([^:\)]*)(:([0-9]+))?\)/([^?]*)(\?.*)?$ ]]; then
  fail "SLUICE_MYSQL_DSN $mydsn is not user[:password]@tcp(host[:port])/db[?params]"
fi
myuser=${BASH_REMATCH[1]} mypass=${BASH_REMATCH[3]} myhost=${BASH_REMATCH[4]} myport=${BASH_REMATCH[6]:-3306} myparams=${BASH_REMATCH[8]}
mysqlcmd() { MYSQL_PWD=$mypass mariadb -h "$myhost" -P "$myport" -u "$myuser" "$@"; }

modcache=$(go env GOMODCACHE)
work=$(mktemp -d)
dbname=sluice_install_proof_$$_$RANDOM
pgdbs=() mydbs=()
cleanup() {
  for d in "${pgdbs[@]}"; do
    psql "$dsn" -v ON_ERROR_STOP=1 -qc "DROP DATABASE IF EXISTS $d WITH (FORCE)" >/dev/null ||
      echo "install-proof: could not drop the database $d" >&2
  done
  for d in "${mydbs[@]}"; do
    mysqlcmd -e "DROP DATABASE IF EXISTS $d" || echo "install-proof: could not drop the database $d" >&2
  done
  chmod -R u+w "$work" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

step "release $version into a file proxy"
upstream=file://$modcache/cache/download
if [ "${CI:-}" != true ]; then upstream="$upstream,$(go env GOPROXY)"; fi
GOPROXY=$upstream bash scripts/release.sh "$version" -proxy "$work/proxy" >"$work/release.txt"
hint=$(grep -E "^  export (GOPROXY|GONOSUMDB)='[^']*'$" "$work/release.txt" || true)
if [ "$(grep -c . <<<"$hint")" -ne 2 ]; then
  cat "$work/release.txt" >&2; fail "release.sh -proxy did not print the GOPROXY and GONOSUMDB it needs"
fi
echo "$hint"

# The README's snippets as programs. Each go get line must name the module
# of every package its program imports (the modules as this repository's
# quickstart module resolves them, which requires every module the
# documents' fragments use); the third-party modules it names are got at
# the versions this repository uses.
(cd examples/quickstart && go build -o "$work/readmeapp" ./cmd/readmeapp)
for db in sqlite postgres mysql; do
  d=$work/readme-$db
  "$work/readmeapp" -root "$root" -db "$db" -out "$d"
  named=$(sed 's/@.*//' "$d/get.txt")
  for m in $(cd examples/quickstart && GOWORK=off go list -f '{{.Module.Path}}' $(cat "$d/imports.txt") | sort -u); do
    grep -qxF "$m" <<<"$named" || fail "the documents' go get line for $db does not name $m, which its snippets import"
  done
done
# The modules that provide the quickstart module's packages, at their versions.
(cd examples/quickstart && GOWORK=off go list -deps -f '{{with .Module}}{{if not .Main}}{{.Path}} {{.Version}}{{end}}{{end}}' ./...) |
  grep -v "^$prefix/" | grep . | sort -u >"$work/pins"
cat "$work"/readme-*/get.txt | grep -v "^$prefix/" | sort -u | while read -r m; do
  grep -q "^$m " "$work/pins" || fail "the documents' go get names $m, which examples/quickstart does not require"
done

step "a fresh module outside the workspace"
mkdir "$work/app"
cp examples/quickstart/main.go "$work/app/main.go"
# Third-party hashes as this repository recorded them (each verified
# against the checksum database when it was added).
git ls-files --cached --others --exclude-standard '*go.sum' |
  while read -r f; do if [ -f "$f" ]; then cat "$f"; fi; done | sort -u >"$work/go.sum"
cp "$work/go.sum" "$work/app/go.sum"
eval "$hint" # exactly the environment release.sh printed
export GOPROXY GONOSUMDB GOWORK=off GOTOOLCHAIN=local GOMODCACHE="$work/modcache" GOFLAGS="-mod=mod -modcacherw -trimpath"
cd "$work/app"
go mod init example.com/sluice-install-proof >/dev/null 2>&1

step "go get core and the adapters at $version"
pkgs=("$prefix/core")
for a in gorm bun ent sql pgx redis; do pkgs+=("$prefix/adapters/$a"); done
if ! go get "${pkgs[@]/%/@$version}" 2>"$work/get.log"; then cat "$work/get.log" >&2; exit 1; fi

step "build every adapter and the quick start"
go build "${pkgs[@]}" "$prefix/core/ratelimit" "$prefix/core/apikey"
go build -o quickstart .
# sluiceversions DIR PACKAGES...: the sluice modules the packages came from,
# which must all be at $version, none replaced.
sluiceversions() {
  go list -deps -f '{{with .Module}}{{.Path}} {{.Version}}{{with .Replace}} => {{.Path}}{{end}}{{end}}' "$@" |
    grep "^$prefix/" | sort -u
}
got=$(sluiceversions . "${pkgs[@]}")
echo "$got" | sed 's/^/  /'
if [ "$(echo "$got" | wc -l)" -lt 7 ] || echo "$got" | grep -v " $version\$" | grep -q .; then
  fail "want core and the six adapters, all at $version, got:"$'\n'"$got"
fi

# run NAME EXPECTED COMMAND...: run a program, requiring EXPECTED's output.
run() {
  local name=$1 want=$2; shift 2
  "$@" >out.txt 2>err.txt || { cat out.txt err.txt >&2; fail "$name failed"; }
  sed 's/^/  /' out.txt
  if [ -s err.txt ]; then echo "  (stderr)"; sed 's/^/  /' err.txt; fi
  diff -u "$want" out.txt || fail "$name's output is not the one the documents show ($want)"
}

step "run the quick start on an empty database ($dbname)"
psql "$dsn" -v ON_ERROR_STOP=1 -qc "CREATE DATABASE $dbname" >/dev/null
pgdbs+=("$dbname")
pgurl() { sed -E "s#^([a-z]+://[^/?]*)(/[^?]*)?#\1/$1#" <<<"$dsn"; }
DATABASE_URL=$(pgurl "$dbname") run "the quick start" "$root/examples/quickstart/testdata/output.txt" ./quickstart

for db in sqlite postgres mysql; do
  step "the README's snippets on $db, after its go get line alone"
  cd "$work/readme-$db"
  cp "$work/go.sum" go.sum
  go mod init "example.com/readme-$db" >/dev/null 2>&1
  # Offline, only the versions this repository uses are in the module
  # cache, so they are the floor: without it, the oldest versions the
  # modules named require (pgx's, x/sys's) would be needed and missing.
  if [ "${CI:-}" = true ]; then
    floors=()
    while read -r m v; do floors+=("-require=$m@$v"); done <"$work/pins"
    go mod edit "${floors[@]}"
  fi
  args=()
  while read -r a; do
    case $a in
      "$prefix"/*) args+=("$a") ;; # verbatim
      *) args+=("$a@$(awk -v m="$a" '$1 == m {print $2}' "$work/pins")") ;;
    esac
  done <get.txt
  echo "  go get ${args[*]}"
  # The third-party modules named, downloaded whole first: a module whose
  # go.mod alone an earlier step fetched into the shared module cache is
  # otherwise not found as the provider of its package ("module
  # github.com/uptrace/bun@v1.3.0 found, but does not contain package
  # github.com/uptrace/bun/dialect/mysqldialect").
  pinned=()
  for a in "${args[@]}"; do case $a in "$prefix"/*) ;; *) pinned+=("$a") ;; esac; done
  if ! { go mod download "${pinned[@]}" && go get "${args[@]}"; } 2>"$work/get.log"; then cat "$work/get.log" >&2; exit 1; fi
  GOFLAGS="-mod=readonly -modcacherw -trimpath" go build -o app . ||
    fail "the snippets on $db do not build after the documents' go get line for $db (get.txt)"
  got=$(sluiceversions .)
  if echo "$got" | grep -v " $version\$" | grep -q .; then fail "want sluice's modules at $version, got:"$'\n'"$got"; fi
  case $db in
    sqlite) url="" ;;
    postgres)
      psql "$dsn" -v ON_ERROR_STOP=1 -qc "CREATE DATABASE ${dbname}_readme" >/dev/null
      pgdbs+=("${dbname}_readme")
      url=$(pgurl "${dbname}_readme") ;;
    mysql)
      mysqlcmd -e "CREATE DATABASE ${dbname}_readme"
      mydbs+=("${dbname}_readme")
      url="$myuser${mypass:+:$mypass}@tcp($myhost:$myport)/${dbname}_readme$myparams" ;;
  esac
  DATABASE_URL=$url run "the README's snippets on $db" expected.txt ./app
done
step "ok: installed with go get at $version; ran the quick start, and the README's snippets on SQLite, PostgreSQL and MariaDB"
