// Command modzip writes modules into a file-based Go module proxy: for each
// module, <out>/<escaped module path>/@v/{list,VERSION.info,VERSION.mod,VERSION.zip},
// the layout GOPROXY=file://<out> serves. scripts/release.sh runs it on a
// copy of the tree whose go.mod files already require their siblings at
// VERSION.
//
//	go run . -version v0.1.0 -out DIR [-time RFC3339] module/path=dir ...
//
// The zips come from golang.org/x/mod/zip.CreateFromDir, which applies the
// go command's own rules (module@version/ prefix, no nested modules, no
// vendor directories, size limits), so they are what a real proxy serves.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
	modzip "golang.org/x/mod/zip"
)

func main() {
	version := flag.String("version", "", "the version to write, such as v0.1.0 (required)")
	out := flag.String("out", "", "the proxy directory (required)")
	stamp := flag.String("time", "", "the version's time in RFC 3339 (default: now)")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: modzip -version VERSION -out DIR [-time RFC3339] module/path=dir ...")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *version == "" || *out == "" || flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	t := time.Now().UTC()
	if *stamp != "" {
		var err error
		if t, err = time.Parse(time.RFC3339, *stamp); err != nil {
			fatalf("-time %q: %v", *stamp, err)
		}
	}
	for _, arg := range flag.Args() {
		path, dir, ok := strings.Cut(arg, "=")
		if !ok {
			fatalf("argument %q is not module/path=dir", arg)
		}
		if err := write(*out, module.Version{Path: path, Version: *version}, dir, t.UTC()); err != nil {
			fatalf("%s: %v", path, err)
		}
	}
}

// write adds one module version to the proxy at out.
func write(out string, m module.Version, dir string, t time.Time) error {
	if err := module.Check(m.Path, m.Version); err != nil {
		return err
	}
	if semver.Canonical(m.Version) != m.Version {
		return fmt.Errorf("version %q is not canonical semver (want %q)", m.Version, semver.Canonical(m.Version))
	}
	esc, err := module.EscapePath(m.Path)
	if err != nil {
		return err
	}
	escVer, err := module.EscapeVersion(m.Version)
	if err != nil {
		return err
	}
	vdir := filepath.Join(out, filepath.FromSlash(esc), "@v")
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		return err
	}
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return err
	}
	// A go.mod still requiring a sibling at the zero pseudo-version would
	// send every consumer after a version that does not exist.
	if strings.Contains(string(gomod), "v0.0.0-00010101000000-000000000000") {
		return fmt.Errorf("%s/go.mod still requires a module at v0.0.0-00010101000000-000000000000", dir)
	}
	if err := os.WriteFile(filepath.Join(vdir, escVer+".mod"), gomod, 0o644); err != nil {
		return err
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{m.Version, t})
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(vdir, escVer+".info"), info, 0o644); err != nil {
		return err
	}
	zipPath := filepath.Join(vdir, escVer+".zip")
	f, err := os.Create(zipPath)
	if err != nil {
		return err
	}
	if err := modzip.CreateFromDir(f, m, dir); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if _, err := modzip.CheckZip(m, zipPath); err != nil {
		return fmt.Errorf("the zip written is not valid: %w", err)
	}
	return addToList(filepath.Join(vdir, "list"), m.Version)
}

// addToList records version in the proxy's list file, once, in semver order.
func addToList(list, version string) error {
	data, err := os.ReadFile(list)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	versions := strings.Fields(string(data))
	if !slices.Contains(versions, version) {
		versions = append(versions, version)
	}
	semver.Sort(versions)
	return os.WriteFile(list, []byte(strings.Join(versions, "\n")+"\n"), 0o644)
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "modzip: "+format+"\n", args...)
	os.Exit(1)
}
