package sluicehttp

import (
	"fmt"
	"net/http"
	"net/netip"
	"strings"
)

// UnknownClient is the client part of the key of requests with no usable
// IP address: they share one bucket per path rather than go unlimited.
const UnknownClient = "unknown"

// ClientKey returns the client part of a request's rate-limit key: its IP
// address, with IPv4-mapped IPv6 addresses as IPv4 and IPv6 addresses
// grouped by their /64 prefix (one subscriber usually holds a whole /64),
// or [UnknownClient].
//
// The address is the connection's peer (RemoteAddr). When the peer is in
// trusted, the request came through a proxy: X-Forwarded-For is read from
// the right, skipping addresses in trusted, and the first other address is
// the client (addresses to its left were written by the client and prove
// nothing). When every address is trusted, the leftmost one is used. An
// unparsable address where the client should be gives [UnknownClient]. A
// trusted prefix written as IPv4-mapped IPv6 (::ffff:10.0.0.0/104) is
// compared as its IPv4 prefix (10.0.0.0/8).
func ClientKey(r *http.Request, trusted []netip.Prefix) string {
	a, ok := clientAddr(r, trusted, "")
	if !ok {
		return UnknownClient
	}
	return group(a, 32, 64)
}

// ClientKey returns the client part of r's key as the middleware built
// from c computes it: [ClientKey] with c.TrustedProxies, except that the
// address comes from c.ClientIPHeader when one is named, and clients are
// grouped by c.IPv4Prefix and c.IPv6Prefix. A [RateLimitConfig].Key
// function can call it to combine the client's address with something
// else, such as r.Pattern. It does not validate c; [RateLimit] does.
func (c RateLimitConfig) ClientKey(r *http.Request) string {
	a, ok := clientAddr(r, c.TrustedProxies, c.ClientIPHeader)
	if !ok {
		return UnknownClient
	}
	return group(a, prefixOr(c.IPv4Prefix, 32), prefixOr(c.IPv6Prefix, 64))
}

func prefixOr(bits, def int) int {
	if bits == 0 {
		return def
	}
	return bits
}

// clientAddr returns the client's address: the peer's, or, when the peer
// is trusted, the one its proxy reports, in header when it is named (the
// last value, the one the nearest proxy wrote; the peer's own address when
// the header is absent) and in X-Forwarded-For otherwise (see [ClientKey]).
// It reports false when no usable address is where the client's should be.
func clientAddr(r *http.Request, trusted []netip.Prefix, header string) (netip.Addr, bool) {
	peer, ok := parseHost(r.RemoteAddr)
	if !ok || !isTrusted(peer, trusted) {
		return peer, ok
	}
	if header != "" {
		vals := r.Header.Values(header)
		if len(vals) == 0 {
			return peer, true
		}
		last := vals[len(vals)-1]
		if i := strings.LastIndexByte(last, ','); i >= 0 {
			last = last[i+1:]
		}
		return parseHost(strings.TrimSpace(last))
	}
	addr := peer
	hops := forwardedFor(r)
	for i := len(hops) - 1; i >= 0; i-- {
		a, ok := parseHost(hops[i])
		if !ok {
			return a, false
		}
		addr = a
		if !isTrusted(a, trusted) {
			break
		}
	}
	return addr, true
}

// forwardedFor returns every X-Forwarded-For hop, left to right, across
// repeated headers.
func forwardedFor(r *http.Request) []string {
	var hops []string
	for _, h := range r.Header.Values("X-Forwarded-For") {
		for _, hop := range strings.Split(h, ",") {
			if hop = strings.TrimSpace(hop); hop != "" {
				hops = append(hops, hop)
			}
		}
	}
	return hops
}

// parseHost parses "ip", "ip:port", "[ipv6]:port" or "[ipv6]".
func parseHost(s string) (netip.Addr, bool) {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return normal(ap.Addr())
	}
	s = strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}, false
	}
	return normal(a)
}

func normal(a netip.Addr) (netip.Addr, bool) {
	a = a.Unmap().WithZone("")
	return a, a.IsValid() && !a.IsUnspecified()
}

// isTrusted compares a (IPv4-mapped addresses already unmapped) with each
// prefix. A prefix written as IPv4-mapped IPv6 would never contain an
// unmapped address, so it is compared as its IPv4 prefix.
func isTrusted(a netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if p.Addr().Is4In6() && p.Bits() >= 96 {
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// normalPrefix returns a trusted-proxy prefix as client addresses are
// compared with it: an IPv4-mapped IPv6 prefix (::ffff:10.0.0.0/104)
// becomes its IPv4 prefix (10.0.0.0/8). It refuses what could never match
// as written: an invalid prefix, and one that spans IPv4-mapped space and
// more (shorter than /96), which must be written as separate IPv4 and
// IPv6 prefixes.
func normalPrefix(p netip.Prefix) (netip.Prefix, error) {
	switch {
	case !p.IsValid():
		return p, fmt.Errorf("invalid prefix %q", p)
	case p.Addr().Is4In6() && p.Bits() < 96:
		return p, fmt.Errorf("prefix %s spans IPv4-mapped addresses and more: write its IPv4 part as an IPv4 prefix and its IPv6 part separately", p)
	case p.Addr().Is4In6():
		return netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96).Masked(), nil
	}
	return p.Masked(), nil
}

// group returns a as a key: an IPv4 address as itself when v4 is 32, and
// otherwise the prefix of v4 (IPv4) or v6 (IPv6) bits that holds it.
func group(a netip.Addr, v4, v6 int) string {
	if a.Is4() && v4 == 32 {
		return a.String()
	}
	bits := v6
	if a.Is4() {
		bits = v4
	}
	p, _ := a.Prefix(bits)
	return p.String()
}
