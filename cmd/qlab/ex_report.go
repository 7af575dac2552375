package main

import (
	"fmt"
	"strings"

	"github.com/queuelab/qlab/exercises"
)

// exPaint colours report text when on.
type exPaint bool

func (p exPaint) c(code, s string) string {
	if !p || s == "" {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

func (p exPaint) good(s string) string  { return p.c("32", s) }
func (p exPaint) bad(s string) string   { return p.c("31", s) }
func (p exPaint) faint(s string) string { return p.c("2", s) }
func (p exPaint) bold(s string) string  { return p.c("1", s) }

// exHeading is an exercise's one-line name.
func exHeading(ex exercises.Exercise) string {
	return fmt.Sprintf("Exercise %d (%s): %s", ex.Number(), ex.Lesson, ex.Title)
}

// exReport renders a run in the student's terms: every check with a mark,
// the first failure in full (plan, got, want, transcript), compiler
// errors unaltered, a plain sentence for a timeout, deadlock or panic.
func exReport(r exRun, p exPaint) string {
	var b strings.Builder
	line := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	switch r.Status {
	case exPass:
		line("%s %s", p.good("✓ passed"), p.faint(fmt.Sprintf("(%d checks, %.1fs)", len(r.Results), r.Took.Seconds())))
	case exSkip:
		line("%s %s", p.faint("– not checked here:"), r.Results[0].Skip)
		return b.String()
	case exBuild:
		line("%s", p.bad("✗ does not compile:"))
		b.WriteString(strings.TrimRight(compilerLines(r.Output), "\n") + "\n")
		return b.String()
	case exTimeout:
		line("%s", p.bad("✗ your code never finished: go test stopped it after its time limit."))
		line("  Look for a loop that never ends (a task retried for ever, a for without an exit).")
		return b.String()
	case exDeadlock:
		line("%s", p.bad("✗ deadlock: every goroutine of the run was waiting and none could go on."))
		line("  Look for a send on a channel nobody reads, or a worker that waits for itself.")
		line("  %s", p.faint(firstLine(r.Output, "deadlock")))
		return b.String()
	case exCrash:
		line("%s %s", p.bad("✗ your code panicked:"), strings.TrimPrefix(firstLine(r.Output, "panic:"), "panic: "))
		if at := firstLine(r.Output, r.Ex.Dir+"/"); at != "" {
			line("  at %s", strings.TrimSpace(at))
		}
		return b.String()
	default:
		line("%s %s", p.bad("✗ not yet:"), fmt.Sprintf("%d of %d checks pass", len(r.Results)-len(r.Failed()), len(r.Results)))
	}
	shown := false
	for _, res := range r.Results {
		if res.Pass {
			line("  %s %s", p.good("✓"), res.Check)
			continue
		}
		line("  %s %s", p.bad("✗"), res.Check)
		if shown {
			continue
		}
		shown = true
		line("      %s %s", p.faint("on"), res.Plan)
		line("      %s  %s", p.bold("got:"), res.Got)
		line("      %s %s", p.bold("want:"), res.Want)
		for _, t := range res.Transcript {
			line("        %s", p.faint(t))
		}
	}
	if r.Status == exFail && len(r.Results) == 0 {
		b.WriteString(r.Output)
	}
	return b.String()
}

// compilerLines drops go test's own framing around the compiler's lines.
func compilerLines(out string) string {
	var keep []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "FAIL") || strings.HasPrefix(l, "ok ") {
			continue
		}
		keep = append(keep, l)
	}
	return strings.Join(keep, "\n")
}

// firstLine returns the first line of out containing s, or "".
func firstLine(out, s string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}

// exHint returns hint number n (1-based, capped at the last) of the hints
// ordered for run r, and how many there are.
func exHint(r exRun, n int) (string, int) {
	hs := r.Ex.HintsFor(r.Failed(), r.Output)
	if len(hs) == 0 {
		return "", 0
	}
	n = min(max(n, 1), len(hs))
	return hs[n-1].Text, len(hs)
}
