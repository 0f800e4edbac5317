package main

import (
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"
)

// safe is s as a terminal may show it. Every string a party chose that
// the command prints (a GPU model, a server's id or reason, a memo, a
// file name in results, an error message relayed from the exchange) goes
// through it: control characters (C0, DEL, C1: the escape that starts a
// terminal's control sequences, the carriage return that overwrites a
// line, the newline and tab that forge a table's lines and columns),
// Unicode's format characters (the bidirectional overrides and isolates
// that show text in another order, zero-width characters that hide it)
// and bytes that are not UTF-8 are written as Go escapes (\x1b, \u202e),
// so that such a string cannot move the cursor, recolour, retitle or
// rewrite the terminal, or make one line look like two. Anything else
// passes unchanged. The JSON output needs none of it: encoding/json
// escapes control characters itself.
func safe(s string) string {
	if !needsEscape(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r < utf8.RuneSelf && unsafeRune(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// unsafeRune reports whether r must not reach a terminal as it is.
func unsafeRune(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029'
}

func needsEscape(s string) bool {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n <= 1) || unsafeRune(r) {
			return true
		}
		i += n
	}
	return false
}

// safeAll is safe of each of ss.
func safeAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = safe(s)
	}
	return out
}

// row writes a table's row: each cell as fmt.Sprint writes it, made safe,
// tab-separated, then a newline. Every table of the command that shows
// what a party chose writes its rows so.
func row(w io.Writer, cells ...any) {
	for i, c := range cells {
		if i > 0 {
			io.WriteString(w, "\t")
		}
		io.WriteString(w, safe(fmt.Sprint(c)))
	}
	io.WriteString(w, "\n")
}

// safeText is s made safe line by line, its lines after the first
// indented: for error messages, which may run over several lines of our
// own (errors.Join), so that a relayed message cannot forge a line of
// its own at the margin.
func safeText(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = safe(l)
	}
	return strings.Join(lines, "\n  ")
}
