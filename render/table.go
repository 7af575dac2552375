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
// and their cells wrap onto further lines, at spaces and after
// punctuation (Pieces). Where even that would split a word or a number,
// each row prints as a record instead: its first cell, then one line per
// other column, "header: value", wrapped to the width. The title and
// notes wrap to l.Prose.
func (t Table) Fit(w io.Writer, l Layout) {
	for _, line := range Wrap(t.Title, l.Prose, "") {
		fmt.Fprintln(w, line)
	}
	if widths, ok := t.columns(l); ok {
		writeRow(w, t.Header, widths)
		for _, row := range t.Rows {
			writeRow(w, row, widths)
		}
	} else {
		t.writeRecords(w, l.Table)
	}
	for _, n := range t.Notes {
		for _, line := range Wrap(n, l.Prose-tableIndent, "  ") {
			fmt.Fprintln(w, strings.Repeat(" ", tableIndent)+line)
		}
	}
}

// Cuts is the words Fit(w, l) would cut inside a piece (see Pieces): a
// word or a number split in the middle, which only a record too narrow
// for one of its pieces still does. Empty when it cuts none.
func (t Table) Cuts(l Layout) []string {
	if widths, ok := t.columns(l); ok {
		return t.columnCuts(widths)
	}
	var cuts []string
	for _, row := range t.Rows {
		for i, cell := range row {
			_, c := t.recordLines(i, cell, l.Table)
			cuts = append(cuts, c...)
		}
	}
	return cuts
}

// columns gives the column widths of t at l, and false where they would
// split a word or a number (the records then print instead).
func (t Table) columns(l Layout) ([]int, bool) {
	widths := columnWidths(t, l.Table-tableIndent)
	return widths, len(t.columnCuts(widths)) == 0
}

// columnCuts is the words the columns of widths cut inside a piece.
func (t Table) columnCuts(widths []int) []string {
	var cuts []string
	for _, row := range append([][]string{t.Header}, t.Rows...) {
		for i, cell := range row[:min(len(row), len(widths))] {
			cuts = append(cuts, Cuts(cell, widths[i], "")...)
		}
	}
	return cuts
}

// writeRecords prints each row of t as a record within width columns: the
// first cell alone, then every other cell after its header, indented; a
// continuation line is indented further.
func (t Table) writeRecords(w io.Writer, width int) {
	for r, row := range t.Rows {
		if r > 0 {
			fmt.Fprintln(w)
		}
		for i, cell := range row {
			lines, _ := t.recordLines(i, cell, width)
			for _, line := range lines {
				fmt.Fprintln(w, line)
			}
		}
	}
}

// recordLines is cell i of a record, wrapped to width: the first cell
// bare at the table's margin, the others "header: value" two columns in;
// the words cut inside a piece come second.
func (t Table) recordLines(i int, cell string, width int) (lines, cuts []string) {
	margin, text := tableIndent, cell
	if i > 0 {
		head := ""
		if i < len(t.Header) {
			head = t.Header[i]
		}
		margin, text = tableIndent+2, head+": "+cell
	}
	const hang = "    " // continuation lines: clear of the line's first word
	lines, cuts = wrap(text, width-margin, width-margin-len(hang), hang)
	for k := range lines {
		lines[k] = strings.Repeat(" ", margin) + lines[k]
	}
	return lines, cuts
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
// than a column's longest piece of a word (Pieces); room left over goes back to the columns
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
				for _, p := range Pieces(word) {
					words[i] = max(words[i], Width(p))
				}
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
// lesson's measured tables, laid out as where the output is no terminal.
// Colour is always off.
func Transcript(w io.Writer, events []lab.Event, tables []Table) {
	p := Page{W: w, Layout: LayoutFor(0)}
	for _, e := range Canonical(events) {
		p.Emit(e)
	}
	p.Results(events, tables)
}
