// Package check is the library every exercise's checker uses. It runs the
// student's code through the lab — the same event stream, ledger and plans
// the lessons use, in memory inside a testing/synctest bubble (fake time:
// a 2 s backoff is checked exactly and instantly) — and reports each check
// as one marker line (Marker, then JSON) that `qlab ex` reads: the check's
// name, got and want in the student's terms, and a short transcript of the
// events that matter. A check runs on several plans (the seed's default
// and seeded transient failures), so printing the expected log cannot pass.
// Where the mechanism is a Prometheus registry, Scrape reads it as a
// server would, and a failed check shows the /metrics lines (ThatShowing).
package check

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/render"
)

// Marker starts every result line a checker prints; `qlab ex` keeps
// those lines and shows the rest of go test's output only when there is
// no result at all (a compiler error, a panic, a timeout).
const Marker = "QLABEX "

// Result is one check's outcome: passed on every plan, or the first plan
// it failed on with what the run did (Got) and what it should have done
// (Want). Skip, when set, says why the exercise could not be checked
// here (no broker).
type Result struct {
	Check      string   `json:"check"`
	Pass       bool     `json:"pass"`
	Plan       string   `json:"plan,omitempty"`
	Got        string   `json:"got,omitempty"`
	Want       string   `json:"want,omitempty"`
	Transcript []string `json:"transcript,omitempty"`
	Skip       string   `json:"skip,omitempty"`
}

// Parse splits go test's output into the results a checker printed and
// every other line, in order.
func Parse(output string) (results []Result, rest string) {
	var other strings.Builder
	sc := bufio.NewScanner(strings.NewReader(output))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if i := strings.Index(line, Marker); i >= 0 {
			var r Result
			if json.Unmarshal([]byte(line[i+len(Marker):]), &r) == nil {
				results = append(results, r)
				continue
			}
		}
		other.WriteString(line + "\n")
	}
	return results, other.String()
}

// Checker collects the results of one exercise's checks and prints them
// when the test ends; any failed check fails the test. Create one per
// test with New.
type Checker struct {
	t       testing.TB
	order   []string
	results map[string]*Result
}

// New returns a Checker that reports when t ends.
func New(t testing.TB) *Checker {
	c := &Checker{t: t, results: map[string]*Result{}}
	current = c
	t.Cleanup(c.report)
	return c
}

// Skip reports that the exercise cannot be checked here, and why, and
// skips the test.
func (c *Checker) Skip(reason string) {
	c.t.Helper()
	emit(Result{Check: "setup", Skip: reason})
	c.t.Skip(reason)
}

// Expect records check on run r: it passes when got equals want (both
// compared and shown as text). task names the task whose events make the
// transcript ("" for the run's last events). It reports whether it passed.
func (c *Checker) Expect(r Run, check string, got, want any, task string) bool {
	g, w := fmt.Sprint(got), fmt.Sprint(want)
	return c.That(r, check, g == w, g, w, task)
}

// That records check on run r with an outcome the checker computed
// itself; got and want say what the run did and what it should have done.
func (c *Checker) That(r Run, check string, ok bool, got, want, task string) bool {
	return c.record(r, check, ok, got, want, func() []string { return Transcript(r.Events, task) })
}

// ThatShowing records check like That, showing lines (what the run
// served on /metrics, say) instead of the run's log when it fails.
func (c *Checker) ThatShowing(r Run, check string, ok bool, got, want string, lines []string) bool {
	return c.record(r, check, ok, got, want, func() []string { return lines })
}

func (c *Checker) record(r Run, check string, ok bool, got, want string, transcript func() []string) bool {
	res, seen := c.results[check]
	if !seen {
		res = &Result{Check: check, Pass: true}
		c.results[check] = res
		c.order = append(c.order, check)
	}
	if !ok && res.Pass { // the first plan it failed on is the one shown
		*res = Result{Check: check, Plan: r.Name, Got: got, Want: want, Transcript: transcript()}
	}
	return ok
}

// Passed reports whether every check so far passed.
func (c *Checker) Passed() bool {
	for _, r := range c.results {
		if !r.Pass {
			return false
		}
	}
	return true
}

func (c *Checker) report() {
	for _, name := range c.order {
		emit(*c.results[name])
	}
	if !c.Passed() {
		c.t.Fail()
	}
}

// emit prints r as one marker line on stdout, where go test passes it on
// unchanged.
func emit(r Result) {
	b, _ := json.Marshal(r) // a Result always marshals
	fmt.Fprintln(os.Stdout, Marker+string(b))
}

// TranscriptLines is how many log lines a failed check shows.
const TranscriptLines = 10

// Transcript renders the events about task (the last events of the run
// when task is empty) as log lines, the last TranscriptLines of them.
func Transcript(events []lab.Event, task string) []string {
	var lines []string
	for _, e := range events {
		if e.Kind == lab.Summary || (task != "" && e.Task != task) {
			continue
		}
		if l := (render.Style{}).Line(e); l != "" {
			lines = append(lines, strings.Split(l, "\n")[0])
		}
	}
	if len(lines) > TranscriptLines {
		lines = append([]string{"…"}, lines[len(lines)-TranscriptLines:]...)
	}
	return lines
}
