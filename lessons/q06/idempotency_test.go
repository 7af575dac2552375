package q06

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lab/labtest"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lesson/lessontest"
	"github.com/queuelab/qlab/render"
)

// row is one strategy's line of the owed-vs-sent table, the columns a
// student reads for the verdict.
type row struct{ owed, sent, verdict string }

// runOwed runs Q06 on plan (nil: the default), checks every task is
// accounted for, and returns the events and the owed-vs-sent rows, after
// checking each row against a count of its own from the events.
func runOwed(t *testing.T, plan *lab.Plan) ([]lab.Event, []row) {
	t.Helper()
	events, res := lessontest.RunInMem(t, Lesson, lesson.Options{Plan: plan})
	labtest.AssertAccounted(t, events)
	table := lessontest.TableTitled(t, res.Tables, "Emails owed vs emails sent")
	owed, sent := countFromEvents(events)
	var rows []row
	for _, r := range table.Rows {
		n := r[0]
		assert.Equal(t, fmt.Sprint(owed[n]), r[2], "strategy %s: owed is one per task enqueued", n)
		assert.Equal(t, fmt.Sprint(sent[n]), r[3], "strategy %s: sent is the emails the run sent", n)
		rows = append(rows, row{r[2], r[3], r[6]})
	}
	return events, rows
}

// countFromEvents counts, per strategy number (a task's last character),
// the tasks enqueued and the emails the mail server reported sending.
func countFromEvents(events []lab.Event) (owed, sent map[string]int) {
	owed, sent = map[string]int{}, map[string]int{}
	strategyOf := func(task string) string { return task[len(task)-1:] }
	for _, e := range events {
		switch e.Kind {
		case lab.Enqueued:
			owed[strategyOf(e.Task)]++
		case lab.Mailed:
			sent[strategyOf(e.Task)]++
		}
	}
	return owed, sent
}

// The expected-vs-actual table on the default plan (C poison, A's first
// ack never reaching the broker before its channel closed) and on a seeded failure plan: sending first duplicates,
// marking first loses C silently, the idempotency key and the atomic
// claim are safe, check-then-act with two consumers sends twice.
func TestQ06OwedVsSent(t *testing.T) {
	cases := map[string]struct {
		plan *lab.Plan
		want []row
	}{
		"default": {nil, []row{
			{"4", "7", "duplicates"}, {"4", "6", "duplicates"}, {"4", "3", "loses silently"}, {"4", "4", "safe"},
			{"1", "2", "duplicates"}, {"1", "1", "safe"},
			{"4", "3", "safe"}, {"4", "3", "safe"},
		}},
		"seeded": {lessontest.SeededPlan(7), []row{
			{"4", "8", "duplicates"}, {"4", "6", "duplicates"}, {"4", "3", "loses silently"}, {"4", "4", "safe"},
			{"1", "2", "duplicates"}, {"1", "1", "safe"},
			{"4", "3", "safe"}, {"4", "3", "safe"},
		}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, rows := runOwed(t, c.plan)
			assert.Equal(t, c.want, rows)
		})
	}
}

// On plans where failures hit any task at random, each strategy keeps its
// promise and breaks the way the lesson says: marking first never sends
// twice, the idempotency key and the claim never send twice nor lose an
// email silently, sending first never loses one.
func TestQ06StrategiesUnderRandomFailures(t *testing.T) {
	for seed := int64(1); seed <= 12; seed++ {
		plan := lab.Plan{Tasks: []string{"A", "B", "C", "D"}, Work: lab.DefaultPlan().Work, FailRate: 0.4, Seed: seed}
		events, _ := runOwed(t, &plan)
		sent, fate := emailsAndFates(events)
		for task, n := range sent {
			strategy := task[len(task)-1:]
			silent := n == 0 && fate[task] == lab.FateDone
			switch strategy {
			case "2", "5": // send first
				assert.False(t, silent, "seed %d: %s lost its email", seed, task)
			case "3": // mark first
				assert.LessOrEqual(t, n, 1, "seed %d: %s sent twice", seed, task)
			case "4", "6", "7", "8": // idempotency key, atomic claim, a write undone on failure
				assert.LessOrEqual(t, n, 1, "seed %d: %s sent twice", seed, task)
				assert.False(t, silent, "seed %d: %s lost its email", seed, task)
			}
		}
	}
}

// emailsAndFates counts each task's emails and reads its summary fate.
func emailsAndFates(events []lab.Event) (map[string]int, map[string]lab.Fate) {
	sent, fate := map[string]int{}, map[string]lab.Fate{}
	for _, e := range events {
		switch e.Kind {
		case lab.Enqueued:
			sent[e.Task] += 0
		case lab.Mailed:
			sent[e.Task]++
		case lab.Summary:
			fate[e.Task] = e.Fate
		}
	}
	return sent, fate
}

// Mark-then-send on the default plan: C3 is marked SENT, its send fails,
// and the retry's conditional update matches no row, so C3 ends done with
// no email: the failure became a success.
func TestQ06MarkFirstLosesTheEmail(t *testing.T) {
	events, _ := runOwed(t, nil)
	fate, _ := labtest.Summary(t, events, "C3")
	assert.Equal(t, lab.FateDone, fate)
	assert.Empty(t, labtest.Of(events, "C3", lab.Mailed), "no email for C3")
	assert.Equal(t, []lab.Kind{lab.Enqueued, lab.Started, lab.Failed, lab.Moved, lab.Started, lab.Duplicate}, labtest.Kinds(events, "C3"))
	assert.Contains(t, labtest.Find(t, events, lab.Failed, "C3", 1).Note, "after PENDING→SENT, before the email was sent")
}

// Two consumers: Consumer-2 gets the redelivered message while Consumer-1
// is between its check and its record. Check-then-act lets both send;
// the atomic claim makes Consumer-2 skip.
func TestQ06TwoConsumersRace(t *testing.T) {
	events, _ := runOwed(t, nil)
	actors := func(task string, k lab.Kind) []string {
		var out []string
		for _, e := range labtest.Of(events, task, k) {
			out = append(out, e.Actor)
		}
		return out
	}
	assert.Equal(t, []string{"Consumer-1", "Consumer-2"}, actors("A5", lab.Started))
	assert.Len(t, labtest.Of(events, "A5", lab.Mailed), 2, "check-then-act: both consumers sent")
	assert.Equal(t, []string{"Consumer-1", "Consumer-2"}, actors("A6", lab.Started))
	assert.Len(t, labtest.Of(events, "A6", lab.Mailed), 1, "claim-first: one email")
	assert.Equal(t, []string{"Consumer-2"}, actors("A6", lab.Duplicate))
	assert.Contains(t, labtest.Find(t, events, lab.Duplicate, "A6", 0).Note, "ON CONFLICT DO NOTHING")
}

// A redelivery is not a retry: the attempt after a redelivered event says
// so, and its log line does not read "Retrying"; a retry after a failure
// still does.
func TestQ06RedeliveryIsNotARetry(t *testing.T) {
	events, _ := runOwed(t, nil)
	for _, task := range []string{"A1", "A2", "A3", "A4"} {
		again := labtest.Find(t, events, lab.Started, task, 2)
		assert.Equal(t, "a redelivery, not a retry", again.Note)
		line := render.Style{}.Line(again)
		assert.NotContains(t, line, "Retrying", line)
	}
	retry := labtest.Find(t, events, lab.Started, "C1", 2)
	assert.Empty(t, retry.Note)
	assert.Contains(t, render.Style{}.Line(retry), "Retrying")
}

// claim is atomic: of many goroutines claiming one id at once, exactly one
// wins; release lets the next claim win again.
func TestStoreClaimIsAtomic(t *testing.T) {
	s := newStore()
	var wins sync.WaitGroup
	won := make(chan bool, 64)
	for range 64 {
		wins.Add(1)
		go func() {
			defer wins.Done()
			won <- s.claim("X")
		}()
	}
	wins.Wait()
	close(won)
	n := 0
	for w := range won {
		if w {
			n++
		}
	}
	require.Equal(t, 1, n)
	s.release("X")
	assert.True(t, s.claim("X"), "a released claim can be taken again")
	assert.False(t, s.claim("X"))
}

// Part 3: the failure that sinks mark-then-send (C3: SENT, no email) does
// not sink claim-first nor the conditional update undone on failure: what
// differs is the undo, not the statement (issue 20).
func TestQ06ClaimFirstAgainstMarkThenSendsFailure(t *testing.T) {
	events, _ := runOwed(t, nil)
	sent, fate := emailsAndFates(events)
	assert.Equal(t, 0, sent["C3"], "mark-then-send: no email for C3")
	assert.Equal(t, lab.FateDone, fate["C3"], "and says done: a silent loss")
	for _, task := range []string{"C7", "C8"} {
		// C fails on every attempt: no email, and the DLQ shows it is still owed.
		assert.Equal(t, 0, sent[task], task)
		assert.Equal(t, lab.FateDead, fate[task], "%s: still owed, and visible", task)
		assert.Len(t, labtest.Of(events, task, lab.Started), maxAttempts, "%s: every retry tried again, none was skipped", task)
		assert.Contains(t, labtest.Find(t, events, lab.Failed, task, 1).Note, "before the email was sent", task)
	}
	redelivered := labtest.Of(events, "A1", lab.Redelivered)
	require.Len(t, redelivered, 1)
	assert.Contains(t, redelivered[0].Note, "channel closed before its ack reached the broker", "an ack is not lost on its own")
}
