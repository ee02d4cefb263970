// Command sluice manages the API keys and rate-limit counters of a sluice
// database, and its tables, from a shell:
//
//	go install github.com/sluice-go/sluice/cmd/sluice@latest
//	export SLUICE_DRIVER=postgres SLUICE_DSN='postgres://app@db/app'
//	sluice keys create -owner user-1 -prefix sk_ -remaining 1000
//	sluice keys list -owner user-1
//	sluice keys show 42
//	sluice keys update 42 -disable
//	sluice keys reroll 42 -grace 1h
//	sluice keys revoke 42
//	sluice limits show -rule 5/10s 203.0.113.7
//	sluice limits reset -rule 5/10s 203.0.113.7
//	sluice schema check | create | diff
//
// The database is opened through sluice's SQL engine (package sluicesql)
// with -driver (sqlite, postgres or mysql; $SLUICE_DRIVER) and -dsn
// ($SLUICE_DSN: a file path or modernc DSN for sqlite, postgres://… for
// PostgreSQL, user@tcp(host:port)/db for MySQL and MariaDB). -tables
// ($SLUICE_TABLES) renames tables, as core.Naming does: apikey=keys,rateLimit=limits.
//
// Tables are printed for people; -json prints JSON for scripts (a key in
// the form of the operator API). A failure prints one line, "sluice:
// reason", to standard error and exits 1; a usage error exits 2.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// errUsage marks an error in how the command was called (exit 2).
var errUsage = errors.New("usage")

const usage = `usage: sluice [-driver D -dsn DSN -tables T -json] COMMAND
  keys create -owner ID [-name N -prefix P -remaining N -refill-interval D -refill-amount N
              -rate-limit MAX/WINDOW|off -expires-in D -permission RES:ACT,ACT -disabled]
  keys list [-owner ID -prefix P -enabled true|false -expiring-within D -limit N -cursor ID]
  keys show ID
  keys update ID [-name N -enable|-disable -remaining N|-unlimited -rate-limit MAX/WINDOW|off
                  -expires-in D|-no-expiry -reset-rate-limit]
  keys reroll ID [-grace D]
  keys revoke ID
  limits show -rule MAX/WINDOW KEY
  limits reset -rule MAX/WINDOW KEY
  schema check | create | diff
environment: SLUICE_DRIVER, SLUICE_DSN, SLUICE_TABLES`

// run is the command: its exit code, after writing its output to out and
// a failure's one line to errOut.
func run(ctx context.Context, args []string, getenv func(string) string, out, errOut io.Writer) int {
	err := dispatch(ctx, args, getenv, out)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprintln(errOut, usage)
		return 2
	case errors.Is(err, errUsage):
		fmt.Fprintln(errOut, "sluice:", oneLine(err))
		fmt.Fprintln(errOut, "run sluice -h for the commands")
		return 2
	}
	fmt.Fprintln(errOut, "sluice:", oneLine(err))
	return 1
}

// oneLine keeps an error to the one line it promises, whatever a driver
// put in it.
func oneLine(err error) string {
	return strings.Join(strings.Fields(strings.TrimPrefix(strings.TrimPrefix(err.Error(), "usage: "), "sluice: ")), " ")
}

func usagef(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errUsage}, args...)...)
}

// command is a subcommand: it gets the parsed common options and its own
// arguments.
type command func(ctx context.Context, c *cli, args []string) error

var commands = map[string]map[string]command{
	"keys":   {"create": keysCreate, "list": keysList, "show": keysShow, "update": keysUpdate, "reroll": keysReroll, "revoke": keysRevoke},
	"limits": {"show": limitsShow, "reset": limitsReset},
	"schema": {"check": schemaCheck, "create": schemaCreate, "diff": schemaDiff},
}

func dispatch(ctx context.Context, args []string, getenv func(string) string, out io.Writer) error {
	c := &cli{out: out}
	fs := flag.NewFlagSet("sluice", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c.common(fs, getenv)
	if err := fs.Parse(args); err != nil {
		return usageErr(err)
	}
	args = fs.Args()
	if len(args) < 2 {
		if len(args) == 1 && commands[args[0]] == nil {
			return usagef("unknown command %q", args[0])
		}
		return flag.ErrHelp
	}
	group, ok := commands[args[0]]
	if !ok {
		return usagef("unknown command %q", args[0])
	}
	cmd, ok := group[args[1]]
	if !ok {
		return usagef("unknown command %q %q", args[0], args[1])
	}
	c.getenv = getenv
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	defer c.close()
	return cmd(ctx, c, args[2:])
}

func usageErr(err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return err
	}
	return usagef("%v", err)
}

// parse parses a subcommand's flags, which may come before or after its
// positional arguments, and returns those; the common flags are accepted
// there too. want is how many positional arguments it takes.
func (c *cli) parse(fs *flag.FlagSet, args []string, want int, names string) ([]string, error) {
	fs.SetOutput(io.Discard)
	c.common(fs, c.getenv)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, usageErr(err)
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(pos) != want {
		if want == 0 {
			return nil, usagef("%s takes no arguments, got %q", fs.Name(), pos)
		}
		return nil, usagef("%s needs %s", fs.Name(), names)
	}
	return pos, nil
}
