// Package gen generates schema code from sluice's core schema: SQL DDL for
// PostgreSQL, MySQL and SQLite, ent schema files, and gorm and bun model
// structs. Its command, gen/cmd/sluicegen, runs it from a //go:generate line.
package gen
