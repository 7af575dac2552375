package render

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/queuelab/qlab/lab"
)

// Table is a measured result a lesson reports next to its events: a title,
// column headers and rows of already-formatted cells.
type Table struct {
	Title  string     `json:"title"`
	Header []string   `json:"header"`
	Rows   [][]string `json:"rows"`
	Notes  []string   `json:"notes,omitempty"` // lines printed under the table
}

// Markdown writes t as a Markdown table under a bold title, for slides and
// docs. Pipes inside cells are escaped.
func (t Table) Markdown(w io.Writer) {
	esc := strings.NewReplacer("|", "\\|", "\n", " ")
	row := func(cells []string) {
		out := make([]string, len(cells))
		for i, c := range cells {
			out[i] = esc.Replace(c)
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(out, " | "))
	}
	fmt.Fprintf(w, "**%s**\n\n", t.Title)
	row(t.Header)
	fmt.Fprintf(w, "|%s\n", strings.Repeat(" --- |", len(t.Header)))
	for _, r := range t.Rows {
		row(r)
	}
	for _, n := range t.Notes {
		fmt.Fprintf(w, "\n%s\n", n)
	}
	fmt.Fprintln(w)
}

// Write prints t as an aligned plain-text table.
func (t Table) Write(w io.Writer) {
	widths := make([]int, len(t.Header))
	for _, row := range append([][]string{t.Header}, t.Rows...) {
		for i, cell := range row {
			if i < len(widths) && utf8.RuneCountInString(cell) > widths[i] {
				widths[i] = utf8.RuneCountInString(cell)
			}
		}
	}
	line := func(row []string) {
		var b strings.Builder
		for i, cell := range row {
			if i >= len(widths) {
				break
			}
			b.WriteString(cell)
			if i < len(row)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-utf8.RuneCountInString(cell)+2))
			}
		}
		fmt.Fprintln(w, "  "+b.String())
	}
	fmt.Fprintln(w, t.Title)
	line(t.Header)
	for _, row := range t.Rows {
		line(row)
	}
	for _, n := range t.Notes {
		fmt.Fprintln(w, "  "+n)
	}
}

// WhatHappened is the closing table of a run: per task, its fate and the
// attempts it took, from the run's summary events. An attempt is a call
// that started; when an open breaker fast-failed calls, a column counts
// those deliveries that made no attempt, so the table and a log line such
// as "delivery 7 of 15" add up.
func WhatHappened(events []lab.Event) Table {
	t := Table{Title: "What happened", Header: []string{"task", "fate", "attempts"}}
	fast := map[string]int{}
	for _, e := range events {
		if e.Kind == lab.Rejected && e.Task != "" {
			fast[e.Task]++
		}
	}
	if len(fast) > 0 {
		t.Header = append(t.Header, "fast fails")
		t.Notes = []string{"attempts are calls made; a fast fail is a delivery the open breaker refused without a call: deliveries = attempts + fast fails."}
	}
	for _, e := range events {
		if e.Kind != lab.Summary {
			continue
		}
		row := []string{e.Task, string(e.Fate), fmt.Sprint(e.Attempt)}
		if len(fast) > 0 {
			row = append(row, fmt.Sprint(fast[e.Task]))
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// Transcript writes a finished run as a person reads it, for golden files:
// the log lines in canonical order, then the "what happened" table and the
// lesson's measured tables. Colour is always off.
func Transcript(w io.Writer, events []lab.Event, tables []Table) {
	var plain Style
	for _, e := range Canonical(events) {
		if line := plain.Line(e); line != "" {
			fmt.Fprintln(w, line)
		}
	}
	fmt.Fprintln(w)
	WhatHappened(events).Write(w)
	for _, t := range tables {
		fmt.Fprintln(w)
		t.Write(w)
	}
}
