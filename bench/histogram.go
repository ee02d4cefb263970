package main

import (
	"math/bits"
	"time"
)

// histogram records latencies in logarithmic buckets with 32 steps per
// power of two (about 2% resolution), in a fixed array: recording allocates
// nothing, so it does not disturb the allocations-per-decision figure.
type histogram struct {
	buckets [64 * subBuckets]uint64
	n       uint64
}

const subBits = 5
const subBuckets = 1 << subBits

func bucketOf(ns uint64) int {
	if ns < subBuckets {
		return int(ns)
	}
	exp := bits.Len64(ns) - 1 // ns in [2^exp, 2^(exp+1))
	mant := (ns >> (exp - subBits)) & (subBuckets - 1)
	return (exp-subBits+1)*subBuckets + int(mant)
}

// lowerBound is the smallest latency in bucket b.
func lowerBound(b int) uint64 {
	if b < subBuckets {
		return uint64(b)
	}
	exp := b/subBuckets + subBits - 1
	mant := uint64(b % subBuckets)
	return (1 << exp) | mant<<(exp-subBits)
}

func (h *histogram) add(d time.Duration) {
	if d < 0 {
		d = 0
	}
	h.buckets[bucketOf(uint64(d))]++
	h.n++
}

func (h *histogram) merge(o *histogram) {
	for i, c := range o.buckets {
		h.buckets[i] += c
	}
	h.n += o.n
}

// quantile returns the latency below which a fraction q of the samples
// lie, as the midpoint of its bucket.
func (h *histogram) quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(q*float64(h.n-1)) + 1
	var seen uint64
	for i, c := range h.buckets {
		seen += c
		if seen >= rank {
			lo, hi := lowerBound(i), lowerBound(i+1)
			return time.Duration((lo + hi) / 2)
		}
	}
	return 0
}
