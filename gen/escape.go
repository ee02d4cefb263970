package gen

import (
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// Shapes of catalog values that are written as they are; anything else is
// quoted. A plain type is what catalogs spell: "varchar(255)", "timestamp
// with time zone", "decimal(10, 2)".
var (
	plainName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_$]*$`)
	plainType = regexp.MustCompile(`^[A-Za-z0-9_$.(), +-]+$`)
)

// shownName renders a name read from a database for a message: as it is
// when it is a plain identifier, else as a Go-quoted ASCII string, so that
// a newline, a terminal escape or any other character in it shows as an
// escape and cannot start a line of SQL in a generated script.
func shownName(s string) string {
	if plainName.MatchString(s) {
		return s
	}
	return strconv.QuoteToASCII(s)
}

// shownType is shownName for a column type or a server version.
func shownType(s string) string {
	if plainType.MatchString(s) {
		return s
	}
	return strconv.QuoteToASCII(s)
}

// hasControl reports whether s holds a rune that is not printable,
// including line breaks (\n, \r, U+0085, U+2028, U+2029) and escapes.
func hasControl(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsPrint(r) })
}

// serverVersion matches the start of MySQL's and MariaDB's VERSION():
// "8.0.36", "10.11.19-MariaDB-0+deb12u1", "5.5.5-10.4.1-MariaDB" (the
// prefix older MariaDB replication clients expected).
var serverVersion = regexp.MustCompile(`^(?:5\.5\.5-)?(\d+)\.(\d+)\.(\d+)`)

// hasNoPad reports whether a MySQL or MariaDB server of version (as
// VERSION() returns it) has the binary NO PAD collation ddl.MySQLNoPad picks:
// MariaDB 10.2.2+ (utf8mb4_nopad_bin), MySQL 8.0.17+ (utf8mb4_0900_bin).
// An unrecognised version is reported as lacking it.
func hasNoPad(version string) bool {
	m := serverVersion.FindStringSubmatch(version)
	if m == nil {
		return false
	}
	v := [3]int{}
	for i := range v {
		v[i], _ = strconv.Atoi(m[i+1])
	}
	atLeast := func(w [3]int) bool {
		for i := range v {
			if v[i] != w[i] {
				return v[i] > w[i]
			}
		}
		return true
	}
	if strings.Contains(strings.ToLower(version), "mariadb") {
		return atLeast([3]int{10, 2, 2})
	}
	return atLeast([3]int{8, 0, 17})
}
