// Command readmeapp writes the README's snippets, verbatim, as a program:
// the opening of one database, the limiter and the API-key check, each
// the body of a function of its own, called in that order by a main of
// three lines. scripts/install-proof.sh builds and runs the program in a
// fresh module from released modules, on SQLite, PostgreSQL and MariaDB,
// and requires the output the README shows.
//
//	go run ./examples/quickstart/cmd/readmeapp -db sqlite -out DIR
//
// The blocks are found by name (<!-- snippet: NAME --> before the fence)
// in README.md and docs/*.md: open-DB opens the database (DB is sqlite,
// postgres or mysql), get-DB is the go get line it needs, limiter and
// apikey are the first screen's two snippets. It writes DIR/main.go and a
// file per snippet, DIR/expected.txt (the ```text blocks shown after the
// limiter and the API-key check) and DIR/get.txt, the get-DB line's
// arguments, one a line.
package main

import (
	"errors"
	"flag"
	"fmt"
	"go/parser"
	"go/token"
	"log"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/sluice-go/sluice/examples/quickstart/internal/snippets"
)

const mainGo = `// Command app runs the README's snippets in order: open the database,
// the limiter, the API-key check.
package main

import "context"

func main() {
	ctx := context.Background()
	db := openDB(ctx)
	limiterSnippet(ctx, db)
	apikeySnippet(ctx, db)
}
`

func main() {
	root := flag.String("root", ".", "the repository's root")
	db := flag.String("db", "", "sqlite, postgres or mysql")
	out := flag.String("out", "", "the folder to write the program to")
	flag.Parse()
	if *out == "" || (*db != "sqlite" && *db != "postgres" && *db != "mysql") {
		log.Fatal("usage: readmeapp [-root DIR] -db sqlite|postgres|mysql -out DIR")
	}
	if err := write(*root, *db, *out); err != nil {
		log.Fatal("readmeapp: ", err)
	}
}

func write(root, db, out string) error {
	named, err := namedBlocks(root)
	if err != nil {
		return err
	}
	files := []struct {
		block string
		fn    snippets.Func
	}{
		{"open-" + db, snippets.Func{Name: "openDB", Params: "ctx context.Context", Results: "*core.DB", Return: "return db"}},
		{"limiter", snippets.Func{Name: "limiterSnippet", Params: "ctx context.Context, db *core.DB"}},
		{"apikey", snippets.Func{Name: "apikeySnippet", Params: "ctx context.Context, db *core.DB"}},
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	var expected strings.Builder
	imports := map[string]bool{}
	for _, f := range files {
		b, ok := named[f.block]
		if !ok {
			return fmt.Errorf("no block named %q (<!-- snippet: %s -->) in README.md or docs/*.md", f.block, f.block)
		}
		if b.Lang != "go" {
			return fmt.Errorf("%s:%d: block %q is ```%s, want ```go", b.File, b.Line, f.block, b.Lang)
		}
		src, err := b.GoFile("main", f.fn, snippets.AutoImports, true)
		if err != nil {
			return fmt.Errorf("%s:%d: %v", b.File, b.Line, err)
		}
		if err := os.WriteFile(filepath.Join(out, f.block+".go"), src, 0o644); err != nil {
			return err
		}
		parsed, err := parser.ParseFile(token.NewFileSet(), "", src, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, is := range parsed.Imports {
			path, _ := strconv.Unquote(is.Path.Value)
			if first, _, _ := strings.Cut(path, "/"); strings.Contains(first, ".") {
				imports[path] = true
			}
		}
		if f.block != "open-"+db {
			if b.Output == "" {
				return fmt.Errorf("%s:%d: block %q is not followed by the ```text block of its output", b.File, b.Line, f.block)
			}
			expected.WriteString(b.Output)
		}
	}
	get, ok := named["get-"+db]
	if !ok {
		return fmt.Errorf("no block named %q in README.md or docs/*.md", "get-"+db)
	}
	args, err := goGetArgs(get)
	if err != nil {
		return err
	}
	paths := slices.Sorted(maps.Keys(imports))
	for name, data := range map[string]string{"main.go": mainGo, "expected.txt": expected.String(),
		"get.txt": strings.Join(args, "\n") + "\n", "imports.txt": strings.Join(paths, "\n") + "\n"} {
		if err := os.WriteFile(filepath.Join(out, name), []byte(data), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// namedBlocks returns the named blocks of README.md and docs/*.md.
func namedBlocks(root string) (map[string]snippets.Block, error) {
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return nil, err
	}
	named := map[string]snippets.Block{}
	for _, doc := range append([]string{filepath.Join(root, "README.md")}, docs...) {
		blocks, err := snippets.Read(doc)
		if err != nil {
			return nil, err
		}
		for _, b := range blocks {
			if b.Name == "" {
				continue
			}
			if prev, dup := named[b.Name]; dup {
				return nil, fmt.Errorf("%s:%d: block name %q is taken by %s:%d", b.File, b.Line, b.Name, prev.File, prev.Line)
			}
			named[b.Name] = b
		}
	}
	return named, nil
}

// goGetArgs returns the arguments of the one go get command of a ```sh block.
func goGetArgs(b snippets.Block) ([]string, error) {
	var args []string
	for _, line := range strings.Split(b.Text, "\n") {
		line, _, _ = strings.Cut(line, "#")
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "go" && f[1] == "get" {
			if args != nil {
				return nil, fmt.Errorf("%s:%d: two go get commands in block %q", b.File, b.Line, b.Name)
			}
			args = f[2:]
		}
	}
	if len(args) == 0 {
		return nil, errors.New(b.File + ": block " + b.Name + " has no go get command")
	}
	return args, nil
}
