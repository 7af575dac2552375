package lesson

import (
	"fmt"
	"slices"
	"strings"

	"github.com/queuelab/qlab/lab"
)

// LostError is a run's failure when tasks ended lost that its lesson does
// not lose on purpose (Lesson.LosesOnPurpose): nothing is lost without
// the run failing. Err is the lesson's own error, if it had one.
type LostError struct {
	Lesson Lesson
	Tasks  []lab.TaskRecord // the unexpectedly lost, in creation order; each with its Reason
	Err    error
}

// Error is one line: the lesson's error first, if any, then the lost
// tasks grouped by reason ("lesson 10 lost 2 tasks: B, C (process died
// with the task in memory)").
func (e *LostError) Error() string {
	var reasons []string
	ids := map[string][]string{}
	for _, t := range e.Tasks {
		reason := t.Reason
		if reason == "" {
			reason = "no reason given"
		}
		if _, ok := ids[reason]; !ok {
			reasons = append(reasons, reason)
		}
		ids[reason] = append(ids[reason], t.ID)
	}
	groups := make([]string, len(reasons))
	for i, r := range reasons {
		groups[i] = fmt.Sprintf("%s (%s)", strings.Join(ids[r], ", "), r)
	}
	noun := "tasks"
	if len(e.Tasks) == 1 {
		noun = "task"
	}
	msg := fmt.Sprintf("lesson %d lost %d %s: %s", e.Lesson.Number(), len(e.Tasks), noun, strings.Join(groups, "; "))
	if e.Err != nil {
		return e.Err.Error() + "; " + msg
	}
	return msg
}

// Unwrap is the lesson's own error, so errors.Is sees a cancelled run.
func (e *LostError) Unwrap() error { return e.Err }

// Unexpected returns the tasks that ended lost on backend b and that l
// does not lose on purpose: not in LosesOnPurpose, nor caught by a crash
// the lesson stages itself (Parity.Crashed) on a backend that does not
// survive one.
func (l Lesson) Unexpected(b lab.Backend, tasks []lab.TaskRecord) []lab.TaskRecord {
	crashLoses := !FeaturesOf(b).SurvivesCrash
	var out []lab.TaskRecord
	for _, t := range tasks {
		switch {
		case t.Fate != lab.FateLost, slices.Contains(l.LosesOnPurpose, t.ID):
		case crashLoses && slices.Contains(l.Parity.Crashed, t.ID):
		default:
			out = append(out, t)
		}
	}
	return out
}

// CheckLost is the rule every front end applies to a finished run of l
// with opts: a run that lost tasks l does not lose on purpose fails with
// a *LostError wrapping runErr; otherwise runErr stands. A crash the
// caller asked for (Options.Interrupt) on a backend that does not survive
// one (flow.Features.SurvivesCrash: memory) loses what memory held by
// design, as qlab compare shows: that is no failure.
func CheckLost(l Lesson, opts Options, res Result, runErr error) error {
	lost := l.Unexpected(opts.Backend, res.Tasks)
	if len(lost) == 0 {
		return runErr
	}
	if opts.Interrupt > 0 && res.Interrupted && !FeaturesOf(opts.Backend).SurvivesCrash {
		return runErr
	}
	return &LostError{Lesson: l, Tasks: lost, Err: runErr}
}
