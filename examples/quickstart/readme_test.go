package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/sluice-go/sluice/examples/quickstart/internal/snippets"
)

// docs are the Markdown files this module keeps honest: the README and
// every document of docs/.
func docs(t *testing.T) []string {
	t.Helper()
	more, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{"../../README.md"}, more...)
}

// checkPkg is the package the fragments are compiled into.
const checkPkg = "./internal/readmecheck"

// goBlocks returns the ```go blocks of every document.
func goBlocks(t *testing.T) []snippets.Block {
	t.Helper()
	var blocks []snippets.Block
	for _, doc := range docs(t) {
		all, err := snippets.Read(doc)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, b := range all {
			if b.Lang == "go" {
				blocks = append(blocks, b)
				n++
			}
		}
		if doc == "../../README.md" && n == 0 {
			t.Fatalf("%s has no ```go block", doc)
		}
	}
	return blocks
}

// TestReadmeQuickStart checks that the documents' one complete program is
// this module's main.go, byte for byte, and that the output shown after
// it is testdata/output.txt, the output scripts/install-proof.sh requires
// of the program run from released modules.
func TestReadmeQuickStart(t *testing.T) {
	mainGo, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("testdata/output.txt")
	if err != nil {
		t.Fatal(err)
	}
	var programs []string
	for _, b := range goBlocks(t) {
		if !b.IsProgram() {
			continue
		}
		programs = append(programs, fmt.Sprintf("%s:%d", b.File, b.Line))
		if b.Text != string(mainGo) {
			t.Errorf("%s:%d: the program differs from examples/quickstart/main.go; copy main.go into it:\n%s",
				b.File, b.Line, lineDiff(string(mainGo), b.Text))
		}
		if b.Output != string(want) {
			t.Errorf("%s:%d: the output shown after the program is not examples/quickstart/testdata/output.txt:\n%s",
				b.File, b.Line, lineDiff(string(want), b.Output))
		}
	}
	if len(programs) != 1 {
		t.Errorf("the documents have %d complete programs (package main) %v, want 1: the quick start", len(programs), programs)
	}
}

// TestReadmeFragmentsCompile compiles every ```go block of the documents
// that is not the complete program: one with declarations only (a func)
// as a file, any other as the body of a function after its own imports.
// Variables the fragment declares at its top level count as used;
// anything else must type-check, with errors reported at the documents'
// lines.
func TestReadmeFragmentsCompile(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the fragments with the go command")
	}
	dir, err := filepath.Abs(checkPkg)
	if err != nil {
		t.Fatal(err)
	}
	overlay := map[string]string{}
	tmp := t.TempDir()
	for i, b := range goBlocks(t) {
		if b.IsProgram() {
			continue
		}
		abs, err := filepath.Abs(b.File)
		if err != nil {
			t.Fatal(err)
		}
		b.File = abs
		fn := fmt.Sprintf("fragment%d", i)
		src, err := b.GoFile("readmecheck", snippets.Func{Name: fn}, snippets.AutoImports, true)
		if err != nil {
			t.Errorf("%s:%d: %v", b.File, b.Line, err)
			continue
		}
		name := fmt.Sprintf("fragment%d_%s_line%d.go", i, strings.TrimSuffix(filepath.Base(b.File), ".md"), b.Line)
		if err := os.WriteFile(filepath.Join(tmp, name), src, 0o644); err != nil {
			t.Fatal(err)
		}
		overlay[filepath.Join(dir, name)] = filepath.Join(tmp, name)
	}
	if t.Failed() {
		return
	}
	if len(overlay) == 0 {
		t.Fatal("the documents have no fragment to compile")
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
		t.Fatalf("%d fragments do not all compile (%v):\n%s", len(overlay), err, out)
	}
	t.Logf("compiled %d fragments", len(overlay))
}

// TestDocsGofmt requires every ```go block of the documents to be as gofmt
// writes it (a fragment of statements as the body of a function).
func TestDocsGofmt(t *testing.T) {
	for _, b := range goBlocks(t) {
		want, err := b.Gofmt()
		if err != nil {
			t.Errorf("%s:%d: %v", b.File, b.Line, err)
			continue
		}
		if want != b.Text {
			t.Errorf("%s:%d: not gofmt'ed:\n%s", b.File, b.Line, lineDiff(want, b.Text))
		}
	}
}

// link is a Markdown link's target.
var link = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestDocsLinks requires every relative link of the documents to name a
// file or folder of the repository and, with a #fragment into a Markdown
// file, one of its headings (as GitHub makes their anchors).
func TestDocsLinks(t *testing.T) {
	anchors := map[string]map[string]bool{} // Markdown file → its headings' anchors
	headings := func(path string) map[string]bool {
		if a, ok := anchors[path]; ok {
			return a
		}
		a := map[string]bool{}
		data, _ := os.ReadFile(path)
		fence := false
		for _, l := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(l, "```") {
				fence = !fence
			}
			if h, ok := strings.CutPrefix(strings.TrimLeft(l, "#"), " "); ok && !fence && strings.HasPrefix(l, "#") {
				a[anchor(h)] = true
			}
		}
		anchors[path] = a
		return a
	}
	n := 0
	for _, doc := range docs(t) {
		data, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(data), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			n++
			file, frag, _ := strings.Cut(target, "#")
			path := doc
			if file != "" {
				path = filepath.Join(filepath.Dir(doc), file)
				if _, err := os.Stat(path); err != nil {
					t.Errorf("%s: link %q: %v", doc, target, err)
					continue
				}
			}
			if frag != "" && strings.HasSuffix(path, ".md") && !headings(path)[frag] {
				t.Errorf("%s: link %q: %s has no heading whose anchor is %q", doc, target, path, frag)
			}
		}
	}
	if n == 0 {
		t.Fatal("no relative link found")
	}
}

// anchor is the fragment GitHub gives a heading: lower case, spaces as
// hyphens, punctuation other than hyphens and underscores dropped.
func anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
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
