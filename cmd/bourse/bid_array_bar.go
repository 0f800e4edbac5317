package main

import (
	"io"

	"github.com/bourse/bourse/sim/report"
)

// arrayBar shows how many of a long array's offers are answered, on a
// terminal only: a pipe or a log gets the lines at the end and nothing
// in between.
type arrayBar struct {
	p   *report.Progress
	bar *report.Bar
}

// minArrayBar is the smallest array that gets a bar: a short one is
// answered before a bar would be read.
const minArrayBar = 50

func newArrayBar(w io.Writer, tasks int) arrayBar {
	if tasks < minArrayBar || !report.IsTerminal(w) {
		return arrayBar{}
	}
	p := report.NewProgress(w, report.ProgressConfig{Terminal: true})
	return arrayBar{p: p, bar: p.Bar("offers", int64(tasks))}
}

// Add counts one offer answered; any goroutine may call it.
func (b arrayBar) Add() {
	if b.bar != nil {
		b.bar.Add(1)
	}
}

// Done draws the bar's end and waits for it.
func (b arrayBar) Done() {
	if b.bar != nil {
		b.bar.Done()
		b.p.Wait()
	}
}
