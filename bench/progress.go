package main

import (
	"fmt"
	"io"
	"os"
	"time"
)

// progress reports the run on stderr: one line rewritten in place on a
// terminal, one line per cell otherwise (CI logs).
type progress struct {
	w     io.Writer
	tty   bool
	total int
	n     int
	start time.Time
	line  string
}

func newProgress(w io.Writer) *progress {
	p := &progress{w: w, start: time.Now()}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.tty = true
		}
	}
	return p
}

func (p *progress) prefix() string {
	el := time.Since(p.start).Round(time.Second)
	return fmt.Sprintf("[%3d/%d %s]", p.n, p.total, el)
}

func (p *progress) show(s string) {
	if p.w == nil {
		return
	}
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K%s", s)
		return
	}
	fmt.Fprintln(p.w, s)
}

func (p *progress) status(s string) {
	if p.tty {
		p.show(p.prefix() + " " + s)
	}
}

func (p *progress) cell(db string, sc scenario, g int, name string) {
	p.n++
	p.line = fmt.Sprintf("%s · %s · %d goroutines · %s", db, sc, g, name)
	if p.tty {
		p.show(p.prefix() + " " + p.line)
	}
}

func (p *progress) again(db string, sc scenario, g int, name string, round int) {
	p.line = fmt.Sprintf("%s · %s · %d goroutines · %s (round %d)", db, sc, g, name, round)
	if p.tty {
		p.show(p.prefix() + " " + p.line)
	}
}

func (p *progress) result(r result) {
	s := fmt.Sprintf("%s %s · %s · %d goroutines · %s: %s/s, %s", p.prefix(), r.DB, r.Scenario, r.Goroutines, r.Approach, groupDigits(r.PerSecond()), r.Check)
	p.show(s)
}

func (p *progress) done() {
	if p.tty && p.w != nil {
		fmt.Fprintf(p.w, "\r\033[K%d cells in %s\n", p.n, time.Since(p.start).Round(time.Second))
	}
}
