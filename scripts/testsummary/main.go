// Command testsummary reads the events of `go test -json` on its standard
// input, prints what a plain `go test` prints (a line per package, the
// output of failing tests, build errors), and ends with one line per
// server the run went without: which tests skipped because of it, in which
// packages, and the reason they gave. It exists because `go test` shows a
// passing package as "ok" even when most of its tests skipped, and hides
// everything such a package prints (a TestMain summary included) unless -v.
//
// It is run by scripts/test.sh, the README's test command; with -v it
// prints every line of output, as `go test -v` would.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"
)

// event is one line of `go test -json` (see `go doc test2json`).
type event struct {
	Action     string
	Package    string
	Test       string
	Output     string
	ImportPath string // build-output events
}

// serverVar finds the environment variable a skip message blames, such as
// SLUICE_POSTGRES_DSN: every server-backed test names its variable.
var serverVar = regexp.MustCompile(`\bSLUICE_[A-Z0-9_]+\b`)

// logPrefix is the "file.go:12: " that testing puts before a message.
var logPrefix = regexp.MustCompile(`^\s*[\w.\-]+\.go:\d+: `)

// serverNames makes the summary readable; an unknown variable is shown as is.
var serverNames = map[string]string{
	"SLUICE_POSTGRES_DSN":        "PostgreSQL",
	"SLUICE_MYSQL_DSN":           "MySQL/MariaDB",
	"SLUICE_REDIS_ADDR":          "Redis",
	"SLUICE_REDIS_CLUSTER_ADDRS": "Redis Cluster",
}

// skipped gathers the tests that skipped for want of one server.
type skipped struct {
	tests    int
	packages map[string]bool
	reasons  map[string]int
}

type summary struct {
	verbose bool
	out     io.Writer
	module  string // import path prefix stripped from package names
	// output holds each running test's lines until it ends, and each
	// package's own lines until the package ends.
	output   map[string][]string
	byServer map[string]*skipped
	other    int // tests skipped for a reason that names no server
}

func main() {
	verbose := flag.Bool("v", false, "print every line of output, as go test -v")
	module := flag.String("module", "github.com/sluice-go/sluice/", "import path prefix to leave out of package names in the summary")
	flag.Parse()
	s := &summary{verbose: *verbose, out: os.Stdout, module: *module, output: map[string][]string{}, byServer: map[string]*skipped{}}
	if err := s.read(os.Stdin); err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		os.Exit(2)
	}
	s.print()
}

func (s *summary) read(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20) // a test may print long lines
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			fmt.Fprintf(s.out, "%s\n", line) // not an event: pass it on untouched
			continue
		}
		s.handle(e)
	}
	return sc.Err()
}

func (s *summary) handle(e event) {
	id := e.Package + "\x00" + e.Test
	switch e.Action {
	case "build-output":
		fmt.Fprint(s.out, e.Output)
	case "output":
		if s.verbose {
			fmt.Fprint(s.out, e.Output)
		}
		s.output[id] = append(s.output[id], e.Output)
	case "skip", "pass", "fail":
		lines := s.output[id]
		delete(s.output, id)
		if e.Test == "" {
			s.packageDone(e.Action, lines)
			return
		}
		if e.Action == "skip" {
			s.recordSkip(e.Package, lines)
		} else {
			s.recordLogged(e.Package, lines)
		}
		if e.Action == "fail" && !s.verbose {
			for _, l := range lines {
				if !strings.HasPrefix(l, "=== ") {
					fmt.Fprint(s.out, l)
				}
			}
		}
	}
}

// packageDone prints what go test prints for a package: its result line
// when it passed, and everything it printed outside tests when it failed.
func (s *summary) packageDone(action string, lines []string) {
	if s.verbose {
		return
	}
	for _, l := range lines {
		if action == "fail" || strings.HasPrefix(l, "ok  \t") || strings.HasPrefix(l, "?   \t") {
			fmt.Fprint(s.out, l)
		}
	}
}

// message is what a test printed, without testing's own lines and
// file:line prefixes.
func message(lines []string) []string {
	var msg []string
	for _, l := range lines {
		if strings.HasPrefix(l, "=== ") || strings.HasPrefix(strings.TrimSpace(l), "--- ") {
			continue
		}
		if m := strings.TrimSpace(logPrefix.ReplaceAllString(l, "")); m != "" {
			msg = append(msg, m)
		}
	}
	return msg
}

func (s *summary) recordSkip(pkg string, lines []string) {
	msg := message(lines)
	for _, m := range msg {
		if v := serverVar.FindString(m); v != "" {
			s.add(v, pkg, m)
			return
		}
	}
	s.other++
}

// recordLogged counts the cases that a passing test left out for want of a
// server and said so in a log line naming the variable and "skipping" (the
// generator's tests run each configured database in one test).
func (s *summary) recordLogged(pkg string, lines []string) {
	for _, m := range message(lines) {
		if v := serverVar.FindString(m); v != "" && strings.Contains(strings.ToLower(m), "skipping") {
			s.add(v, pkg, m)
		}
	}
}

func (s *summary) add(v, pkg, reason string) {
	k := s.byServer[v]
	if k == nil {
		k = &skipped{packages: map[string]bool{}, reasons: map[string]int{}}
		s.byServer[v] = k
	}
	k.tests++
	k.packages[strings.TrimPrefix(pkg, s.module)] = true
	k.reasons[reason]++
}

func (s *summary) print() {
	vars := make([]string, 0, len(s.byServer))
	for v := range s.byServer {
		vars = append(vars, v)
	}
	sort.Strings(vars)
	if len(vars) == 0 {
		fmt.Fprintln(s.out, "no test skipped for want of a database or Redis server")
	}
	for _, v := range vars {
		k := s.byServer[v]
		name := serverNames[v]
		if name == "" {
			name = v
		}
		pkgs := make([]string, 0, len(k.packages))
		for p := range k.packages {
			pkgs = append(pkgs, p)
		}
		sort.Strings(pkgs)
		fmt.Fprintf(s.out, "SKIPPED %d %s tests (%s): %s\n", k.tests, name, strings.Join(pkgs, ", "), reason(k.reasons))
	}
	if s.other > 0 {
		fmt.Fprintf(s.out, "(%d more tests skipped for reasons that need no server, such as a capability an adapter does not claim: -v shows them)\n", s.other)
	}
}

// reason is the most frequent skip message, and how many others there were.
func reason(reasons map[string]int) string {
	best, n := "", -1
	for r, c := range reasons {
		if c > n || (c == n && r < best) {
			best, n = r, c
		}
	}
	if len(reasons) > 1 {
		return fmt.Sprintf("%s (and %d other messages)", best, len(reasons)-1)
	}
	return best
}
