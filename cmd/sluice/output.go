package main

import (
	"encoding/json"
	"io"
	"strings"
	"text/tabwriter"
)

// table prints aligned columns for people.
type table struct{ w *tabwriter.Writer }

func newTable(out io.Writer, header ...string) *table {
	t := &table{w: tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)}
	if len(header) > 0 {
		t.row(header...)
	}
	return t
}

// row prints cells; a tab or newline in one (a key's name may hold any
// text) would break the columns, so it becomes a space.
func (t *table) row(cells ...string) {
	for i, c := range cells {
		cells[i] = strings.Map(func(r rune) rune {
			if r == '\t' || r == '\n' || r == '\r' {
				return ' '
			}
			return r
		}, c)
	}
	_, _ = io.WriteString(t.w, strings.Join(cells, "\t")+"\n")
}

func (t *table) flush() error { return t.w.Flush() }

func (c *cli) printJSON(v any) error {
	enc := json.NewEncoder(c.out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
