package gen

import (
	"strings"
	"testing"
)

func TestShownName(t *testing.T) {
	for in, want := range map[string]string{
		"rate_limit_key_key":       "rate_limit_key_key",
		"c\nDROP TABLE apikey;":    `"c\nDROP TABLE apikey;"`,
		"a\r\n-- x":                `"a\r\n-- x"`,
		"esc\x1b[2J":               `"esc\x1b[2J"`,
		"line\u2028sep":            `"line\u2028sep"`,
		"with space":               `"with space"`,
		"nåme":                     `"n\u00e5me"`,
		"":                         `""`,
		`quote"inside`:             `"quote\"inside"`,
		"utf8mb4_nopad_bin":        "utf8mb4_nopad_bin",
		"$ok_name":                 `"$ok_name"`,
		"name$1":                   "name$1",
		"timestamp with time zone": `"timestamp with time zone"`,
	} {
		if got := shownName(in); got != want {
			t.Errorf("shownName(%q) = %s, want %s", in, got, want)
		}
	}
	for in, want := range map[string]string{
		"timestamp with time zone":   "timestamp with time zone",
		"varchar(255)":               "varchar(255)",
		"decimal(10, 2)":             "decimal(10, 2)",
		"10.11.19-MariaDB-0":         "10.11.19-MariaDB-0",
		"int\nDROP TABLE x;":         `"int\nDROP TABLE x;"`,
		"10.11.19-MariaDB-0+deb12u1": "10.11.19-MariaDB-0+deb12u1",
	} {
		if got := shownType(in); got != want {
			t.Errorf("shownType(%q) = %s, want %s", in, got, want)
		}
	}
}

// TestDiffFileEscapesLeft checks that DiffFile escapes a note holding a
// line break even when the plan was not built by Diff.
func TestDiffFileEscapesLeft(t *testing.T) {
	p := Plan{Left: []string{"x\nDROP TABLE apikey;", "y\u2028z"}}
	file := string(DiffFile(Config{Dialect: SQLite}, "f.sql", p).Data)
	for _, line := range strings.Split(strings.TrimSuffix(file, "\n"), "\n") {
		if !strings.HasPrefix(line, "-- ") {
			t.Errorf("line %q is not a comment", line)
		}
		if hasControl(line) {
			t.Errorf("line %q holds a control character", line)
		}
	}
	if !strings.Contains(file, `-- left: "x\nDROP TABLE apikey;"`) || !strings.Contains(file, `-- left: "y\u2028z"`) {
		t.Errorf("notes not escaped:\n%s", file)
	}
}

func TestHasNoPad(t *testing.T) {
	for v, want := range map[string]bool{
		"10.11.19-MariaDB-0+deb12u1": true,
		"10.2.2-MariaDB":             true,
		"10.2.1-MariaDB":             false,
		"10.1.48-MariaDB":            false,
		"5.5.5-10.4.1-MariaDB":       true,
		"11.4.5-MariaDB":             true,
		"8.0.17":                     true,
		"8.0.16":                     false,
		"8.4.3":                      true,
		"9.1.0-commercial":           true,
		"5.7.44-log":                 false,
		"":                           false,
		"garbage":                    false,
	} {
		if got := hasNoPad(v); got != want {
			t.Errorf("hasNoPad(%q) = %v, want %v", v, got, want)
		}
	}
}
