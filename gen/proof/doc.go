// Package proof holds only tests, in a module of their own so that the
// generator (module github.com/sluice-go/sluice/gen) requires nothing but
// sluice's core. They prove on real databases what gen's own tests cannot
// without drivers and ORMs: that the generated DDL applies, that the diff
// brings a database to the schema, and that the gorm, bun and ent code
// sluicegen writes compiles and works with each ORM. That ORM code is
// generated afresh by every run, into a temporary module, never committed.
package proof
