package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-go/sluice/core/apikey"
	"github.com/sluice-go/sluice/operator"
)

// rateFlag is -rate-limit: MAX/WINDOW, such as 10/1m, or off.
type rateFlag struct{ r *apikey.RateLimit }

func (f *rateFlag) String() string { return "" }

func (f *rateFlag) Set(s string) error {
	if s == "off" {
		f.r = &apikey.RateLimit{}
		return nil
	}
	max, window, ok := strings.Cut(s, "/")
	n, err := strconv.ParseInt(max, 10, 64)
	if !ok || err != nil {
		return fmt.Errorf("%q is not MAX/WINDOW (such as 10/1m) or off", s)
	}
	w, err := time.ParseDuration(window)
	if err != nil {
		return fmt.Errorf("%q: window: %v", s, err)
	}
	f.r = &apikey.RateLimit{Enabled: true, Max: n, Window: w}
	return nil
}

// optInt is an integer flag that knows whether it was given.
type optInt struct{ v *int64 }

func (f *optInt) String() string { return "" }

func (f *optInt) Set(s string) error {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return fmt.Errorf("%q is not an integer", s)
	}
	f.v = &n
	return nil
}

// permFlag is -permission RESOURCE:ACTION,ACTION, repeatable.
type permFlag map[string][]string

func (f permFlag) String() string { return "" }

func (f permFlag) Set(s string) error {
	res, actions, ok := strings.Cut(s, ":")
	if !ok || res == "" || actions == "" {
		return fmt.Errorf("%q is not RESOURCE:ACTION[,ACTION…]", s)
	}
	f[res] = append(f[res], strings.Split(actions, ",")...)
	return nil
}

// parseKeyID parses the flags of a command that takes one key id, and
// the id.
func (c *cli) parseKeyID(fs *flag.FlagSet, args []string) (int64, error) {
	pos, err := c.parse(fs, args, 1, "a key id")
	if err != nil {
		return 0, err
	}
	id, err := strconv.ParseInt(pos[0], 10, 64)
	if err != nil || id <= 0 {
		return 0, usagef("key id %q is not a positive integer", pos[0])
	}
	return id, nil
}

func keysCreate(ctx context.Context, c *cli, args []string) error {
	fs := flag.NewFlagSet("keys create", flag.ContinueOnError)
	var p apikey.CreateParams
	var remaining, refillAmount optInt
	var rate rateFlag
	perms := permFlag{}
	var refillEvery time.Duration
	fs.StringVar(&p.ReferenceID, "owner", "", "the owner (reference id): required")
	fs.StringVar(&p.Name, "name", "", "a name")
	fs.StringVar(&p.Prefix, "prefix", "", "a prefix of the secret, such as sk_")
	fs.Var(&remaining, "remaining", "the quota (default unlimited)")
	fs.DurationVar(&refillEvery, "refill-interval", 0, "restore the quota this often")
	fs.Var(&refillAmount, "refill-amount", "to this amount")
	fs.Var(&rate, "rate-limit", "MAX/WINDOW, such as 10/1m, or off (default the manager's)")
	fs.DurationVar(&p.ExpiresIn, "expires-in", 0, "expire after this long (default never)")
	fs.Var(perms, "permission", "RESOURCE:ACTION,ACTION (repeatable)")
	fs.BoolVar(&p.Disabled, "disabled", false, "create it disabled")
	if _, err := c.parse(fs, args, 0, ""); err != nil {
		return err
	}
	if p.ReferenceID == "" {
		return usagef("keys create needs -owner")
	}
	p.Remaining, p.RateLimit = remaining.v, rate.r
	if refillEvery != 0 || refillAmount.v != nil {
		p.Refill = apikey.Refill{Interval: refillEvery, Amount: deref(refillAmount.v)}
	}
	if len(perms) > 0 {
		p.Permissions = perms
	}
	m, err := c.keys()
	if err != nil {
		return err
	}
	secret, k, err := m.Create(ctx, p)
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(operator.CreatedKey{Key: secret, APIKey: operator.FromKey(k)})
	}
	fmt.Fprintf(c.out, "secret: %s\n(shown this once: it is not stored)\n\n", secret)
	return c.showKey(k)
}

func keysList(ctx context.Context, c *cli, args []string) error {
	fs := flag.NewFlagSet("keys list", flag.ContinueOnError)
	var f apikey.Filter
	var enabled string
	var within time.Duration
	var limit int
	var cursor int64
	fs.StringVar(&f.ReferenceID, "owner", "", "only this owner's keys")
	fs.StringVar(&f.Prefix, "prefix", "", "only keys with this prefix")
	fs.StringVar(&enabled, "enabled", "", "true or false: only enabled or disabled keys")
	fs.DurationVar(&within, "expiring-within", 0, "only keys expiring within this long (expired ones too)")
	fs.IntVar(&limit, "limit", 50, "keys per page, 1 to 1000")
	fs.Int64Var(&cursor, "cursor", 0, "the next cursor a previous page printed")
	if _, err := c.parse(fs, args, 0, ""); err != nil {
		return err
	}
	if enabled != "" {
		b, err := strconv.ParseBool(enabled)
		if err != nil {
			return usagef("-enabled %q: want true or false", enabled)
		}
		f.Enabled = &b
	}
	if within < 0 {
		return usagef("-expiring-within %v is negative", within)
	}
	if within > 0 {
		f.ExpiresBefore = time.Now().Add(within)
	}
	m, err := c.keys()
	if err != nil {
		return err
	}
	keys, next, err := m.Search(ctx, f, cursor, limit)
	if err != nil {
		return err
	}
	if c.json {
		out := struct {
			APIKeys    []operator.APIKey `json:"apiKeys"`
			NextCursor *int64            `json:"nextCursor"`
		}{APIKeys: []operator.APIKey{}}
		for _, k := range keys {
			out.APIKeys = append(out.APIKeys, operator.FromKey(k))
		}
		if next != 0 {
			out.NextCursor = &next
		}
		return c.printJSON(out)
	}
	t := newTable(c.out, "ID", "NAME", "OWNER", "START", "ENABLED", "REMAINING", "RATE LIMIT", "EXPIRES")
	for _, k := range keys {
		t.row(strconv.FormatInt(k.ID, 10), k.Name, k.ReferenceID, k.Start+"…", strconv.FormatBool(k.Enabled),
			quota(k), rateText(k.RateLimit), timeText(k.ExpiresAt, "never"))
	}
	if err := t.flush(); err != nil {
		return err
	}
	if next != 0 {
		fmt.Fprintf(c.out, "more: -cursor %d\n", next)
	}
	return nil
}

func keysShow(ctx context.Context, c *cli, args []string) error {
	fs := flag.NewFlagSet("keys show", flag.ContinueOnError)
	id, err := c.parseKeyID(fs, args)
	if err != nil {
		return err
	}
	m, err := c.keys()
	if err != nil {
		return err
	}
	k, err := m.Get(ctx, id)
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(operator.FromKey(k))
	}
	return c.showKey(k)
}

func keysUpdate(ctx context.Context, c *cli, args []string) error {
	fs := flag.NewFlagSet("keys update", flag.ContinueOnError)
	var u apikey.UpdateParams
	var name string
	var enable, disable, noExpiry bool
	var remaining optInt
	var rate rateFlag
	var expiresIn time.Duration
	fs.StringVar(&name, "name", "", "a new name")
	fs.BoolVar(&enable, "enable", false, "enable the key")
	fs.BoolVar(&disable, "disable", false, "disable the key")
	fs.Var(&remaining, "remaining", "a new quota")
	fs.BoolVar(&u.Unlimited, "unlimited", false, "remove the quota")
	fs.Var(&rate, "rate-limit", "MAX/WINDOW, such as 10/1m, or off")
	fs.DurationVar(&expiresIn, "expires-in", 0, "expire this long from now")
	fs.BoolVar(&noExpiry, "no-expiry", false, "never expire")
	fs.BoolVar(&u.ResetRateLimit, "reset-rate-limit", false, "start the rate-limit window afresh")
	id, err := c.parseKeyID(fs, args)
	if err != nil {
		return err
	}
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "name" {
			u.Name = &name
		}
	})
	switch {
	case enable && disable:
		return usagef("-enable and -disable exclude each other")
	case enable || disable:
		u.Enabled = &enable
	}
	switch {
	case noExpiry && expiresIn != 0:
		return usagef("-expires-in and -no-expiry exclude each other")
	case noExpiry:
		u.ExpiresAt = &time.Time{}
	case expiresIn < 0:
		return usagef("-expires-in %v is negative", expiresIn)
	case expiresIn > 0:
		u.ExpiresAt = ptr(time.Now().Add(expiresIn))
	}
	u.Remaining, u.RateLimit = remaining.v, rate.r
	m, err := c.keys()
	if err != nil {
		return err
	}
	k, err := m.Update(ctx, id, u)
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(operator.FromKey(k))
	}
	return c.showKey(k)
}

func keysReroll(ctx context.Context, c *cli, args []string) error {
	fs := flag.NewFlagSet("keys reroll", flag.ContinueOnError)
	grace := fs.Duration("grace", 0, "how long the old secret keeps working (default: it stops at once)")
	id, err := c.parseKeyID(fs, args)
	if err != nil {
		return err
	}
	m, err := c.keys()
	if err != nil {
		return err
	}
	secret, k, err := m.Reroll(ctx, id, *grace)
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(operator.CreatedKey{Key: secret, APIKey: operator.FromKey(k)})
	}
	fmt.Fprintf(c.out, "new secret: %s\n(shown this once: it is not stored)\n\n", secret)
	return c.showKey(k)
}

func keysRevoke(ctx context.Context, c *cli, args []string) error {
	fs := flag.NewFlagSet("keys revoke", flag.ContinueOnError)
	id, err := c.parseKeyID(fs, args)
	if err != nil {
		return err
	}
	m, err := c.keys()
	if err != nil {
		return err
	}
	ok, err := m.Delete(ctx, id)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("there is no key %d", id)
	}
	if c.json {
		return c.printJSON(map[string]any{"success": true, "keyId": id})
	}
	fmt.Fprintf(c.out, "key %d revoked: it no longer verifies\n", id)
	return nil
}

// showKey prints one key, a field a line.
func (c *cli) showKey(k *apikey.Key) error {
	t := newTable(c.out)
	t.row("id", strconv.FormatInt(k.ID, 10))
	t.row("name", k.Name)
	t.row("owner", k.ReferenceID)
	t.row("start", k.Start+"…")
	t.row("enabled", strconv.FormatBool(k.Enabled))
	t.row("remaining", quota(k))
	if k.Refill != (apikey.Refill{}) {
		t.row("refill", fmt.Sprintf("to %d every %v", k.Refill.Amount, k.Refill.Interval))
	}
	t.row("rate limit", rateText(k.RateLimit))
	if k.RateLimit.Enabled {
		t.row("requests in window", strconv.FormatInt(k.RequestCount, 10))
	}
	t.row("expires", timeText(k.ExpiresAt, "never"))
	t.row("created", timeText(k.CreatedAt, ""))
	t.row("updated", timeText(k.UpdatedAt, ""))
	if len(k.Permissions) > 0 {
		b, _ := json.Marshal(k.Permissions)
		t.row("permissions", string(b))
	}
	for name, l := range k.Limits {
		t.row("limit "+name, fmt.Sprintf("%d of %d per %v", l.Count, l.Max, l.Window))
	}
	return t.flush()
}

func quota(k *apikey.Key) string {
	if k.Remaining == nil {
		return "unlimited"
	}
	return strconv.FormatInt(*k.Remaining, 10)
}

func rateText(r apikey.RateLimit) string {
	if !r.Enabled {
		return "off"
	}
	return fmt.Sprintf("%d per %v", r.Max, r.Window)
}

func timeText(t time.Time, zero string) string {
	if t.IsZero() {
		return zero
	}
	return t.UTC().Format(time.RFC3339)
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func ptr[T any](v T) *T { return &v }
