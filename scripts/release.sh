#!/usr/bin/env bash
# Release every module of the workspace at one VERSION (see RELEASING.md).
#
#   bash scripts/release.sh VERSION              print the release commit and its tags
#   bash scripts/release.sh VERSION -tag         also create the tags locally (never pushed)
#   bash scripts/release.sh VERSION -proxy DIR   write a file-based module proxy to DIR, and print
#                                                the environment (export lines) that installs from it
#
# In the repository the modules require each other at the zero version
# v0.0.0-00010101000000-000000000000 and find each other through replace
# lines; outside the repository replace lines of a dependency are ignored,
# so a consumer would look for that zero version and fail. A release is
# therefore a copy of the tree in which every go.mod requires its siblings
# at VERSION and has no replace line for them.
#
# Without -proxy the copy is made from HEAD (the working tree must be clean)
# and stored as a commit whose parent is HEAD and which no branch points to
# (only objects are written; refs, the index and the working tree are left
# alone); the tags, one per module directory as Go expects of nested modules
# (core/v0.1.0, adapters/gorm/v0.1.0, ...), go on that commit. With -proxy
# the copy is made from the working tree as it is, tracked and untracked
# files alike (ignored files excepted), so that CI can prove an install of
# what it is testing (scripts/install-proof.sh).
set -euo pipefail

usage() { echo "usage: bash scripts/release.sh VERSION [-tag | -proxy DIR]" >&2; exit 2; }

version="" proxy="" tag=false
while [ $# -gt 0 ]; do
  case "$1" in
    -proxy) [ $# -ge 2 ] || usage; proxy=$2; shift 2 ;;
    -proxy=*) proxy=${1#-proxy=}; shift ;;
    -tag) tag=true; shift ;;
    -h|-help|--help) usage ;;
    -*) echo "release.sh: unknown flag $1" >&2; usage ;;
    *) [ -z "$version" ] || usage; version=$1; shift ;;
  esac
done
[ -n "$version" ] || usage
if [ -n "$proxy" ] && $tag; then echo "release.sh: -tag and -proxy exclude each other" >&2; exit 2; fi
# Semantic versions only, no build metadata (Go refuses "+..."); v2 and up
# would need a /v2 suffix on every module path.
if ! [[ $version =~ ^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$ ]]; then
  echo "release.sh: VERSION $version is not a semantic version such as v0.1.0 or v0.2.0-rc.1" >&2; exit 2
fi
if [ "${BASH_REMATCH[1]}" -ge 2 ]; then
  echo "release.sh: $version needs /v${BASH_REMATCH[1]} module paths first (see RELEASING.md)" >&2; exit 2
fi

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
prefix=github.com/sluice-go/sluice

# The modules: what go.work uses. Each must live in the directory its path
# names, or its tag would not be found by the go command.
paths=() dirs=()
while read -r path dir; do
  rel=${dir#"$root"/}
  if [ "$path" != "$prefix/$rel" ]; then
    echo "release.sh: module $path is in $rel; its tag would have to be $rel/$version, which Go would not find" >&2; exit 1
  fi
  paths+=("$path") dirs+=("$rel")
done < <(go list -m -f '{{.Path}} {{.Dir}}')
[ ${#paths[@]} -gt 0 ] || { echo "release.sh: go list -m found no modules in go.work" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
copy=$tmp/tree
mkdir "$copy"
if [ -n "$proxy" ]; then
  git ls-files -z --cached --others --exclude-standard |
    while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
    tar --null -T - -cf - | tar -xf - -C "$copy"
  stamp=$(date -u +%Y-%m-%dT%H:%M:%SZ)
else
  if [ -n "$(git status --porcelain)" ]; then
    echo "release.sh: the working tree has changes; commit them first (git status)" >&2; exit 1
  fi
  git archive HEAD | tar -xf - -C "$copy"
  stamp=$(git log -1 --format=%cI HEAD)
fi

# Rewrite each go.mod: siblings at VERSION, their replace lines gone.
for i in "${!dirs[@]}"; do
  rel=${dirs[$i]} self=${paths[$i]}
  gomod=$copy/$rel/go.mod
  drops=() requires=()
  for p in "${paths[@]}"; do drops+=("-dropreplace=$p"); done
  GOWORK=off go mod edit "${drops[@]}" "$gomod"
  required=$(GOWORK=off go mod edit -json "$gomod" | sed -n 's/^[[:space:]]*"Path": "\(.*\)",\{0,1\}$/\1/p')
  for p in "${paths[@]}"; do
    if [ "$p" != "$self" ] && grep -qxF "$p" <<<"$required"; then requires+=("-require=$p@$version"); fi
  done
  if [ ${#requires[@]} -gt 0 ]; then GOWORK=off go mod edit "${requires[@]}" "$gomod"; fi
  if grep -q 'v0.0.0-00010101000000-000000000000\|=> \.\.*/' "$gomod"; then
    echo "release.sh: $rel/go.mod still has a zero version or a local replace after the rewrite:" >&2
    grep -n 'v0.0.0-00010101000000-000000000000\|=> \.\.*/' "$gomod" >&2; exit 1
  fi
done

if [ -n "$proxy" ]; then
  # The go command puts the repository root's LICENSE into the zip of a
  # nested module that has none (go.dev/ref/mod#vcs-license), so
  # proxy.golang.org serves it; CreateFromDir only zips the directory.
  if [ -f "$copy/LICENSE" ]; then
    for rel in "${dirs[@]}"; do
      [ -e "$copy/$rel/LICENSE" ] || cp "$copy/LICENSE" "$copy/$rel/LICENSE"
    done
  fi
  mkdir -p "$proxy"
  proxy=$(cd "$proxy" && pwd)
  args=()
  for i in "${!paths[@]}"; do args+=("${paths[$i]}=$copy/${dirs[$i]}"); done
  (cd scripts/modzip && GOWORK=off go run . -version "$version" -time "$stamp" -out "$proxy" "${args[@]}")
  echo "wrote ${#paths[@]} modules at $version to the proxy $proxy:"
  for p in "${paths[@]}"; do echo "  $p@$version"; done
  # The environment that installs them: this proxy first, then the one
  # the go command uses now (for every other module; computed, so that no
  # registry is named here), and the modules at $version kept out of the
  # checksum database, which has never seen them. GOPRIVATE would do that
  # too but also skip every proxy for them, this one included.
  upstream=$(go env GOPROXY) nosum=$(go env GONOSUMDB)
  echo "use it in a module of yours with this environment:"
  printf "  export GOPROXY='%s'\n" "file://$proxy${upstream:+,$upstream}"
  printf "  export GONOSUMDB='%s'\n" "${nosum:+$nosum,}$prefix"
  echo "then: go get $prefix/core@$version (and the adapters you use, at $version)"
  exit 0
fi

# Store the copy as a commit on top of HEAD, through a private index so that
# the repository's own index and working tree are not touched.
export GIT_INDEX_FILE=$tmp/index
git --work-tree="$copy" add -A .
tree=$(git write-tree)
unset GIT_INDEX_FILE
head=$(git rev-parse HEAD)
commit=$(git commit-tree "$tree" -p "$head" -m "release $version

Every module requires its sibling modules at $version, without replace lines.")

tags=()
for rel in "${dirs[@]}"; do tags+=("$rel/$version"); done
for t in "${tags[@]}"; do
  if git rev-parse -q --verify "refs/tags/$t" >/dev/null; then
    echo "release.sh: tag $t exists already" >&2; exit 1
  fi
done

echo "release commit $commit (parent HEAD $head, on no branch); its go.mod changes:"
git diff --stat "$head" "$commit"
if $tag; then
  for t in "${tags[@]}"; do git tag -a -m "sluice $version" "$t" "$commit"; done
  echo "created ${#tags[@]} local tags; publish them with:"
else
  echo "create the tags with:"
  for t in "${tags[@]}"; do echo "  git tag -a -m 'sluice $version' $t $commit"; done
  echo "then publish them with:"
fi
echo "  git push origin ${tags[*]}"
