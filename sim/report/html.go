package report

import (
	_ "embed"
	"html/template"
	"io"

	"github.com/bourse/bourse/sim/metrics"
)

// The page is a template file rather than a string so that it can be
// read and edited as HTML. It loads nothing from elsewhere and runs no
// script: a report folder must open from a disk, an archive or a CI
// artefact, years later, offline.
//
//go:embed index.html.tmpl
var indexSource string

var indexPage = template.Must(template.New("index").Parse(indexSource))

// html writes index.html's content: the table and every figure.
func html(w io.Writer, rs []metrics.Result) error {
	return indexPage.Execute(w, struct {
		Title   string
		Table   grid
		Figures []figure
	}{title(rs), gridOf(rs), figures})
}
