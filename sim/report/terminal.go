package report

import (
	"io"

	"golang.org/x/term"
)

// IsTerminal reports whether w is an interactive terminal, where
// progress can be drawn as bars. It asks the operating system rather than
// checking for a character device, since /dev/null is one too.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(interface{ Fd() uintptr })
	return ok && term.IsTerminal(int(f.Fd()))
}
