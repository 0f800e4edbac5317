package contract

import (
	"fmt"
	"strings"
)

// Describe says what the job is, for a person: the command its server
// runs (in its image, where it names one; resolved, the digest its
// server ran, or empty), or the synthetic job's profile; "-" for none.
// It writes the words as given: a command line escapes them for the
// terminal, a page for HTML.
func (j *JobSpec) Describe(resolved string) string {
	switch {
	case j == nil:
		return "-"
	case j.Command != "" || j.Image != "":
		words := j.Args
		if j.Command != "" {
			words = append([]string{j.Command}, j.Args...)
		}
		quoted := make([]string, len(words))
		for i, p := range words {
			quoted[i] = p
			if p == "" || strings.ContainsAny(p, " \t'\"\\$`") {
				quoted[i] = fmt.Sprintf("%q", p)
			}
		}
		argv := strings.Join(quoted, " ")
		image := j.Image
		if resolved != "" {
			image += " (" + resolved + ")"
		}
		switch {
		case j.Image == "":
			return argv
		case j.Command != "":
			return "image " + image + ": " + argv
		case argv != "":
			return "image " + image + ": its entrypoint with " + argv
		}
		return "image " + image + ": its entrypoint and command"
	case j.Profile != nil:
		return fmt.Sprintf("synthetic: each GPU busy %s of the time for %s", j.Profile.Utilization, j.Profile.Duration)
	}
	return "-"
}
