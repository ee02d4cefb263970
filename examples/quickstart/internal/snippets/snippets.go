// Package snippets reads the Go code blocks of the project's Markdown
// documents and turns each into a Go file, so that what a reader copies is
// compiled (readme_test.go) and, for the blocks a newcomer runs first, run
// from released modules (cmd/readmeapp, through scripts/install-proof.sh).
package snippets

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"slices"
	"strconv"
	"strings"
)

// Block is one fenced code block of a Markdown file.
type Block struct {
	File string // the Markdown file, as given to Read
	Line int    // of its first line of code, 1-based
	Lang string // the fence's language: go, text, sh, ...
	// Name is the block's name from an HTML comment on the line before
	// its fence, <!-- snippet: NAME -->, invisible when rendered; "" if none.
	Name string
	Text string
	// Output is, for a ```go block, the body of the next block when that
	// is a ```text block ("" otherwise): what the code prints when run.
	Output string
}

// AutoImports are the packages a block may use without importing them,
// as a reader would after the blocks before it: its own imports win.
var AutoImports = map[string]string{
	"context":     "context",
	"fmt":         "fmt",
	"http":        "net/http",
	"log":         "log",
	"netip":       "net/netip",
	"os":          "os",
	"testing":     "testing",
	"time":        "time",
	"adaptertest": "github.com/sluice-go/sluice/adaptertest",
	"apikey":      "github.com/sluice-go/sluice/core/apikey",
	"core":        "github.com/sluice-go/sluice/core",
	"ratelimit":   "github.com/sluice-go/sluice/core/ratelimit",
	"sluicehttp":  "github.com/sluice-go/sluice/middleware/http",
}

// marker opens the comment that names the next block.
const marker = "<!-- snippet: "

// Read returns the fenced code blocks of the Markdown file at path.
func Read(path string) ([]Block, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	lines := strings.Split(string(data), "\n")
	var blocks []Block
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
			return nil, fmt.Errorf("%s:%d: a code block that is never closed", path, i+1)
		}
		b := Block{File: path, Line: i + 2, Lang: strings.TrimSpace(lang), Text: strings.Join(lines[i+1:j], "\n") + "\n"}
		if i > 0 {
			if name, ok := strings.CutPrefix(strings.TrimSpace(lines[i-1]), marker); ok {
				b.Name = strings.TrimSpace(strings.TrimSuffix(name, "-->"))
			}
		}
		if n := len(blocks); b.Lang == "text" && n > 0 && blocks[n-1].Lang == "go" {
			blocks[n-1].Output = b.Text
		}
		blocks = append(blocks, b)
		i = j
	}
	return blocks, nil
}

// IsProgram reports whether the block is a complete program (package main).
func (b Block) IsProgram() bool {
	f, err := parser.ParseFile(token.NewFileSet(), "", b.Text, parser.PackageClauseOnly)
	return err == nil && f.Name.Name == "main"
}

// Func says how a fragment of statements becomes a function.
type Func struct {
	Name    string // the function's name
	Params  string // its parameter list, without parentheses
	Results string // its result list, "" for none
	Return  string // the statement that ends its body, "" for none
}

// GoFile makes a Go file of package pkg from a block that is not a program:
// a block of declarations only (a func) as it stands, any other as the
// body of fn after the block's own leading imports. Variables the
// fragment declares at its top level count as used (a fragment shows a
// call, not what the reader does next with the result). Names in
// autoImports that the file uses without importing them are imported.
// With directives, //line comments make the compiler name the Markdown
// file's lines.
func (b Block) GoFile(pkg string, fn Func, autoImports map[string]string, directives bool) ([]byte, error) {
	directive := func(line int) string {
		if !directives {
			return ""
		}
		return fmt.Sprintf("//line %s:%d\n", b.File, line)
	}
	// Declarations only: the fragment is a file body as it stands.
	if _, err := parser.ParseFile(token.NewFileSet(), "", "package p\n"+b.Text, 0); err == nil {
		return addImports("package "+pkg+"\n\n"+directive(b.Line)+b.Text, autoImports)
	}
	// Otherwise its leading import declarations stay at file level and the
	// rest becomes a function body.
	imports, body := b.Split()
	head := "\nfunc " + fn.Name + "(" + fn.Params + ") " + fn.Results + " {\n"
	src := "package " + pkg + "\n\n" + directive(b.Line) + imports + head + directive(b.Line+strings.Count(imports, "\n")) + body + "}\n"
	f, err := parser.ParseFile(token.NewFileSet(), "", src, 0)
	if err != nil {
		return nil, fmt.Errorf("does not parse as imports then statements: %v", err)
	}
	tail := ""
	for _, u := range topLevelVars(f, fn.Name) {
		tail += "\t_ = " + u + "\n"
	}
	if fn.Return != "" {
		tail += "\t" + fn.Return + "\n"
	}
	if directives {
		tail = "//line snippets-generated:1\n" + tail
	}
	return addImports(strings.TrimSuffix(src, "}\n")+tail+"}\n", autoImports)
}

// Split returns a block's leading import declarations (and the blank
// lines between them) and the rest.
func (b Block) Split() (imports, rest string) {
	lines := strings.SplitAfter(b.Text, "\n")
	n := 0
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
			return strings.Join(lines[:n], ""), strings.Join(lines[n:], "")
		}
	}
	return b.Text, ""
}

// Gofmt returns the block as gofmt would write it: a program or a block
// of declarations as a file, any other block as its imports and then the
// statements of a function body, one tab less indented.
func (b Block) Gofmt() (string, error) {
	if b.IsProgram() {
		out, err := format.Source([]byte(b.Text))
		return string(out), err
	}
	if _, err := parser.ParseFile(token.NewFileSet(), "", "package p\n"+b.Text, 0); err == nil {
		out, err := format.Source([]byte("package p\n\n" + b.Text))
		return strings.TrimPrefix(string(out), "package p\n\n"), err
	}
	imports, body := b.Split()
	head := "package p\n\n"
	if imports = strings.TrimSpace(imports); imports != "" {
		head += imports + "\n\n"
	}
	var in strings.Builder
	for _, l := range strings.SplitAfter(body, "\n") {
		if strings.TrimSpace(l) != "" {
			in.WriteString("\t")
		}
		in.WriteString(l)
	}
	out, err := format.Source([]byte(head + "func f() {\n" + in.String() + "}\n"))
	if err != nil {
		return "", err
	}
	got := strings.TrimPrefix(string(out), "package p\n\n")
	gotImports, gotBody, _ := strings.Cut(got, "func f() {\n")
	gotBody = strings.TrimSuffix(gotBody, "}\n")
	var de strings.Builder
	for _, l := range strings.SplitAfter(gotBody, "\n") {
		de.WriteString(strings.TrimPrefix(l, "\t"))
	}
	return gotImports + de.String(), nil
}

// topLevelVars returns the variables declared by the top-level statements
// of the function fn in f.
func topLevelVars(f *ast.File, fn string) []string {
	var vars []string
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
							vars = append(vars, id.Name)
						}
					}
				}
			case *ast.DeclStmt:
				if gd, ok := s.Decl.(*ast.GenDecl); ok && gd.Tok == token.VAR {
					for _, sp := range gd.Specs {
						for _, id := range sp.(*ast.ValueSpec).Names {
							if id.Name != "_" {
								vars = append(vars, id.Name)
							}
						}
					}
				}
			}
		}
	}
	slices.Sort(vars)
	return slices.Compact(vars)
}

// addImports adds the autoImports a file uses without importing them.
func addImports(src string, autoImports map[string]string) ([]byte, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "", src, 0)
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
	var add []string
	for _, id := range f.Unresolved {
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
