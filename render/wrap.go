package render

import (
	"strconv"
	"strings"
	"unicode"

	"github.com/charmbracelet/x/ansi"
)

// The widths of what a person reads. Prose wraps to the terminal, or to
// DefaultWidth where the output is no terminal (a pipe, a file, a golden);
// where it is no terminal, nothing, tables included, is wider than
// MaxWidth. A terminal wider than that gives its tables its whole width
// (a 160-column table wraps no cell), and its prose up to ProseMax.
const (
	DefaultWidth = 80
	MaxWidth     = 100
	ProseMax     = 120 // longer lines are hard to follow back to their start
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
	return Layout{Prose: min(terminal, ProseMax), Table: terminal}
}

// Width is how many terminal columns s takes: ANSI codes take none, a
// wide character or an emoji two.
func Width(s string) int { return ansi.StringWidth(s) }

// Wrap breaks text at spaces into lines of at most width columns, each
// after the first starting with indent; a line break in text starts a new
// line, and a line that fits is kept as written. A word wider than a line
// breaks where a reader expects it to (after a hyphen, slash, dot, comma,
// colon or closing bracket, before an opening one, never inside a number:
// see Pieces); only a piece no line holds is cut where it must be.
func Wrap(text string, width int, indent string) []string {
	lines, _ := wrap(text, width, width-Width(indent), indent)
	return lines
}

// Cuts is the words Wrap(text, width, indent) would cut inside a piece
// (see Pieces), where no line holds the piece: what a reader would see
// split in the middle of a word or a number. Empty when it cuts none.
func Cuts(text string, width int, indent string) []string {
	_, cuts := wrap(text, width, width-Width(indent), indent)
	return cuts
}

// wrap is Wrap with the first line first columns wide and the others
// rest columns wide after indent; it also returns the words it had to cut
// inside a piece.
func wrap(text string, first, rest int, indent string) (out, cuts []string) {
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
			for used == 0 && w > max(room, 1) { // a word no line holds: break it
				head, forced := cut(word, max(room, 1))
				if forced {
					cuts = append(cuts, word)
				}
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
	return out, cuts
}

// cut is the head of word that fits n columns: as many of its pieces as
// fit (x-dead-letter-|exchange); forced when not even its first piece
// fits, and then as much of that as fits, else its first character.
func cut(word string, n int) (head string, forced bool) {
	for _, p := range Pieces(word) {
		if Width(head+p) > n {
			break
		}
		head += p
	}
	if head != "" {
		return head, false
	}
	head = ansi.Truncate(word, n, "")
	if head == "" { // a wide character in a one-column room
		head = string([]rune(word)[:1])
	}
	return head, true
}

// Pieces splits word where a line may end inside it: after a hyphen, a
// dash, a slash, a dot, a comma, a colon, a semicolon, an equals sign, an
// arrow or a closing bracket, and before an opening bracket; never between
// two digits (24.84, 1,000, 226–653 stay whole) nor between two marks;
// a piece of one or two characters stays with the one before it
// (deliveries/s, e.g.). The pieces joined are word.
func Pieces(word string) []string {
	rs := []rune(word)
	var out []string
	start := 0
	for i := 1; i < len(rs); i++ {
		if breakBetween(rs[i-1], rs[i], rs, i) && i-start > 2 && len(rs)-i > 2 {
			out = append(out, string(rs[start:i]))
			start = i
		}
	}
	return append(out, string(rs[start:]))
}

// breakBetween reports whether a line may end between a (at i-1) and b
// (at i) of rs.
func breakBetween(a, b rune, rs []rune, i int) bool {
	if i >= 2 && unicode.IsDigit(rs[i-2]) && unicode.IsDigit(b) && strings.ContainsRune(".,:–-/", a) {
		return false // inside a number, a time or a range: 24.84, 1,000, 12:30, 226–653
	}
	switch {
	case strings.ContainsRune("-–—/.,:;=→)]}", a):
		return i >= 2 && !isMark(b) // a leading mark (-5, .env) stays on its word
	case strings.ContainsRune("([{", b):
		return !isMark(a)
	}
	return false
}

// isMark reports whether r is punctuation or a symbol: a break between
// two of them would leave one alone at a line's end or start.
func isMark(r rune) bool { return unicode.IsPunct(r) || unicode.IsSymbol(r) }

// Count is n and word, plural unless n is 1: "1 message", "3 messages".
func Count(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}
