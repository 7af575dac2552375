package class

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Status is what became of an item.
type Status string

// The statuses a report may carry.
const (
	Done    Status = "done"    // a lesson that ran to its end; an exercise that passed
	Failing Status = "failing" // a lesson run that failed; an exercise not passed yet
)

// Limits on what one report may hold. A report is a line of a table, not
// a log: anything longer is refused, not cut.
const (
	MaxName   = 40  // characters of a student's name
	MaxDetail = 200 // characters of a failure's first line
	MaxBody   = 2048
)

// Report is one student's verdict on one item.
type Report struct {
	Student string `json:"student"`
	Item    string `json:"item"`             // "Q07" (a lesson) or "E05" (an exercise)
	Status  Status `json:"status"`           // Done or Failing
	Detail  string `json:"detail,omitempty"` // a failure's first line; empty when Done
}

// ErrBadReport wraps every reason Validate refuses a report.
var ErrBadReport = errors.New("bad report")

// Validate returns nil when r is a report the server keeps: a printable
// name, an item known in items, a known status, and a detail that is one
// printable line within MaxDetail (only a failure has one).
func (r Report) Validate(items []string) error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrBadReport, fmt.Sprintf(format, a...))
	}
	if err := CheckName(r.Student); err != nil {
		return fmt.Errorf("%w: %v", ErrBadReport, err)
	}
	if !slices.Contains(items, r.Item) {
		return bad("unknown item %.12q (want a lesson like Q07 or an exercise like E05)", r.Item)
	}
	switch r.Status {
	case Done:
		if r.Detail != "" {
			return bad("a done item carries no detail")
		}
	case Failing:
	default:
		return bad("status %.12q: want %q or %q", r.Status, Done, Failing)
	}
	if utf8.RuneCountInString(r.Detail) > MaxDetail || !printable(r.Detail) {
		return bad("detail must be one printable line of at most %d characters", MaxDetail)
	}
	return nil
}

// CheckName returns nil when name is a student's name the room can show:
// 1 to MaxName printable characters, no control or direction-changing
// characters, not only spaces.
func CheckName(name string) error {
	switch {
	case strings.TrimSpace(name) == "":
		return errors.New("the name is empty")
	case utf8.RuneCountInString(name) > MaxName:
		return fmt.Errorf("the name is longer than %d characters", MaxName)
	case !printable(name):
		return errors.New("the name holds a control or formatting character")
	}
	return nil
}

// printable reports whether s is valid UTF-8 with only graphic characters
// and spaces: no control (NUL, ESC, newline) and no format characters
// (the bidi overrides that make a name read backwards).
func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r != ' ' && (!unicode.IsGraphic(r) || unicode.Is(unicode.Cf, r)) {
			return false
		}
	}
	return true
}

// userinfo matches the user and password of a URL ("amqp://u:p@h").
var userinfo = regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.-]*://)[^/@\s]*@`)

// FirstLine is text made fit to send as a Detail: its first non-empty
// line, a URL's user and password replaced by "…@", control characters
// dropped, cut to MaxDetail characters.
func FirstLine(text string) string {
	line := ""
	for _, l := range strings.Split(text, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			line = l
			break
		}
	}
	line = userinfo.ReplaceAllString(line, "${1}…@")
	line = strings.Map(func(r rune) rune {
		if r == ' ' || (unicode.IsGraphic(r) && !unicode.Is(unicode.Cf, r)) {
			return r
		}
		return -1
	}, strings.ToValidUTF8(line, ""))
	if utf8.RuneCountInString(line) > MaxDetail {
		line = string([]rune(line)[:MaxDetail-1]) + "…"
	}
	return line
}
