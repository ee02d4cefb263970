package ratelimit

import "time"

// Policy is several rules on one key, decided all or nothing by
// [Limiter.ConsumePolicy]: a request is admitted only when every rule
// that is not a shadow rule admits it, and then counted under each rule
// (a shadow rule counts it when it fits); a denied request is counted
// under none. Each rule keeps its own counter. A policy has at least one
// rule, and its rules have distinct, non-empty names ([Rule.Name]).
type Policy []Rule

// RuleDecision is what one rule of a policy decided.
type RuleDecision struct {
	// Name is the rule's name ("default" for a lone rule without one).
	Name string
	// Rule is the rule itself.
	Rule Rule
	// Allowed is what this rule alone decided: for a shadow rule, whether
	// it would admit the request. A rule of an admitted policy counted the
	// request exactly when Allowed.
	Allowed bool
	// Shadow is Rule.Shadow.
	Shadow bool
	// Limit is the rule's Max.
	Limit int64
	// Remaining is how many units the rule's current window still admits.
	Remaining int64
	// Reset is when the rule's current window ends (see [Decision.Reset]).
	Reset time.Time
	// RetryAfter is how long a request this rule denies (or, shadow, would
	// deny) should wait; 0 when the rule admits.
	RetryAfter time.Duration
}

// defaultRuleName is what an unnamed lone rule is called.
const defaultRuleName = "default"

// PerRule returns one decision per rule: d.Rules for a policy's decision,
// and for a lone rule's a one-element slice built from d itself, named
// "default" (the rule's own name is not in a Decision: see
// [Decision.PerRuleOf] for it).
func (d Decision) PerRule() []RuleDecision {
	if d.Rules != nil {
		return d.Rules
	}
	return []RuleDecision{d.lone(Rule{Max: d.Limit})}
}

// PerRuleOf is [Decision.PerRule] for a lone rule's decision made under
// rule: its one element carries rule and its name.
func (d Decision) PerRuleOf(rule Rule) []RuleDecision {
	if d.Rules != nil {
		return d.Rules
	}
	return []RuleDecision{d.lone(rule)}
}

// lone is the RuleDecision of a lone rule's decision.
func (d Decision) lone(rule Rule) RuleDecision {
	name := rule.Name
	if name == "" {
		name = defaultRuleName
	}
	return RuleDecision{Name: name, Rule: rule, Allowed: d.Allowed && !d.WouldDeny, Shadow: rule.Shadow,
		Limit: d.Limit, Remaining: d.Remaining, Reset: d.Reset, RetryAfter: d.RetryAfter}
}

// Validate reports what is wrong with the policy, wrapping core.ErrInvalid:
// no rules, a rule without a name, two rules with one name, or a rule that
// [Rule.Validate] refuses (named by its index and name).
func (p Policy) Validate() error {
	if len(p) == 0 {
		return invalidf("empty policy: a policy needs at least one rule")
	}
	for i, r := range p {
		if r.Name == "" {
			return invalidf("policy rule %d has no name: every rule of a policy needs one", i)
		}
		if p := r.problem(); p != "" {
			return invalidf("policy rule %d (%q): %s", i, r.Name, p)
		}
		for j := range i {
			if p[j].Name == r.Name {
				return invalidf("policy rules %d and %d are both named %q: names must be unique", j, i, r.Name)
			}
		}
	}
	return nil
}
