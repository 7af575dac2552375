package render

import (
	"fmt"
	"io"
	"slices"
	"strings"

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

// Write prints t as an aligned plain-text table within MaxWidth columns,
// its title and notes wrapped to DefaultWidth.
func (t Table) Write(w io.Writer) { t.Fit(w, LayoutFor(0)) }

// Fit prints t as an aligned plain-text table within l.Table columns:
// where the cells' natural widths do not fit, the widest columns narrow
// and their cells wrap onto further lines. The title and notes wrap to
// l.Prose.
func (t Table) Fit(w io.Writer, l Layout) {
	widths := columnWidths(t, l.Table-tableIndent)
	for _, line := range Wrap(t.Title, l.Prose, "") {
		fmt.Fprintln(w, line)
	}
	writeRow(w, t.Header, widths)
	for _, row := range t.Rows {
		writeRow(w, row, widths)
	}
	for _, n := range t.Notes {
		for _, line := range Wrap(n, l.Prose-tableIndent, "  ") {
			fmt.Fprintln(w, strings.Repeat(" ", tableIndent)+line)
		}
	}
}

// tableIndent is the margin left of a table; columnGap separates columns.
const (
	tableIndent = 2
	columnGap   = 2
)

// columnWidths gives each column its natural width (its widest cell)
// where the table fits room. Where it does not, headers wrap first (a
// column is as wide as its widest body cell), then the widest columns are
// capped at one width, as high as fits and, while possible, no narrower
// than a column's longest word; room left over goes back to the columns
// furthest from their natural width.
func columnWidths(t Table, room int) []int {
	n := len(t.Header)
	natural, body, words := make([]int, n), make([]int, n), make([]int, n)
	for r, row := range append([][]string{t.Header}, t.Rows...) {
		for i, cell := range row[:min(len(row), n)] {
			natural[i] = max(natural[i], Width(cell))
			if r > 0 {
				body[i] = max(body[i], Width(cell))
			}
			for _, word := range strings.Fields(cell) {
				words[i] = max(words[i], Width(word))
			}
		}
	}
	room -= columnGap * max(n-1, 0)
	if sum(natural) <= room {
		return natural
	}
	base := make([]int, n)
	for i := range base {
		base[i] = max(body[i], words[i], 1)
	}
	if sum(base) > room {
		base = capWidest(base, words, room)
	}
	for left := room - sum(base); left > 0; left-- { // give back what is left
		best := -1
		for i := range base {
			if base[i] < natural[i] && (best < 0 || natural[i]-base[i] > natural[best]-base[best]) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		base[best]++
	}
	return base
}

// capWidest caps widths at the highest one limit that fits room, keeping
// each column at least as wide as floor where that fits, and at least one
// column wide where nothing does (the table then overflows).
func capWidest(widths, floor []int, room int) []int {
	none := make([]int, len(widths))
	for _, fl := range [][]int{floor, none} {
		for limit := slices.Max(widths); limit >= 1; limit-- {
			out := make([]int, len(widths))
			for i, w := range widths {
				out[i] = max(min(w, limit), min(fl[i], w), 1)
			}
			if sum(out) <= room {
				return out
			}
		}
	}
	out := make([]int, len(widths))
	for i := range out {
		out[i] = 1
	}
	return out
}

func sum(xs []int) int {
	total := 0
	for _, x := range xs {
		total += x
	}
	return total
}

// writeRow writes one row, each cell wrapped to its column's width and
// padded to it; a cell that wraps makes the row several lines high.
func writeRow(w io.Writer, row []string, widths []int) {
	cells := make([][]string, len(widths))
	height := 1
	for i := range widths {
		cell := ""
		if i < len(row) {
			cell = row[i]
		}
		cells[i] = Wrap(cell, widths[i], "")
		height = max(height, len(cells[i]))
	}
	for h := 0; h < height; h++ {
		var b strings.Builder
		for i, lines := range cells {
			part := ""
			if h < len(lines) {
				part = lines[h]
			}
			b.WriteString(part)
			if i < len(cells)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-Width(part)+columnGap))
			}
		}
		fmt.Fprintln(w, strings.Repeat(" ", tableIndent)+strings.TrimRight(b.String(), " "))
	}
}

// WhatHappened is the closing table of a run: per task, its fate and the
// attempts it took, from the run's summary events.
func WhatHappened(events []lab.Event) Table {
	t := Table{Title: "What happened", Header: []string{"task", "fate", "attempts"}}
	for _, e := range events {
		if e.Kind == lab.Summary {
			t.Rows = append(t.Rows, []string{e.Task, string(e.Fate), fmt.Sprint(e.Attempt)})
		}
	}
	return t
}

// Transcript writes a finished run as a person reads it, for golden files:
// the log lines in canonical order, then the "what happened" table and the
// lesson's measured tables, laid out as where the output is no terminal.
// Colour is always off.
func Transcript(w io.Writer, events []lab.Event, tables []Table) {
	p := Page{W: w, Layout: LayoutFor(0)}
	for _, e := range Canonical(events) {
		p.Emit(e)
	}
	p.Results(events, tables)
}
