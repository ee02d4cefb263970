package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// readme is the README this module keeps honest.
const readme = "../../README.md"

// checkPkg is the package the fragments are compiled into.
const checkPkg = "./internal/readmecheck"

// autoImports are the packages a fragment may use without importing them,
// as a reader would after the fragments before it: its own imports win.
var autoImports = map[string]string{
	"context":     "context",
	"http":        "net/http",
	"netip":       "net/netip",
	"testing":     "testing",
	"time":        "time",
	"adaptertest": "github.com/sluice-go/sluice/adaptertest",
	"apikey":      "github.com/sluice-go/sluice/core/apikey",
	"core":        "github.com/sluice-go/sluice/core",
	"ratelimit":   "github.com/sluice-go/sluice/core/ratelimit",
}

// block is one ```go block of the README.
type block struct {
	line int // of its first line of code, 1-based
	text string
}

// goBlocks returns the README's ```go blocks and, for each, the ```text
// block that directly follows it ("" if none).
func goBlocks(t *testing.T) (blocks []block, after []string) {
	t.Helper()
	data, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	var fences []struct {
		lang  string
		start int // index of the first line inside
		body  string
	}
	for i := 0; i < len(lines); i++ {
		lang, ok := strings.CutPrefix(lines[i], "```")
		if !ok {
			continue
		}
		j := i + 1
		for j < len(lines) && lines[j] != "```" {
			j++
		}
		if j == len(lines) {
			t.Fatalf("%s:%d: a code block that is never closed", readme, i+1)
		}
		body := strings.Join(lines[i+1:j], "\n") + "\n"
		fences = append(fences, struct {
			lang  string
			start int
			body  string
		}{strings.TrimSpace(lang), i + 1, body})
		i = j
	}
	for k, f := range fences {
		if f.lang != "go" {
			continue
		}
		blocks = append(blocks, block{line: f.start + 1, text: f.body})
		next := ""
		if k+1 < len(fences) && fences[k+1].lang == "text" {
			next = fences[k+1].body
		}
		after = append(after, next)
	}
	if len(blocks) == 0 {
		t.Fatalf("%s has no ```go block", readme)
	}
	return blocks, after
}

func isProgram(b block) bool {
	f, err := parser.ParseFile(token.NewFileSet(), "", b.text, parser.PackageClauseOnly)
	return err == nil && f.Name.Name == "main"
}

// TestReadmeQuickStart checks that the README's complete program is this
// module's main.go, byte for byte, and that the output it shows after it
// is testdata/output.txt, the output scripts/install-proof.sh requires of
// the program run from released modules.
func TestReadmeQuickStart(t *testing.T) {
	blocks, after := goBlocks(t)
	mainGo, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("testdata/output.txt")
	if err != nil {
		t.Fatal(err)
	}
	programs := 0
	for i, b := range blocks {
		if !isProgram(b) {
			continue
		}
		programs++
		if b.text != string(mainGo) {
			t.Errorf("%s:%d: the program differs from examples/quickstart/main.go; copy main.go into the README:\n%s",
				readme, b.line, lineDiff(string(mainGo), b.text))
		}
		if after[i] != string(want) {
			t.Errorf("%s:%d: the output shown after the program is not examples/quickstart/testdata/output.txt:\n%s",
				readme, b.line, lineDiff(string(want), after[i]))
		}
	}
	if programs != 1 {
		t.Errorf("%s has %d complete programs (package main), want 1: the quick start", readme, programs)
	}
}

// TestReadmeFragmentsCompile compiles every README ```go block that is not
// the complete program: one with declarations only (a func) as a file,
// any other as the body of a function after its own imports. Variables
// the fragment declares at its top level count as used (a fragment shows
// a call, not what the reader does next with the result); anything else
// must type-check, with errors reported at the README's lines.
func TestReadmeFragmentsCompile(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the fragments with the go command")
	}
	blocks, _ := goBlocks(t)
	dir, err := filepath.Abs(checkPkg)
	if err != nil {
		t.Fatal(err)
	}
	absReadme, err := filepath.Abs(readme)
	if err != nil {
		t.Fatal(err)
	}
	overlay := map[string]string{}
	tmp := t.TempDir()
	for _, b := range blocks {
		if isProgram(b) {
			continue
		}
		src, err := fragmentFile(b, absReadme)
		if err != nil {
			t.Errorf("%s:%d: %v", readme, b.line, err)
			continue
		}
		name := fmt.Sprintf("readme_line%d.go", b.line)
		if err := os.WriteFile(filepath.Join(tmp, name), src, 0o644); err != nil {
			t.Fatal(err)
		}
		overlay[filepath.Join(dir, name)] = filepath.Join(tmp, name)
	}
	if t.Failed() {
		return
	}
	if len(overlay) == 0 {
		t.Fatalf("%s has no fragment to compile", readme)
	}
	js, err := json.Marshal(map[string]any{"Replace": overlay})
	if err != nil {
		t.Fatal(err)
	}
	overlayFile := filepath.Join(tmp, "overlay.json")
	if err := os.WriteFile(overlayFile, js, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "build", "-overlay", overlayFile, checkPkg)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%d README fragments do not all compile (%v):\n%s", len(overlay), err, out)
	}
	t.Logf("compiled %d README fragments", len(overlay))
}

// fragmentFile makes a Go file of package readmecheck from a fragment,
// with //line directives so that compile errors name README lines.
func fragmentFile(b block, readmePath string) ([]byte, error) {
	directive := func(line int) string { return fmt.Sprintf("//line %s:%d\n", readmePath, line) }
	// Declarations only: the fragment is a file body as it stands.
	if _, err := parser.ParseFile(token.NewFileSet(), "", "package p\n"+b.text, 0); err == nil {
		src := "package readmecheck\n\n" + directive(b.line) + b.text
		return addImports(src)
	}
	// Otherwise its leading import declarations stay at file level and the
	// rest becomes a function body.
	lines := strings.SplitAfter(b.text, "\n")
	n := 0 // lines of imports (and blank lines between them)
	for n < len(lines) {
		l := strings.TrimSpace(lines[n])
		switch {
		case l == "":
			n++
		case strings.HasPrefix(l, "import ("):
			for n < len(lines) && strings.TrimSpace(lines[n]) != ")" {
				n++
			}
			n++
		case strings.HasPrefix(l, "import "):
			n++
		default:
			goto done
		}
	}
done:
	imports, body := strings.Join(lines[:n], ""), strings.Join(lines[n:], "")
	fn := fmt.Sprintf("readmeLine%d", b.line)
	src := "package readmecheck\n\n" + directive(b.line) + imports +
		"\nfunc " + fn + "() {\n" + directive(b.line+n) + body + "}\n"
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "", src, 0)
	if err != nil {
		return nil, fmt.Errorf("does not parse as imports then statements: %v", err)
	}
	// Mark the fragment's own top-level variables used.
	var uses []string
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Name.Name != fn {
			continue
		}
		for _, st := range fd.Body.List {
			switch s := st.(type) {
			case *ast.AssignStmt:
				if s.Tok == token.DEFINE {
					for _, e := range s.Lhs {
						if id, ok := e.(*ast.Ident); ok && id.Name != "_" {
							uses = append(uses, id.Name)
						}
					}
				}
			case *ast.DeclStmt:
				if gd, ok := s.Decl.(*ast.GenDecl); ok && gd.Tok == token.VAR {
					for _, sp := range gd.Specs {
						for _, id := range sp.(*ast.ValueSpec).Names {
							if id.Name != "_" {
								uses = append(uses, id.Name)
							}
						}
					}
				}
			}
		}
	}
	slices.Sort(uses)
	uses = slices.Compact(uses)
	tail := ""
	for _, u := range uses {
		tail += "\t_ = " + u + "\n"
	}
	src = strings.TrimSuffix(src, "}\n") + "//line readme-check-generated:1\n" + tail + "}\n"
	return addImports(src)
}

// addImports adds the autoImports a file uses without importing them.
func addImports(src string) ([]byte, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "", src, parser.ImportsOnly)
	if err != nil {
		return nil, err
	}
	imported := map[string]bool{}
	for _, is := range f.Imports {
		path, _ := strconv.Unquote(is.Path.Value)
		name := path[strings.LastIndex(path, "/")+1:]
		if is.Name != nil {
			name = is.Name.Name
		}
		imported[name] = true
	}
	full, err := parser.ParseFile(fset, "", src, 0)
	if err != nil {
		return nil, err
	}
	var add []string
	for _, id := range full.Unresolved {
		if path, ok := autoImports[id.Name]; ok && !imported[id.Name] && !slices.Contains(add, path) {
			add = append(add, path)
		}
	}
	if len(add) == 0 {
		return []byte(src), nil
	}
	slices.Sort(add)
	var imp bytes.Buffer
	for _, p := range add {
		fmt.Fprintf(&imp, "import %q\n", p)
	}
	pkg, rest, _ := strings.Cut(src, "\n")
	return []byte(pkg + "\n\n" + imp.String() + rest), nil
}

// lineDiff shows the first line where got departs from want.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(w), len(g)); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return fmt.Sprintf("line %d:\n want %q\n  got %q", i+1, wl, gl)
		}
	}
	return "(equal)"
}
