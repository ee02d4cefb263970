// Command sluicegen writes sluice's schema for an ORM or as SQL: ent schema
// files, gorm or bun model structs, or DDL with an up/down migration pair.
// With -dsn it reads an existing database instead and writes only what
// brings it to the schema (missing tables, columns and indexes), reporting
// on stderr what it left; a name read from the database that is not a
// plain identifier is shown quoted, with Go escapes.
//
// It is a module of its own, so that the generator library
// (github.com/sluice-go/sluice/gen) needs no database driver. Add it to
// your module as a tool, then run it from //go:generate lines:
//
//	go get -tool github.com/sluice-go/sluice/gen/cmd/sluicegen
//
//	//go:generate go tool sluicegen -target gorm -dialect postgres -out . -package models
//
// or once, to sync an existing database:
//
//	go tool sluicegen -target sql -dialect mysql -dsn 'root@tcp(127.0.0.1:3306)/app' -out migrations
//
// (`go run github.com/sluice-go/sluice/gen/cmd/sluicegen` works only in a
// module that already requires it and all its dependencies.) Without
// arguments it prints its usage and exits with status 2.
//
// Flags:
//
//	-target ent|gorm|bun|sql   what to write (required)
//	-dialect postgres|mysql|sqlite   column types (required except for ent)
//	-out DIR          output folder (default "."); with -dsn, "-" writes the script to stdout
//	-package NAME     Go package (default "schema" for ent, "models" for gorm and bun)
//	-models LIST      comma-separated logical models, e.g. rateLimit,apikey (default all: rateLimit,apikey,rerolledKey,apikeyLimit)
//	-preset snake|betterauth   naming preset (default snake)
//	-plural           plural table names
//	-table model=name          table override (repeatable)
//	-column model.field=name   column override (repeatable)
//	-migration NAME   base name of the migration pair (default 0001_sluice)
//	-dsn DSN          diff against this database (target sql only)
//	-diff-file NAME   file name of the diff script (default sluice_diff.sql)
package main

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

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) { // -h asked for the usage, which is on stderr
			os.Exit(0)
		}
		if !errors.Is(err, errUsageShown) {
			fmt.Fprintln(os.Stderr, "sluicegen:", err)
		}
		if errors.Is(err, errUsage) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

var (
	// errUsage marks a bad command line (exit status 2).
	errUsage = errors.New("usage")
	// errUsageShown is a bad command line whose usage message is already
	// on stderr, so main adds nothing.
	errUsageShown = fmt.Errorf("%w: shown", errUsage)
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
  sluicegen -target sql -dialect postgres -dsn "$DATABASE_URL" -out -

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
	fs.StringVar(&models, "models", "", "comma-separated logical models (default all: rateLimit,apikey,rerolledKey,apikeyLimit)")
	fs.StringVar(&preset, "preset", "snake", "naming preset: snake or betterauth")
	fs.BoolVar(&plural, "plural", false, "plural table names")
	fs.Var(&tables, "table", "table override model=name (repeatable)")
	fs.Var(&columns, "column", "column override model.field=name (repeatable)")
	fs.StringVar(&migName, "migration", gen.DefaultMigration, "base name of the migration pair")
	fs.StringVar(&o.dsn, "dsn", "", "diff against this database instead (target sql)")
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
		return o, fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	var err error
	if o.cfg.Target, err = gen.ParseTarget(target); err != nil {
		return o, fmt.Errorf("%w: %v", errUsage, err)
	}
	if dialect != "" || o.cfg.Target != gen.Ent {
		if o.cfg.Dialect, err = gen.ParseDialect(dialect); err != nil {
			return o, fmt.Errorf("%w: %v", errUsage, err)
		}
	}
	if o.cfg.Naming.Preset, err = gen.ParsePreset(preset); err != nil {
		return o, fmt.Errorf("%w: %v", errUsage, err)
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
			return o, fmt.Errorf("%w: -table %q: want model=name", errUsage, t)
		}
		if o.cfg.Naming.Tables == nil {
			o.cfg.Naming.Tables = map[string]string{}
		}
		if _, dup := o.cfg.Naming.Tables[model]; dup {
			return o, fmt.Errorf("%w: -table %q: model %s overridden twice", errUsage, t, model)
		}
		o.cfg.Naming.Tables[model] = name
	}
	for _, c := range columns {
		key, name, ok := strings.Cut(c, "=")
		model, field, ok2 := strings.Cut(key, ".")
		if !ok || !ok2 || model == "" || field == "" {
			return o, fmt.Errorf("%w: -column %q: want model.field=name", errUsage, c)
		}
		if o.cfg.Naming.Columns == nil {
			o.cfg.Naming.Columns = map[string]map[string]string{}
		}
		if o.cfg.Naming.Columns[model] == nil {
			o.cfg.Naming.Columns[model] = map[string]string{}
		}
		if _, dup := o.cfg.Naming.Columns[model][field]; dup {
			return o, fmt.Errorf("%w: -column %q: field %s.%s overridden twice", errUsage, c, model, field)
		}
		o.cfg.Naming.Columns[model][field] = name
	}
	if o.dsn != "" && o.cfg.Target != gen.SQL {
		return o, fmt.Errorf("%w: -dsn diffs a database and needs -target sql", errUsage)
	}
	return o, nil
}

func run(args []string, stdout, stderr io.Writer) error {
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
	plan, err := diff(o)
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

// driverNames are the database/sql drivers the command links in.
var driverNames = map[gen.Dialect]string{gen.Postgres: "pgx", gen.MySQL: "mysql", gen.SQLite: "sqlite"}

func diff(o options) (gen.Plan, error) {
	db, err := sql.Open(driverNames[o.cfg.Dialect], o.dsn)
	if err != nil {
		return gen.Plan{}, err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return gen.DiffDB(ctx, db, o.cfg)
}
