#!/usr/bin/env bash
# Runs the in-process comparison (memory_bench_test.go) as bench/results/memory
# holds it: BenchmarkMemoryStoreRatio in ROUNDS rounds (default 5), every limiter
# taking turns of 4,096 decisions on the same keys within each, then the median
# over rounds of each limiter's speed against go-limiter (go-limiter's CPU time
# per decision ÷ the limiter's: above 1 is faster), and each one's allocations
# per decision. Writes OUT/RESULTS.md (default bench/results/memory) and the
# raw output beside it. Run from anywhere.
set -euo pipefail
cd "$(dirname "$0")"
rounds=${ROUNDS:-5}
out=${OUT:-results/memory}
mkdir -p "$out"
load=$(cut -d' ' -f1-3 /proc/loadavg)
go test -run '^$' -bench 'BenchmarkMemoryStoreRatio' -count "$rounds" . | tee "$out/ratio.txt" >/dev/null
go test -run '^$' -bench 'BenchmarkMemoryStore$' -benchmem -benchtime 100000x . | tee "$out/allocs.txt" >/dev/null
{
	echo "# In process: every limiter against go-limiter"
	echo
	echo "\`ROUNDS=$rounds bash bench/memory.sh\` on $(date -u +%Y-%m-%d), $(nproc) CPUs shared with the other"
	echo "engineers' work (load average $load at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end)."
	echo "Speed against go-limiter: go-limiter's CPU time per decision ÷ the limiter's, the"
	echo "median over $rounds rounds; within a round the limiters take turns of 4,096 decisions on"
	echo "the same keys. Above 1 is faster than go-limiter. Allocations per decision from"
	echo "\`go test -bench 'BenchmarkMemoryStore\$' -benchmem -benchtime 100000x\`."
	echo
	awk '
	/^BenchmarkMemoryStoreRatio\// {
		c = $1; sub(/^BenchmarkMemoryStoreRatio\//, "", c); sub(/-[0-9]+$/, "", c)
		if (!(c in seen)) { seen[c] = 1; cases[++nc] = c }
		for (i = 5; i < NF; i += 2) if ($(i+1) ~ /-x-cpu$/) {
			n = $(i+1); sub(/-x-cpu$/, "", n)
			if (!(n in iseen)) { iseen[n] = 1; impls[++ni] = n }
			k = c SUBSEP n; v[k, ++cnt[k]] = 1 / $i
		}
	}
	function median(k,   m, i, j, t, a) {
		m = cnt[k]; for (i = 1; i <= m; i++) a[i] = v[k, i]
		for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
		return (m % 2) ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
	}
	END {
		printf "| limiter |"; for (j = 1; j <= nc; j++) printf " %s |", cases[j]; print ""
		printf "|---|"; for (j = 1; j <= nc; j++) printf "---|"; print ""
		for (i = 1; i <= ni; i++) {
			printf "| %s |", impls[i]
			for (j = 1; j <= nc; j++) {
				k = cases[j] SUBSEP impls[i]; lo = 1e9; hi = 0
				for (r = 1; r <= cnt[k]; r++) { if (v[k, r] < lo) lo = v[k, r]; if (v[k, r] > hi) hi = v[k, r] }
				printf " %.2f (%.2f–%.2f) |", median(k), lo, hi
			}
			print ""
		}
	}' "$out/ratio.txt"
	echo
	echo "(median, and in brackets the lowest and highest round)"
	echo
	echo "| allocations per decision |"; echo "|---|"
	awk '/^BenchmarkMemoryStore\// { n = $1; sub(/^BenchmarkMemoryStore\//, "", n); sub(/-[0-9]+$/, "", n); printf "| %s: %s |\n", n, $(NF-1) }' "$out/allocs.txt"
} > "$out/RESULTS.md"
cat "$out/RESULTS.md"
