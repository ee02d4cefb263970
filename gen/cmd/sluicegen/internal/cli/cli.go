// Package cli is the sluicegen command, shared by sluicegen (no database
// driver) and sluicediff (with the drivers -dsn needs).
package cli

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sluice-go/sluice/gen"
)

// Open opens a database of the dialect at dsn, for -dsn. nil means the
// command links no database driver, and -dsn is refused with the command
// that has them.
type Open func(d gen.Dialect, dsn string) (*sql.DB, error)

// Main runs the command and exits: status 0 after it succeeds or after -h,
// 2 after a bad command line, 1 after any other error.
func Main(open Open) {
	if err := Run(os.Args[1:], os.Stdout, os.Stderr, open); err != nil {
		if errors.Is(err, flag.ErrHelp) { // -h asked for the usage, which is on stderr
			os.Exit(0)
		}
		if !errors.Is(err, errUsageShown) {
			fmt.Fprintln(os.Stderr, "sluicegen:", err)
		}
		if errors.Is(err, ErrUsage) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// DiffCommand is the command with the database drivers -dsn needs.
const DiffCommand = "github.com/sluice-go/sluice/gen/cmd/sluicegen/sluicediff"

var (
	// ErrUsage marks a bad command line (exit status 2).
	ErrUsage = errors.New("usage")
	// errUsageShown is a bad command line whose usage message is already
	// on stderr, so main adds nothing.
	errUsageShown = fmt.Errorf("%w: shown", ErrUsage)
)

// usageHead and usageTail frame the flag list of the usage message.
const (
	usageHead = `usage: sluicegen -target ent|gorm|bun|sql [-dialect postgres|mysql|sqlite] [flags]

Writes sluice's rateLimit and apikey tables as ent schema files, gorm or bun
model structs, or SQL DDL with an up/down migration pair; with -dsn, the SQL
that brings an existing database to the schema.

Flags:
`
	usageTail = `
Examples:
  sluicegen -target gorm -dialect postgres -out . -package models
  sluicegen -target ent -out schema -package schema
  sluicegen -target sql -dialect sqlite -out migrations
  go run github.com/sluice-go/sluice/gen/cmd/sluicegen/sluicediff@latest -target sql -dialect postgres -dsn "$DATABASE_URL" -out -

From a //go:generate line, after 'go get -tool github.com/sluice-go/sluice/gen/cmd/sluicegen':
  //go:generate go tool sluicegen -target gorm -dialect postgres -out . -package models
`
)

// pairs collects repeated key=value flags.
type pairs []string

func (p *pairs) String() string     { return strings.Join(*p, " ") }
func (p *pairs) Set(v string) error { *p = append(*p, v); return nil }

// options are the parsed flags.
type options struct {
	cfg      gen.Config
	out      string
	dsn      string
	diffFile string
}

func parse(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("sluicegen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usageHead)
		fs.PrintDefaults()
		fmt.Fprint(stderr, usageTail)
	}
	var (
		o                                        options
		target, dialect, models, preset, migName string
		plural                                   bool
		tables, columns                          pairs
	)
	fs.StringVar(&target, "target", "", "ent, gorm, bun or sql")
	fs.StringVar(&dialect, "dialect", "", "postgres, mysql or sqlite (not needed for ent)")
	fs.StringVar(&o.out, "out", ".", "output folder")
	fs.StringVar(&o.cfg.Package, "package", "", `Go package (default "schema" for ent, "models" for gorm and bun)`)
	fs.StringVar(&models, "models", "", "comma-separated logical models (default all: rateLimit,apikey,rerolledKey,apikeyLimit,apikeyRefill)")
	fs.StringVar(&preset, "preset", "snake", "naming preset: snake or betterauth")
	fs.BoolVar(&plural, "plural", false, "plural table names")
	fs.Var(&tables, "table", "table override model=name (repeatable)")
	fs.Var(&columns, "column", "column override model.field=name (repeatable)")
	fs.StringVar(&migName, "migration", gen.DefaultMigration, "base name of the migration pair")
	fs.StringVar(&o.dsn, "dsn", "", "diff against this database instead (target sql; sluicediff, which has the drivers)")
	fs.StringVar(&o.diffFile, "diff-file", "sluice_diff.sql", "file name of the diff script")
	if len(args) == 0 {
		fs.Usage()
		return o, errUsageShown
	}
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return o, err
	} else if err != nil {
		// The flag package has printed the error and the usage.
		return o, errUsageShown
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("%w: unexpected argument %q", ErrUsage, fs.Arg(0))
	}
	var err error
	if o.cfg.Target, err = gen.ParseTarget(target); err != nil {
		return o, fmt.Errorf("%w: %v", ErrUsage, err)
	}
	if dialect != "" || o.cfg.Target != gen.Ent {
		if o.cfg.Dialect, err = gen.ParseDialect(dialect); err != nil {
			return o, fmt.Errorf("%w: %v", ErrUsage, err)
		}
	}
	if o.cfg.Naming.Preset, err = gen.ParsePreset(preset); err != nil {
		return o, fmt.Errorf("%w: %v", ErrUsage, err)
	}
	o.cfg.Naming.Plural = plural
	o.cfg.Migration = migName
	for _, m := range strings.Split(models, ",") {
		if m = strings.TrimSpace(m); m != "" {
			o.cfg.Models = append(o.cfg.Models, m)
		}
	}
	for _, t := range tables {
		model, name, ok := strings.Cut(t, "=")
		if !ok || model == "" {
			return o, fmt.Errorf("%w: -table %q: want model=name", ErrUsage, t)
		}
		if o.cfg.Naming.Tables == nil {
			o.cfg.Naming.Tables = map[string]string{}
		}
		if _, dup := o.cfg.Naming.Tables[model]; dup {
			return o, fmt.Errorf("%w: -table %q: model %s overridden twice", ErrUsage, t, model)
		}
		o.cfg.Naming.Tables[model] = name
	}
	for _, c := range columns {
		key, name, ok := strings.Cut(c, "=")
		model, field, ok2 := strings.Cut(key, ".")
		if !ok || !ok2 || model == "" || field == "" {
			return o, fmt.Errorf("%w: -column %q: want model.field=name", ErrUsage, c)
		}
		if o.cfg.Naming.Columns == nil {
			o.cfg.Naming.Columns = map[string]map[string]string{}
		}
		if o.cfg.Naming.Columns[model] == nil {
			o.cfg.Naming.Columns[model] = map[string]string{}
		}
		if _, dup := o.cfg.Naming.Columns[model][field]; dup {
			return o, fmt.Errorf("%w: -column %q: field %s.%s overridden twice", ErrUsage, c, model, field)
		}
		o.cfg.Naming.Columns[model][field] = name
	}
	if o.dsn != "" && o.cfg.Target != gen.SQL {
		return o, fmt.Errorf("%w: -dsn diffs a database and needs -target sql", ErrUsage)
	}
	return o, nil
}

// Run runs the command with args, writing the diff script to stdout when
// -out is "-", and messages to stderr.
func Run(args []string, stdout, stderr io.Writer, open Open) error {
	o, err := parse(args, stderr)
	if err != nil {
		return err
	}
	if o.dsn == "" {
		files, err := gen.Generate(o.cfg)
		if err != nil {
			return err
		}
		return gen.WriteFiles(o.out, files)
	}
	// Validate before connecting, so that a bad option never reaches the database.
	if _, err := gen.Generate(o.cfg); err != nil {
		return err
	}
	if open == nil {
		return fmt.Errorf("-dsn: sluicegen links no database driver, so that adding it as a tool adds none to your module; "+
			"diff with the same flags through go run %s@latest (or the version of sluicegen you use)", DiffCommand)
	}
	plan, err := diff(o, open)
	if err != nil {
		return err
	}
	for _, l := range plan.Left {
		fmt.Fprintln(stderr, "sluicegen: left:", l)
	}
	f := gen.DiffFile(o.cfg, o.diffFile, plan)
	if o.out == "-" {
		_, err := stdout.Write(f.Data)
		return err
	}
	if err := gen.WriteFiles(o.out, []gen.File{f}); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "sluicegen: %d statement(s) in %s\n", len(plan.Statements), filepath.Join(o.out, f.Name))
	return nil
}

func diff(o options, open Open) (gen.Plan, error) {
	db, err := open(o.cfg.Dialect, o.dsn)
	if err != nil {
		return gen.Plan{}, err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return gen.DiffDB(ctx, db, o.cfg)
}
