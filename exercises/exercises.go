// Package exercises is the ordered list of QueueLab's exercises and the
// pristine copy of each one's files, embedded in the qlab binary so `qlab ex
// reset N` can restore a student's file and `qlab ex solution N` can show
// the solution once the exercise passes.
//
// Each exercise is a directory NN_name holding one Go package: the file the
// student edits and the checker check_test.go (both build tag qlabex), an
// untagged doc.go that says what to do, and in testdata/ the pristine stub
// and the reference solution. Without the qlabex tag the module's own `go
// test ./...` builds only doc.go, so the project stays green while the
// exercises are unsolved. The pristine copies are separate files because
// the binary embeds what is on disk when it is built: a `go run ./cmd/qlab`
// in a student's clone would otherwise embed the student's edits.
// author_test.go proves, with go's -overlay, that every pristine stub fails
// its checker, every solution passes it, and every known-wrong solution in
// testdata/wrong/ fails with the check its "// First failure:" line names.
package exercises

import (
	"embed"
	"fmt"
	"path"
	"strconv"
	"strings"
)

//go:embed */testdata/*.go
var files embed.FS

// Exercise is one exercise as `qlab ex` shows it.
type Exercise struct {
	Dir    string // directory under exercises/, e.g. "01_requeue"
	File   string // the file the student edits, e.g. "requeue.go"
	Lesson string // the lesson whose mechanism it is, e.g. "Q01"
	Title  string
	Broker bool   // checked against RabbitMQ (skipped without one)
	Hints  []Hint // in the order a student should read them
}

// Hint is one step of help. When it names a check (or a piece of
// compiler or run output), it is shown first to a student whose run
// failed that way; a hint without When is general.
type Hint struct {
	When string
	Text string
}

// Number is the exercise's number, 1-based, as typed on the command line.
func (e Exercise) Number() int {
	n, _ := strconv.Atoi(e.Dir[:2]) // Dir starts with two digits; a test says so
	return n
}

// Path is the student's file relative to the module root.
func (e Exercise) Path() string { return path.Join("exercises", e.Dir, e.File) }

// Package is the exercise's package pattern relative to the module root.
func (e Exercise) Package() string { return "./" + path.Join("exercises", e.Dir) }

// Stub returns the pristine student file.
func (e Exercise) Stub() []byte { return mustRead(path.Join(e.Dir, "testdata", "stub.go")) }

// Solution returns the reference solution.
func (e Exercise) Solution() []byte { return mustRead(path.Join(e.Dir, "testdata", "solution.go")) }

func mustRead(name string) []byte {
	b, err := files.ReadFile(name)
	if err != nil {
		panic("exercises: " + err.Error()) // the list names a file the embed lacks; a test says so
	}
	return b
}

// HintsFor orders e's hints for a run whose failed checks and other
// output are given: hints keyed to what failed first, then the general
// ones, then the rest.
func (e Exercise) HintsFor(failed []string, output string) []Hint {
	var keyed, general, other []Hint
	for _, h := range e.Hints {
		switch {
		case h.When == "":
			general = append(general, h)
		case matches(h.When, failed, output):
			keyed = append(keyed, h)
		default:
			other = append(other, h)
		}
	}
	return append(append(keyed, general...), other...)
}

func matches(when string, failed []string, output string) bool {
	for _, f := range failed {
		if f == when {
			return true
		}
	}
	return output != "" && strings.Contains(output, when)
}

// Find returns exercise number n. Numbers increase along All but may
// skip one kept for an exercise still to come (a test says so), so n is
// looked up, not used as an index.
func Find(n int) (Exercise, error) {
	for _, ex := range All {
		if ex.Number() == n {
			return ex, nil
		}
	}
	return Exercise{}, fmt.Errorf("no exercise %d: they are %s (qlab ex list)", n, numbers())
}

// Index is ex's position in All (0-based), or -1 when it is not there.
func Index(ex Exercise) int {
	for i, e := range All {
		if e.Dir == ex.Dir {
			return i
		}
	}
	return -1
}

// numbers lists the exercise numbers as runs: "1–20", or "1–16, 18–20"
// while 17 is missing.
func numbers() string {
	var runs []string
	for i := 0; i < len(All); {
		j := i
		for j+1 < len(All) && All[j+1].Number() == All[j].Number()+1 {
			j++
		}
		run := strconv.Itoa(All[i].Number())
		if j > i {
			run += "–" + strconv.Itoa(All[j].Number())
		}
		runs = append(runs, run)
		i = j + 1
	}
	return strings.Join(runs, ", ")
}
