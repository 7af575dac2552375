package render

import (
	"strconv"
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// The widths of what a person reads. Prose wraps to the terminal, or to
// DefaultWidth where the output is no terminal (a pipe, a file, a golden);
// nothing, tables included, is ever wider than MaxWidth.
const (
	DefaultWidth = 80
	MaxWidth     = 100
)

// Layout is how many columns prose and tables may take.
type Layout struct {
	Prose int // notices, notes, log lines
	Table int // tables, whose cells wrap to fit
}

// LayoutFor is the layout for a terminal of the given width; 0 means the
// output is no terminal: prose at DefaultWidth, tables at MaxWidth.
func LayoutFor(terminal int) Layout {
	if terminal <= 0 {
		return Layout{Prose: DefaultWidth, Table: MaxWidth}
	}
	w := min(terminal, MaxWidth)
	return Layout{Prose: w, Table: w}
}

// Width is how many terminal columns s takes: ANSI codes take none, a
// wide character or an emoji two.
func Width(s string) int { return ansi.StringWidth(s) }

// Wrap breaks text at spaces into lines of at most width columns, each
// after the first starting with indent; a line break in text starts a new
// line, and a line that fits is kept as written. A word wider than a line
// is cut, after a hyphen, dot or slash where it has one.
func Wrap(text string, width int, indent string) []string {
	return wrap(text, width, width-Width(indent), indent)
}

// wrap is Wrap with the first line first columns wide and the others
// rest columns wide after indent.
func wrap(text string, first, rest int, indent string) []string {
	var out []string
	room := first
	for _, para := range strings.Split(text, "\n") {
		var line strings.Builder
		used := 0
		flush := func() {
			pre := indent
			if len(out) == 0 {
				pre = ""
			}
			out = append(out, pre+line.String())
			line.Reset()
			used, room = 0, rest
		}
		if Width(para) <= room { // a line that fits stays as written, spaces and all
			line.WriteString(para)
			flush()
			continue
		}
		for _, word := range strings.Fields(para) {
			w := Width(word)
			if used > 0 && used+1+w > room {
				flush()
			}
			for used == 0 && w > max(room, 1) { // a word no line holds: cut it
				head := cut(word, max(room, 1))
				line.WriteString(head)
				word = strings.TrimPrefix(word, head)
				w = Width(word)
				flush()
			}
			if used > 0 {
				line.WriteByte(' ')
				used++
			}
			line.WriteString(word)
			used += w
		}
		flush()
	}
	return out
}

// cut is the head of word that fits n columns: up to its last hyphen,
// dot or slash that fits (x-dead-letter-|exchange), else as much as fits,
// else its first character.
func cut(word string, n int) string {
	head := ansi.Truncate(word, n, "")
	if i := strings.LastIndexAny(head, "-./"); i > 0 && i < len(head)-1 {
		return head[:i+1]
	}
	if head == "" { // a wide character in a one-column room
		head = string([]rune(word)[:1])
	}
	return head
}

// Count is n and word, plural unless n is 1: "1 message", "3 messages".
func Count(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}
