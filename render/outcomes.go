package render

import (
	"fmt"

	"github.com/queuelab/qlab/lab"
)

// OutcomeRows is how many tasks the closing "What happened" table lists
// one by one; a larger run gets one row per fate instead (a run of up to
// lab.MaxTasks tasks would otherwise keep and print every summary).
const OutcomeRows = 10_000

// Outcomes is an inline sink that keeps only what the closing "What
// happened" table reads (summaries, and the breaker's fast fails), where a
// lab.Recorder would keep every event: memory that stays flat with the
// task count past OutcomeRows. Not safe for concurrent use; the Stream
// calls an inline sink from one emitter at a time.
type Outcomes struct {
	kept   []lab.Event // summaries while there are at most OutcomeRows, and every rejection
	tasks  int
	byFate map[lab.Fate]*fateCount
	order  []lab.Fate // fates in the order they first closed a task
}

type fateCount struct{ tasks, attempts int }

// Inline makes Outcomes an inline sink: it keeps what it needs at once.
func (o *Outcomes) Inline() {}

// Emit keeps e if the table needs it.
func (o *Outcomes) Emit(e lab.Event) {
	switch e.Kind {
	case lab.Rejected:
		o.kept = append(o.kept, e)
	case lab.Summary:
		o.tasks++
		o.count(e)
		if o.tasks <= OutcomeRows {
			o.kept = append(o.kept, e)
		} else if o.tasks == OutcomeRows+1 {
			o.kept = nil // the per-fate table needs none of them
		}
	}
}

func (o *Outcomes) count(e lab.Event) {
	if o.byFate == nil {
		o.byFate = map[lab.Fate]*fateCount{}
	}
	c := o.byFate[e.Fate]
	if c == nil {
		c = &fateCount{}
		o.byFate[e.Fate] = c
		o.order = append(o.order, e.Fate)
	}
	c.tasks++
	c.attempts += e.Attempt
}

// Tasks is how many summaries it saw.
func (o *Outcomes) Tasks() int { return o.tasks }

// Table is the closing table: WhatHappened, one row per task, for a run
// of up to OutcomeRows tasks; else one row per fate, with its tasks and
// their attempts.
func (o *Outcomes) Table() Table {
	if o.tasks <= OutcomeRows {
		return WhatHappened(o.kept)
	}
	t := Table{Title: "What happened", Header: []string{"fate", "tasks", "attempts"},
		Notes: []string{fmt.Sprintf("%d tasks: one row per fate (a run of up to %d lists each task; --json has every summary).", o.tasks, OutcomeRows)}}
	for _, f := range o.order {
		c := o.byFate[f]
		t.Rows = append(t.Rows, []string{string(f), fmt.Sprint(c.tasks), fmt.Sprint(c.attempts)})
	}
	return t
}
