package ratelimit

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strings"
	"time"

	"github.com/sluice-go/sluice/core/driver"
)

// policyKey returns the storage key of rule name of a policy on key.
func policyKey(key, name string) string {
	if strings.IndexByte(key, '}') >= 0 {
		// A '}' in k would end the hash tag inside k, and one first would
		// leave it empty, so that Redis Cluster hashes the whole name and
		// puts each rule in a slot of its own (a cross-slot script fails,
		// and WithFailOpen would admit): such a key is named by its digest.
		sum := sha256.Sum256([]byte(key))
		return "{#=" + base64.RawURLEncoding.EncodeToString(sum[:]) + "}" + PolicySeparator + name
	}
	if n := len(key) + len(name) + len(PolicySeparator) + 2; n <= MaxKeyLength {
		return "{" + key + "}" + PolicySeparator + name
	}
	sum := sha256.Sum256([]byte(key))
	tail := "#=" + base64.RawURLEncoding.EncodeToString(sum[:])
	keep := MaxKeyLength - len(tail) - len(name) - len(PolicySeparator) - 2
	head := key[:keep]
	for len(head) > 0 && !validTail(head) { // do not cut a character in two
		head = head[:len(head)-1]
	}
	return "{" + head + tail + "}" + PolicySeparator + name
}

// validTail reports whether s does not end inside a UTF-8 sequence.
func validTail(s string) bool {
	for i := len(s) - 1; i >= 0 && i >= len(s)-4; i-- {
		c := s[i]
		if c < 0x80 {
			return true
		}
		if c >= 0xC0 { // a leading byte: complete when the rest follows
			n := 2
			switch {
			case c >= 0xF0:
				n = 4
			case c >= 0xE0:
				n = 3
			}
			return len(s)-i == n
		}
	}
	return true
}

// item is one rule of a policy's decision.
type item struct {
	key  string // the rule's storage key
	rule Rule
	st   state
	// known: st was decided without the storage (Max 0, a cost above
	// Max, a cached denial); asked: the storage decided it, as if the
	// policy were admitted; read: a check read it, counting nothing.
	known, asked, read bool
}

// policyStorage decides a policy's rules at once: it fills every item's
// st, each rule's state as if the policy were admitted (fits or not), and
// counts cost under every rule that fits when every rule that is not a
// shadow rule fits, and under none otherwise. Every storage of this
// package has one.
type policyStorage interface {
	consumeAll(ctx context.Context, items []*item, cost, now int64, m Mode, attempts int) error
}

// ConsumePolicy spends cost units of key's budget under every rule of p,
// all or nothing: the request is admitted only when every rule that is
// not a shadow rule ([Rule.Shadow]) admits it, and then counted under
// each of them (and under each shadow rule it fits); a denied request is
// counted under none. Each rule keeps its own counter (see
// [PolicySeparator]), decided by the limiter's [Mode].
//
// The decision's Rules reports every rule, in p's order; its other
// fields report the binding rule: when denied, the denying rule with the
// longest RetryAfter, named by DeniedBy; otherwise the rule with the
// fewest Remaining, shadow rules counting only when every rule is one.
// WouldDeny reports an admitted request that a shadow rule would have
// denied. A policy is decided in one transaction on [Database] storage,
// in one atomic step on [Secondary] storage (driver.PolicyApplier) and
// under the counters' locks in [Memory]: see "Policies" in the package
// documentation. Bad input (p failing [Policy.Validate], a rule the mode
// cannot compute, a bad key or cost) is an error wrapping core.ErrInvalid
// before anything is written.
func (l *Limiter) ConsumePolicy(ctx context.Context, key string, p Policy, cost int64) (Decision, error) {
	if l != nil && l.observe != nil {
		return l.observedPolicy(ctx, key, p, cost)
	}
	d, _, err := l.consumePolicy(ctx, key, p, cost)
	return d, err
}

// CheckPolicy reports whether a request of cost 1 would be admitted under
// every rule of p now, without counting anything: ConsumePolicy with cost
// 0. Each rule is read on its own, not in one atomic step.
func (l *Limiter) CheckPolicy(ctx context.Context, key string, p Policy) (Decision, error) {
	return l.ConsumePolicy(ctx, key, p, 0)
}

// CheckPolicyRules reports, before any request is decided, whether l can
// decide requests under p: [Limiter.CheckRule] for each rule, and
// [Policy.Validate], and that the storage serves policies (a [Secondary]
// storage needs driver.PolicyApplier).
func (l *Limiter) CheckPolicyRules(p Policy) error {
	if err := p.Validate(); err != nil {
		return err
	}
	for i, r := range p {
		if err := l.CheckRule(r); err != nil {
			return invalidf("policy rule %d (%q): %v", i, r.Name, err)
		}
	}
	if s, ok := l.store.(*secondaryStorage); ok {
		return s.policyCapable()
	}
	return nil
}

// consumePolicy is ConsumePolicy, and the index of the binding rule (-1
// on an error).
func (l *Limiter) consumePolicy(ctx context.Context, key string, p Policy, cost int64) (Decision, int, error) {
	if err := l.usable(); err != nil {
		return Decision{}, -1, err
	}
	now := l.now()
	if err := l.validatePolicy(key, p, cost); err != nil {
		return Decision{}, -1, keyError(key, err)
	}
	items := make([]item, len(p))
	ask := make([]*item, 0, len(p))
	blocked := false // a rule that is not a shadow rule denies without the storage
	for i, r := range p {
		it := &items[i]
		*it = item{key: policyKey(key, r.Name), rule: r}
		switch {
		case r.Max == 0 || cost > r.Max:
			it.st, it.known = state{reset: r.frame(now).end()}, true
		default:
			it.st, it.known = l.cached(it.key, &it.rule, now)
		}
		if it.known && !r.Shadow {
			blocked = true
		}
		if !it.known {
			ask = append(ask, it)
		}
	}
	var err error
	switch {
	case cost == 0:
		for _, it := range ask {
			if it.st, err = l.store.peek(ctx, it.key, it.rule, now, l.mode); err != nil {
				break
			}
			it.read = true
		}
	case blocked:
		// Denied without a write: the other rules are only read, to report
		// them.
		for _, it := range ask {
			if it.st, err = l.store.peek(ctx, it.key, it.rule, now, l.mode); err != nil {
				break
			}
			it.st.allowed = it.st.count <= it.rule.Max-cost
			it.read = true
		}
	case len(ask) > 0:
		if err = l.store.(policyStorage).consumeAll(ctx, ask, cost, now, l.mode, l.attempts); err == nil {
			for _, it := range ask {
				it.asked = true
			}
		}
	}
	if err != nil {
		d, err := l.policyFailure(ctx, key, p, err)
		return d, -1, err
	}
	d, bind := l.policyDecision(items, now, cost)
	return d, bind, nil
}

// validatePolicy refuses a policy request before any I/O: what
// Policy.Validate refuses, and each rule as a lone request's.
func (l *Limiter) validatePolicy(key string, p Policy, cost int64) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if err := p.Validate(); err != nil {
		return err
	}
	for i, r := range p {
		if err := l.validate(key, r, cost); err != nil {
			return fmt.Errorf("policy rule %d (%q): %w", i, r.Name, err)
		}
	}
	return nil
}

// policyFailure is the decision of a policy whose storage failed: the
// failure policy's, admitted too when every rule is a shadow rule.
func (l *Limiter) policyFailure(ctx context.Context, key string, p Policy, err error) (Decision, error) {
	open := l.failOpen
	if !open {
		open = true
		for _, r := range p {
			open = open && r.Shadow
		}
	}
	return Decision{Allowed: open && outage(ctx, err)}, keyError(key, err)
}

// policyDecision turns the rules' states into the caller's Decision, and
// feeds the denial cache with the rules the storage found full.
func (l *Limiter) policyDecision(items []item, now, cost int64) (Decision, int) {
	admitted := true
	for i := range items {
		admitted = admitted && (items[i].st.allowed || items[i].rule.Shadow)
	}
	d := Decision{Allowed: admitted, Rules: make([]RuleDecision, len(items))}
	bind, allShadow := -1, true
	for i := range items {
		allShadow = allShadow && items[i].rule.Shadow
	}
	for i := range items {
		it := &items[i]
		st := it.st
		if it.asked && cost > 0 && st.allowed && !admitted {
			st = l.uncharged(st, it.rule, now, cost)
		}
		if (it.asked || it.read) && !st.allowed && st.count >= it.rule.Max && st.reset > now && l.denials != nil {
			l.denials.put(it.key, denialOf(&it.rule, st.reset), now)
		}
		var one Decision
		l.decide(&one, &it.rule, now, cost, st)
		d.Rules[i] = RuleDecision{Name: it.rule.Name, Rule: it.rule, Allowed: one.Allowed, Shadow: it.rule.Shadow,
			Limit: one.Limit, Remaining: one.Remaining, Reset: one.Reset, RetryAfter: one.RetryAfter}
		if !one.Allowed && it.rule.Shadow && admitted {
			d.WouldDeny = true
		}
		if binds(d.Rules, bind, i, admitted, allShadow) {
			bind = i
		}
	}
	b := d.Rules[bind]
	d.Limit, d.Remaining, d.Reset = b.Limit, b.Remaining, b.Reset
	if !admitted {
		d.RetryAfter, d.DeniedBy = b.RetryAfter, b.Name
	}
	return d, bind
}

// observedPolicy is ConsumePolicy with the observer told: the event's
// Rule is the binding rule, its Policy the policy.
func (l *Limiter) observedPolicy(ctx context.Context, key string, p Policy, cost int64) (Decision, error) {
	start := time.Now()
	cctx, trips := driver.WithRoundTrips(ctx)
	d, bind, err := l.consumePolicy(cctx, key, p, cost)
	e := Event{Key: key, Policy: p, Cost: cost, Mode: l.mode, Storage: storageName(l.store),
		Decision: d, Err: err, Start: start, Latency: time.Since(start), RoundTrips: trips.Count(), Retries: trips.Retries(), Node: trips.Node()}
	if bind >= 0 {
		e.Rule = p[bind]
	}
	l.observe(ctx, e)
	return d, err
}

// binds reports whether rule i binds rather than rule cur (-1: none yet):
// when denied, the denying rule that is not a shadow rule with the longest
// RetryAfter; otherwise the one with the fewest Remaining, shadow rules
// only when every rule is one. The first wins a tie.
func binds(rs []RuleDecision, cur, i int, admitted, allShadow bool) bool {
	r := rs[i]
	if !admitted {
		if r.Allowed || r.Shadow {
			return false
		}
		return cur < 0 || r.RetryAfter > rs[cur].RetryAfter
	}
	if r.Shadow && !allShadow {
		return false
	}
	return cur < 0 || r.Remaining < rs[cur].Remaining
}

// uncharged is the state of a rule that fits, as reported after the
// charge, for a policy denied by another rule: nothing was counted.
func (l *Limiter) uncharged(st state, rule Rule, now, cost int64) state {
	st.count = max(st.count-cost, 0)
	if l.mode == GCRA {
		st.reset = max(st.reset-cost*gcraInterval(rule), now)
	}
	return st
}
