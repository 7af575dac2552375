package class

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Text is the room as the terminal shows it: one line per student with
// how many items are done and the first failing item's first line, cut
// to width columns. now dates the "seen" column.
func (p Progress) Text(width int, now time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d students · %d items\n", len(p.Students), len(p.Items))
	if len(p.Students) == 0 {
		b.WriteString("(no student has reported yet: they run qlab class join URL --name NAME)\n")
		return b.String()
	}
	nameW := len("STUDENT")
	for _, s := range p.Students {
		nameW = max(nameW, utf8.RuneCountInString(s.Name))
	}
	row := func(name, done, seen, first string) {
		line := fmt.Sprintf("%s%s  %6s  %5s  %s", name, strings.Repeat(" ", nameW-utf8.RuneCountInString(name)), done, seen, first)
		b.WriteString(cut(strings.TrimRight(line, " "), width) + "\n")
	}
	row("STUDENT", "DONE", "SEEN", "FIRST FAILURE")
	for _, s := range p.Students {
		first := firstFailing(p.Items, s)
		if first == "" {
			first = "-"
		}
		row(s.Name, fmt.Sprintf("%d/%d", s.Done, len(p.Items)), ago(now.Sub(s.LastSeen)), first)
	}
	return b.String()
}

// firstFailing is "E05: detail" for the first item in course order whose
// latest verdict is Failing, or "".
func firstFailing(items []string, s StudentProgress) string {
	for _, it := range items {
		if c, ok := s.Cells[it]; ok && c.Status == Failing {
			return strings.TrimSuffix(it+": "+c.Detail, ": ")
		}
	}
	return ""
}

// ago is a short age: "12s", "4m", "2h".
func ago(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", max(0, int(d.Seconds())))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	}
	return fmt.Sprintf("%dh", int(d.Hours()))
}

// cut shortens s to width characters, marking the cut with "…".
func cut(s string, width int) string {
	if width <= 0 || utf8.RuneCountInString(s) <= width {
		return s
	}
	return string([]rune(s)[:width-1]) + "…"
}
