// Package orm holds only tests: they prove that the gorm and bun models
// generated for each dialect (in ../gorm and ../bun) are fresh, that the
// ORM's own migration from their tags yields the generated DDL's schema,
// and that they round-trip rows on tables created from that DDL, on
// SQLite and, when configured, PostgreSQL and MariaDB/MySQL.
package orm
