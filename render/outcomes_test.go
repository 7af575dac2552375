package render

import (
	"fmt"
	"testing"

	"github.com/queuelab/qlab/lab"
	"github.com/stretchr/testify/assert"
)

// Up to OutcomeRows tasks, Outcomes gives the very table WhatHappened
// gives from every event, fast fails included.
func TestOutcomesMatchesWhatHappenedForASmallRun(t *testing.T) {
	events := []lab.Event{
		{Kind: lab.Enqueued, Task: "A"}, {Kind: lab.Rejected, Task: "A"}, {Kind: lab.Started, Task: "A"},
		{Kind: lab.Succeeded, Task: "A"}, {Kind: lab.Enqueued, Task: "B"}, {Kind: lab.Phase, Note: "part two"},
		{Kind: lab.Summary, Task: "A", Fate: lab.FateDone, Attempt: 1},
		{Kind: lab.Summary, Task: "B", Fate: lab.FatePending},
	}
	var o Outcomes
	for _, e := range events {
		o.Emit(e)
	}
	assert.Equal(t, WhatHappened(events), o.Table())
	assert.Len(t, o.kept, 3, "the summaries and the fast fail, nothing else")
}

// Past OutcomeRows tasks it keeps no summary and gives one row per fate,
// in the order the fates first closed a task, and says why.
func TestOutcomesCountsFatesForALargeRun(t *testing.T) {
	var o Outcomes
	for i := range OutcomeRows + 5 {
		e := lab.Event{Kind: lab.Summary, Task: fmt.Sprint(i), Fate: lab.FateDone, Attempt: 1}
		if i%4 == 2 {
			e.Fate, e.Attempt = lab.FateDropped, 2
		}
		o.Emit(e)
	}
	assert.Nil(t, o.kept)
	table := o.Table()
	assert.Equal(t, []string{"fate", "tasks", "attempts"}, table.Header)
	n := OutcomeRows + 5
	dropped := n / 4 // i%4 == 2 for a quarter of them, rounded down here
	assert.Equal(t, [][]string{
		{"done", fmt.Sprint(n - dropped), fmt.Sprint(n - dropped)},
		{"dropped", fmt.Sprint(dropped), fmt.Sprint(2 * dropped)},
	}, table.Rows)
	assert.Contains(t, table.Notes[0], fmt.Sprintf("%d tasks: one row per fate", n))
}
