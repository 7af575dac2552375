package check

import (
	"fmt"
	"strings"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/render"
)

// Of returns, in order, the events of kind k about task.
func (r Run) Of(task string, k lab.Kind) []lab.Event {
	var out []lab.Event
	for _, e := range r.Events {
		if e.Task == task && e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

// Fate returns task's summary: its fate and how many attempts it had.
func (r Run) Fate(task string) (lab.Fate, int) {
	for _, e := range r.Of(task, lab.Summary) {
		return e.Fate, e.Attempt
	}
	return "", 0
}

// At returns the lesson time (ms) of the first event of kind k about task
// at attempt n (any attempt when n is 0), or -1 when there is none.
func (r Run) At(task string, k lab.Kind, n int) int64 {
	for _, e := range r.Of(task, k) {
		if n == 0 || e.Attempt == n {
			return e.TMs
		}
	}
	return -1
}

// Failures returns how many attempts of task the plan fails, counting up
// to its last attempt in the run.
func (r Run) Failures(task string) int {
	return len(r.Of(task, lab.Failed))
}

// Poison reports whether the plan makes task fail every attempt.
func (r Run) Poison(task string) bool {
	for _, id := range r.Plan.Poison {
		if id == task {
			return true
		}
	}
	return false
}

// Last describes task's last event before the summaries, in log words.
func (r Run) Last(task string) string {
	var last lab.Event
	for _, e := range r.Events {
		if e.Task == task && e.Kind != lab.Summary {
			last = e
		}
	}
	if last.Kind == "" {
		return "no event at all"
	}
	msg, _ := render.Message(last)
	return strings.TrimSpace(strings.Split(msg, "\n")[0])
}

// Accounted records the check every exercise shares: the run ended by
// itself and every task ended with a fate in want (done, dead, dropped…),
// none left pending with nothing saying where it went.
func (c *Checker) Accounted(r Run, want ...lab.Fate) {
	if r.Err != nil {
		c.That(r, "the run ends by itself", false, r.Err.Error(), "every task settled, the workers idle", "")
		return
	}
	c.That(r, "the run ends by itself", true, "", "", "")
	for _, id := range r.Plan.Tasks {
		fate, _ := r.Fate(id)
		ok := false
		for _, f := range want {
			ok = ok || fate == f
		}
		c.That(r, "nothing lost: every task ends "+fates(want), ok,
			fmt.Sprintf("task %s ends %s; its last event: %s", id, fate, r.Last(id)),
			"task "+id+" ends "+fates(want), id)
	}
}

func fates(fs []lab.Fate) string {
	s := make([]string, len(fs))
	for i, f := range fs {
		s[i] = string(f)
	}
	return strings.Join(s, " or ")
}
