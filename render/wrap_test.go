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
