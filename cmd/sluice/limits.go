package main

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-go/sluice/core/ratelimit"
)

// ruleFlag is -rule MAX/WINDOW, the rule a counter was made under.
type ruleFlag struct {
	r   ratelimit.Rule
	set bool
}

func (f *ruleFlag) String() string { return "" }

func (f *ruleFlag) Set(s string) error {
	if r, err := ratelimit.ParseRule(s); err == nil && r.Calendar != 0 {
		f.r, f.set = r, true // a calendar rule: 1000/day, 1000/month@Europe/Berlin
		return nil
	}
	max, window, ok := strings.Cut(s, "/")
	n, err := strconv.ParseInt(max, 10, 64)
	if !ok || err != nil {
		return fmt.Errorf("%q is not MAX/WINDOW, such as 5/10s", s)
	}
	w, err := time.ParseDuration(window)
	if err != nil {
		return fmt.Errorf("%q: window: %v", s, err)
	}
	f.r, f.set = ratelimit.Rule{Max: n, Window: w}, true
	return f.r.Validate()
}

// limiter parses a limits command and opens a limiter on the database.
func limiter(c *cli, name string, args []string) (*ratelimit.Limiter, ratelimit.Rule, string, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	var rule ruleFlag
	fs.Var(&rule, "rule", "MAX/WINDOW: the rule the counter is kept under, such as 5/10s, or a calendar rule such as 1000/day@Europe/Berlin")
	pos, err := c.parse(fs, args, 1, "a rate-limit key (such as a client address)")
	if err != nil {
		return nil, rule.r, "", err
	}
	if !rule.set {
		return nil, rule.r, "", usagef("%s needs -rule MAX/WINDOW", name)
	}
	db, err := c.open()
	if err != nil {
		return nil, rule.r, "", err
	}
	l, err := ratelimit.New(ratelimit.Database(db))
	return l, rule.r, pos[0], err
}

func limitsShow(ctx context.Context, c *cli, args []string) error {
	l, rule, key, err := limiter(c, "limits show", args)
	if err != nil {
		return err
	}
	defer l.Close()
	d, err := l.Check(ctx, key, rule)
	if err != nil {
		return err
	}
	if c.json {
		out := map[string]any{"key": key, "max": rule.Max, "timeWindow": rule.Window.Milliseconds(),
			"remaining": d.Remaining, "allowed": d.Allowed, "reset": d.Reset.UTC()}
		if rule.Calendar != 0 {
			_, out["calendar"], _ = strings.Cut(rule.String(), "/")
		}
		return c.printJSON(out)
	}
	t := newTable(c.out)
	t.row("key", key)
	if rule.Calendar != 0 {
		t.row("rule", rule.String()+" (a calendar window)")
	} else {
		t.row("rule", fmt.Sprintf("%d per %v", rule.Max, rule.Window))
	}
	t.row("remaining", strconv.FormatInt(d.Remaining, 10))
	t.row("allowed now", strconv.FormatBool(d.Allowed))
	t.row("window ends", d.Reset.UTC().Format(time.RFC3339))
	return t.flush()
}

func limitsReset(ctx context.Context, c *cli, args []string) error {
	l, rule, key, err := limiter(c, "limits reset", args)
	if err != nil {
		return err
	}
	defer l.Close()
	if err := l.ResetRule(ctx, key, rule); err != nil {
		return err
	}
	if c.json {
		return c.printJSON(map[string]any{"success": true, "key": key})
	}
	fmt.Fprintf(c.out, "counter of %s reset: its next request opens a new window\n", key)
	return nil
}
