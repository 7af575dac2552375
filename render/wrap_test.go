package render

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestWidthCountsEmojiAsTwoColumns(t *testing.T) {
	assert.Equal(t, 2, Width("♻️"))
	assert.Equal(t, 4, Width("\x1b[31m✅ C\x1b[0m"))
}

func TestWrapBreaksAtSpacesAndKeepsWhatFits(t *testing.T) {
	assert.Equal(t, []string{"a  b"}, Wrap("a  b", 10, ""), "a line that fits stays as written")
	assert.Equal(t, []string{"one two", "  three", "  four"}, Wrap("one two three four", 8, "  "))
	assert.Equal(t, []string{"x-dead-", "letter"}, Wrap("x-dead-letter", 8, ""), "a long word breaks after a hyphen")
	assert.Equal(t, []string{"abcd", "efgh", "ij"}, Wrap("abcdefghij", 4, ""))
	assert.Equal(t, []string{"first", "", "third"}, Wrap("first\n\nthird", 10, ""))
	for _, line := range Wrap(strings.Repeat("♻️ retry ", 20), 15, "") {
		assert.LessOrEqual(t, Width(line), 15, line)
	}
}

// TestFitWrapsCellsToTheWidth: a table wider than its room keeps every
// column, narrows the widest and wraps its cells; headers wrap first.
func TestFitWrapsCellsToTheWidth(t *testing.T) {
	tb := Table{
		Title:  "t",
		Header: []string{"task", "a rather long header for a short column", "note"},
		Rows: [][]string{
			{"A", "1", strings.Repeat("words that go on ", 8)},
			{"B", "22", "short"},
		},
		Notes: []string{strings.Repeat("a note that wraps ", 8)},
	}
	var b bytes.Buffer
	tb.Fit(&b, Layout{Prose: 40, Table: 40})
	for _, line := range strings.Split(strings.TrimRight(b.String(), "\n"), "\n") {
		assert.LessOrEqual(t, Width(line), 40, "%q", line)
	}
	assert.Contains(t, b.String(), "  B     22")
	assert.Equal(t, strings.Fields(strings.Join(tb.Rows[0], " ")+" "), strings.Fields(rowText(b.String(), "A")))
}

// rowText is the words of the table row starting with first, over its
// wrapped lines, column by column.
func rowText(out, first string) string {
	var cols [3][]string
	in := false
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "  "+first+" ") {
			in = true
		} else if in && !strings.HasPrefix(line, "      ") {
			break
		}
		if !in {
			continue
		}
		f := strings.Fields(line)
		if strings.HasPrefix(line, "  "+first) {
			cols[0], cols[1], cols[2] = append(cols[0], f[0]), append(cols[1], f[1]), append(cols[2], f[2:]...)
			continue
		}
		cols[2] = append(cols[2], f...)
	}
	return strings.Join(append(append(cols[0], cols[1]...), cols[2]...), " ")
}

// Words break where a reader expects: after punctuation, never inside a
// word or a number; Cuts names what could not be kept whole.
func TestWrapNeverSplitsAWordOrANumber(t *testing.T) {
	assert.Equal(t, []string{"qlab-85f1ce.", "sequential.", "queue"}, Wrap("qlab-85f1ce.sequential.queue", 12, ""))
	assert.Equal(t, []string{"publishToRetryQueue", "(job,"}, Wrap("publishToRetryQueue(job,", 20, ""))
	assert.Equal(t, []string{"(226–653)"}, Pieces("(226–653)"), "a range of numbers stays whole")
	assert.Equal(t, []string{"24.84s"}, Pieces("24.84s"))
	assert.Equal(t, []string{"-5"}, Pieces("-5"), "a leading minus stays on its number")
	assert.Empty(t, Cuts("strategy confirmed (226–653) 24.84s", 9, ""))
	assert.Equal(t, []string{"confirmed"}, Cuts("confirmed", 5, ""), "a word wider than the line is cut, and said so")
}

// A table whose column cannot hold its longest piece reports the cut; at
// 160 columns a terminal's table takes the whole width.
func TestTableCutsAndWideTerminals(t *testing.T) {
	tb := Table{Title: "t", Header: []string{"strategy", "note"},
		Rows: [][]string{{"confirmed", strings.Repeat("a sentence of plain words ", 5)}}}
	assert.Empty(t, tb.Cuts(LayoutFor(80)))
	assert.NotEmpty(t, tb.Cuts(Layout{Prose: 12, Table: 12}))
	var b bytes.Buffer
	tb.Fit(&b, LayoutFor(160))
	assert.Equal(t, 3, strings.Count(b.String(), "\n"), "title, header, one row unwrapped:\n%s", b.String())
	b.Reset()
	tb.Fit(&b, LayoutFor(0))
	assert.Greater(t, strings.Count(b.String(), "\n"), 3, "no terminal: 100 columns, the note wraps")
	assert.Equal(t, Layout{Prose: ProseMax, Table: 160}, LayoutFor(160))
	assert.Equal(t, Layout{Prose: 80, Table: 80}, LayoutFor(80))
}

// A table whose columns would split a word prints each row as a record:
// the first cell, then "header: value" lines wrapped whole.
func TestTableTooWideForColumnsPrintsRecords(t *testing.T) {
	tb := Table{Title: "Publishing", Header: []string{"strategy", "msg/s all confirmed: median (min–max of 5)", "lost", "at most unknown"},
		Rows: [][]string{
			{"waitForConfirms after each (the seed)", "1087 (618–1772)", "0", "1 (the message in flight)"},
			{"no confirms", "-", "248", "everything since the start"},
		}}
	var b bytes.Buffer
	l := Layout{Prose: 30, Table: 30}
	tb.Fit(&b, l)
	out := b.String()
	assert.Empty(t, tb.Cuts(l), out)
	assert.Contains(t, out, "\n  no confirms\n    msg/s all confirmed:", out)
	assert.Contains(t, out, "\n    lost: 248\n", out)
	assert.Contains(t, out, "(618–1772)", out)
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		assert.LessOrEqual(t, Width(line), 30, "%q", line)
	}
	b.Reset()
	tb.Fit(&b, LayoutFor(160))
	assert.Contains(t, b.String(), "  strategy  ", "at 160 columns it stays a table:\n%s", b.String())
}
