// Command demo is sluice's demo server: routes limited per client IP and
// routes protected by API keys with quotas, on gorm, bun, ent, plain
// database/sql or pgx, over SQLite
// (no setup), PostgreSQL or MySQL, with optional Redis counters. It prints
// what to try when it starts.
//
//	go run ./examples/demo                    # gorm on a temporary SQLite file
//	go run ./examples/demo -orm ent -db postgres -dsn 'postgres://postgres@127.0.0.1:5432/test?sslmode=disable'
//	go run ./examples/demo burst -n 200       # 200 concurrent requests at an in-process server
//	go run ./examples/demo burst -n 200 -url http://127.0.0.1:8080/hello
//
// Every flag also reads an environment variable: SLUICE_DEMO_ADDR,
// SLUICE_DEMO_ORM, SLUICE_DEMO_DB, SLUICE_DEMO_DSN, SLUICE_DEMO_REDIS,
// SLUICE_DEMO_LOG_LEVEL, SLUICE_DEMO_OPERATOR_TOKEN.
//
// The operator console is at /operator/: sign in with the token the
// server prints when it starts (-operator-token sets it).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/sluice-go/sluice/examples/demo/server"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "demo:", err)
		}
		os.Exit(2)
	}
}

// run dispatches to the server or, with "burst" first, to the burst client.
func run(ctx context.Context, args []string, getenv func(string) string, out io.Writer) error {
	if len(args) > 0 && args[0] == "burst" {
		opts, err := parseBurst(args[1:], getenv, out)
		if err != nil {
			return err
		}
		return burst(ctx, opts, out)
	}
	opts, err := parseServe(args, getenv, out)
	if err != nil {
		return err
	}
	return serve(ctx, opts, out)
}

// serveOptions are the server's flags.
type serveOptions struct {
	addr  string
	level slog.Level
	cfg   server.Config
}

// burstOptions are the burst command's flags.
type burstOptions struct {
	url   string
	n     int
	key   string
	level slog.Level
	cfg   server.Config // the in-process server's, when url is empty
}

// databaseFlags declares the flags that choose the ORM, the database and the
// storage, defaulting to the environment.
func databaseFlags(fs *flag.FlagSet, cfg *server.Config, getenv func(string) string) {
	fs.StringVar(&cfg.ORM, "orm", or(getenv("SLUICE_DEMO_ORM"), server.ORMGorm), "ORM: "+strings.Join(server.ORMs, ", "))
	fs.StringVar(&cfg.DB, "db", or(getenv("SLUICE_DEMO_DB"), server.DBSQLite), "database: "+strings.Join(server.Databases, ", "))
	fs.StringVar(&cfg.DSN, "dsn", getenv("SLUICE_DEMO_DSN"),
		"database DSN: postgres://user:pass@host:port/db for postgres, user:pass@tcp(host:port)/db (go-sql-driver form, not a URL) for mysql; for sqlite a file path, default a new file in a temporary directory")
	fs.StringVar(&cfg.Redis, "redis", getenv("SLUICE_DEMO_REDIS"), "Redis address (host:port) for the per-IP rate-limit counters; default the database")
	fs.StringVar(&cfg.OperatorToken, "operator-token", getenv("SLUICE_DEMO_OPERATOR_TOKEN"), "bearer token of the operator console at /operator/; default a random one, printed at start")
}

// logLevelFlag declares -log-level, defaulting to SLUICE_DEMO_LOG_LEVEL or
// else def.
func logLevelFlag(fs *flag.FlagSet, level *slog.Level, def slog.Level, getenv func(string) string) error {
	if v := getenv("SLUICE_DEMO_LOG_LEVEL"); v != "" {
		if err := def.UnmarshalText([]byte(v)); err != nil {
			return fmt.Errorf("SLUICE_DEMO_LOG_LEVEL: %w", err)
		}
	}
	fs.TextVar(level, "log-level", def,
		"log level: debug (every decision and verification), info (denials), warn, error")
	return nil
}

// newLogger logs to w as text, from level up.
func newLogger(w io.Writer, level slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

func parseServe(args []string, getenv func(string) string, out io.Writer) (serveOptions, error) {
	var o serveOptions
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&o.addr, "addr", or(getenv("SLUICE_DEMO_ADDR"), "127.0.0.1:8080"), "address to listen on")
	databaseFlags(fs, &o.cfg, getenv)
	if err := logLevelFlag(fs, &o.level, slog.LevelInfo, getenv); err != nil {
		return o, err
	}
	fs.Usage = func() {
		fmt.Fprintln(out, "usage: demo [flags]\n       demo burst [-n 200] [-url URL] [-key KEY] [flags]\n\nflags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q (the only command is burst)", fs.Arg(0))
	}
	return o, nil
}

func parseBurst(args []string, getenv func(string) string, out io.Writer) (burstOptions, error) {
	var o burstOptions
	fs := flag.NewFlagSet("demo burst", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.IntVar(&o.n, "n", 200, "number of concurrent requests")
	fs.StringVar(&o.url, "url", "", "route to fire at; default /hello on a server started in this process")
	fs.StringVar(&o.key, "key", "", "API key to send in the x-api-key header")
	databaseFlags(fs, &o.cfg, getenv)
	// The in-process server would log every one of the burst's denials
	// at info: warn by default.
	if err := logLevelFlag(fs, &o.level, slog.LevelWarn, getenv); err != nil {
		return o, err
	}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("burst: unexpected argument %q", fs.Arg(0))
	}
	if o.n < 1 {
		return o, fmt.Errorf("burst: -n must be at least 1, got %d", o.n)
	}
	return o, nil
}

func or(v, def string) string {
	if v != "" {
		return v
	}
	return def
}

// serve runs the server until ctx ends.
func serve(ctx context.Context, o serveOptions, out io.Writer) error {
	o.cfg.Logger = newLogger(os.Stderr, o.level)
	srv, err := server.New(ctx, o.cfg)
	if err != nil {
		return err
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprint(out, srv.Banner("http://"+ln.Addr().String()))
	// Only here, never in GET /'s banner: whoever has it manages the keys.
	fmt.Fprintf(out, "\nOperator token: %s\n", srv.OperatorToken())
	fmt.Fprintln(out, "\nPress Ctrl-C to stop.")
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(shutdown); err != nil {
		return err
	}
	fmt.Fprintln(out, "stopped")
	return nil
}

// burst fires at o.url, or at /hello on a server of its own.
func burst(ctx context.Context, o burstOptions, out io.Writer) error {
	url := o.url
	if url == "" {
		o.cfg.Logger = newLogger(os.Stderr, o.level)
		srv, err := server.New(ctx, o.cfg)
		if err != nil {
			return err
		}
		defer srv.Close()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
		go hs.Serve(ln)
		defer hs.Close()
		url = "http://" + ln.Addr().String() + "/hello"
		fmt.Fprintf(out, "started %s\n", srv.Where())
	}
	fmt.Fprintf(out, "firing %d concurrent requests at %s\n", o.n, url)
	res, err := server.Burst(ctx, server.BurstConfig{URL: url, N: o.n, Key: o.key})
	if err != nil {
		return err
	}
	fmt.Fprintln(out, res)
	switch {
	case res.FirstError != nil:
		fmt.Fprintln(out, "first failure:", res.FirstError)
	case res.Limit >= 0 && int64(res.Admitted) == min(res.Limit, int64(o.n)):
		fmt.Fprintln(out, "exact: no request got past the limit, none was refused below it")
	case res.Limit >= 0 && int64(res.Admitted) > res.Limit:
		return fmt.Errorf("burst: %d requests got past a limit of %d", res.Admitted, res.Limit)
	case res.Limit >= 0:
		fmt.Fprintln(out, "fewer than the limit: the window was already partly used (or the key's quota ran out); wait for the reset and run again")
	}
	return nil
}
