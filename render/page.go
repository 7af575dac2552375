package render

import (
	"fmt"
	"io"
	"strings"

	"github.com/queuelab/qlab/lab"
)

// Page writes a lesson run as `qlab run` prints it, fitted to Layout: the
// heading and what to notice, the log as events arrive (Page is a
// lab.Sink), then the tables.
type Page struct {
	W      io.Writer
	Color  bool
	Layout Layout
}

// Prose writes text wrapped to the page: each of its lines as a
// paragraph, whose continuation lines start with indent.
func (p Page) Prose(text, indent string) {
	for _, para := range strings.Split(text, "\n") {
		for _, line := range Wrap(para, p.Layout.Prose, indent) {
			fmt.Fprintln(p.W, line)
		}
	}
}

// Emit writes e's log line, if it has one.
func (p Page) Emit(e lab.Event) {
	if line := (Style{Color: p.Color, Width: p.Layout.Prose}).Line(e); line != "" {
		fmt.Fprintln(p.W, line)
	}
}

// Results writes the "what happened" table of events, then tables, each
// after a blank line.
func (p Page) Results(events []lab.Event, tables []Table) {
	p.Closing(WhatHappened(events), tables)
}

// Closing writes a run's closing table (WhatHappened, or Outcomes.Table
// for a run that kept only its outcomes), then tables, each after a blank
// line.
func (p Page) Closing(happened Table, tables []Table) {
	fmt.Fprintln(p.W)
	happened.Fit(p.W, p.Layout)
	p.Tables(tables)
}

// Tables writes tables, each after a blank line.
func (p Page) Tables(tables []Table) {
	for _, t := range tables {
		fmt.Fprintln(p.W)
		t.Fit(p.W, p.Layout)
	}
}
