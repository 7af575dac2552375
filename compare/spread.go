package compare

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/queuelab/qlab/render"
)

// DefaultRepeat is how many times Run repeats each measured row per
// backend when Config.Repeat is 0: enough to show a spread, few enough to
// keep `qlab compare 10` to a few seconds.
const DefaultRepeat = 3

// unsteady is the spread, relative to the median, above which a measured
// row is flagged as timing-sensitive on this machine.
const unsteady = 0.25

// unsteadyMark follows the backend of a row whose runs spread by more
// than unsteady; unsteadyNote explains it under the table.
const (
	unsteadyMark = " ~"
	unsteadyNote = "~ the runs spread by over 25% of their median: timing-sensitive on this machine, read a range."
)

// Spread is a measured value over repeated runs.
type Spread struct{ Median, Min, Max float64 }

// spreadOf reduces samples (at least one) to their median and range.
func spreadOf(xs []float64) Spread {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	mid := len(s) / 2
	med := s[mid]
	if len(s)%2 == 0 {
		med = (s[mid-1] + s[mid]) / 2
	}
	return Spread{Median: med, Min: s[0], Max: s[len(s)-1]}
}

// Unsteady reports whether the range is wider than unsteady × the median
// and than floor (below which a difference is noise, e.g. 1 ms of
// scheduling).
func (s Spread) Unsteady(floor float64) bool {
	return s.Max-s.Min > max(unsteady*math.Abs(s.Median), floor)
}

// Format writes the median with verb and unit, followed by "[min–max]"
// when the runs differ: "3.9× [3.3–8.9]", or "3.9×" when they agree.
func (s Spread) Format(verb, unit string) string {
	med := fmt.Sprintf(verb, s.Median) + unit
	lo, hi := fmt.Sprintf(verb, s.Min), fmt.Sprintf(verb, s.Max)
	if lo == hi {
		return med
	}
	return fmt.Sprintf("%s [%s–%s]", med, lo, hi)
}

// intRange writes whole-number samples as "5" or "5–7".
func intRange(xs []int) string {
	lo, hi := xs[0], xs[0]
	for _, x := range xs {
		lo, hi = min(lo, x), max(hi, x)
	}
	if lo == hi {
		return fmt.Sprint(lo)
	}
	return fmt.Sprintf("%d–%d", lo, hi)
}

// noteWidth keeps a table's notes inside a 100-column slide (the table
// indents them by two).
const noteWidth = 96

// noteLines wraps a long note for text output; continuation lines start
// with two spaces, so Unwrapped can join them again.
func noteLines(text string) []string {
	lines := wrap(text, noteWidth)
	if len(lines) < 2 {
		return lines
	}
	rest := wrap(strings.Join(lines[1:], " "), noteWidth-2)
	for i := range rest {
		rest[i] = "  " + rest[i]
	}
	return append(lines[:1], rest...)
}

// Unwrapped returns t with each wrapped note joined into one line again,
// for Markdown and JSON, whose readers wrap text themselves.
func Unwrapped(t render.Table) render.Table {
	var notes []string
	for _, n := range t.Notes {
		if rest, ok := strings.CutPrefix(n, "  "); ok && len(notes) > 0 {
			notes[len(notes)-1] += " " + rest
			continue
		}
		notes = append(notes, n)
	}
	t.Notes = notes
	return t
}

// wrap breaks text into lines of at most width runes at spaces, for notes
// that must fit a slide.
func wrap(text string, width int) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(text) {
		if line != "" && len([]rune(line))+1+len([]rune(w)) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}
