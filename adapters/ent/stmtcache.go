package sluiceent

import (
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/sluice-go/sluice/core"
)

// maxCachedStatements bounds the statement cache: shapes are few in
// practice, but IN lists of every length would each make one.
const maxCachedStatements = 4096

// stmtCache remembers the SQL text of IncrementOne's single statement per
// request shape (table, where fields, operators, NULL-ness and list
// lengths, incremented and set columns). Rendering through ent's builder
// costs about as much CPU as the driver call, and a rate limiter sends the
// same shape on every request. Only the text is cached: the arguments are
// laid out again by updateArgs, and a shape is cached only after its
// rendered arguments matched that layout.
type stmtCache struct {
	m sync.Map // shapeKey → string
	n atomic.Int64
}

type shapeKey struct {
	t     *core.Table
	shape string
}

func (c *stmtCache) get(k shapeKey) (string, bool) {
	if c == nil {
		return "", false
	}
	q, ok := c.m.Load(k)
	if !ok {
		return "", false
	}
	return q.(string), true
}

func (c *stmtCache) put(k shapeKey, q string) {
	if c == nil || c.n.Load() >= maxCachedStatements {
		return
	}
	if _, loaded := c.m.LoadOrStore(k, q); !loaded {
		c.n.Add(1)
	}
}

// updateShape is the cache key of an UPDATE … RETURNING request.
func updateShape(t *core.Table, where []core.Where, inc []core.Delta, set []core.Assignment) shapeKey {
	var b strings.Builder
	for _, w := range where {
		b.WriteString(w.Field)
		b.WriteByte(0)
		b.WriteByte(byte(w.Op))
		switch {
		case w.Value == nil:
			b.WriteByte('n')
		case w.Op == core.OpIn || w.Op == core.OpNotIn:
			list, _ := w.Value.([]any)
			b.WriteString(strconv.Itoa(len(list)))
		}
		b.WriteByte(1)
	}
	b.WriteByte(2)
	for _, d := range inc {
		b.WriteString(d.Column)
		b.WriteByte(1)
	}
	b.WriteByte(2)
	for _, s := range set {
		b.WriteString(s.Column)
		if s.Value == nil {
			b.WriteByte('n')
		}
		b.WriteByte(1)
	}
	return shapeKey{t, b.String()}
}

// updateArgs lays out the arguments of updateOneReturning's statement in
// placeholder order: deltas, non-NULL set values, then the guard's values,
// twice when the guard is repeated in the single-row subquery.
func (a *Adapter) updateArgs(where []core.Where, inc []core.Delta, set []core.Assignment, subquery bool) []any {
	args := make([]any, 0, len(inc)+len(set)+2*len(where))
	for _, d := range inc {
		args = append(args, d.By)
	}
	for _, s := range set {
		if s.Value != nil {
			args = append(args, a.bind(s.Value))
		}
	}
	copies := 1
	if subquery {
		copies = 2
	}
	for range copies {
		for _, w := range where {
			switch {
			case w.Value == nil:
			case w.Op == core.OpIn || w.Op == core.OpNotIn:
				list, _ := w.Value.([]any)
				for _, v := range list {
					args = append(args, a.bind(v))
				}
			default:
				args = append(args, a.bind(w.Value))
			}
		}
	}
	return args
}

// sameArgs reports whether the rendered arguments match the layout.
func sameArgs(rendered, laid []any) bool {
	if len(rendered) != len(laid) {
		return false
	}
	for i := range rendered {
		if !reflect.DeepEqual(rendered[i], laid[i]) {
			return false
		}
	}
	return true
}
