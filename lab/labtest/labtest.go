// Package labtest holds the test helpers every package of the lab shares:
// a recorder safe for many goroutines, event lookups, the accounting
// oracle, and golden files with one -update flag. Test code only.
package labtest

import (
	"flag"
	"os"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/lab"
)

// updateFlag is -update, which rewrites golden files. teatest's golden
// package (the TUI's tests) defines a flag of that name too, and it
// initialises first (import paths sort before this one), so this package
// shares it rather than defining it twice.
var updateFlag = func() flag.Value {
	if f := flag.Lookup("update"); f != nil {
		return f.Value
	}
	flag.Bool("update", false, "rewrite the golden files under testdata/golden")
	return flag.Lookup("update").Value
}()

// Updating reports whether the test run was asked to rewrite its golden
// files (go test -update), for a test that keeps a golden of its own kind
// (docs/cli.md's TUI frame).
func Updating() bool { return updateFlag.String() == "true" }

// Recorder is a lab.Sink that keeps every event; safe for concurrent use
// (broker lessons emit from several goroutines).
type Recorder struct {
	mu     sync.Mutex
	events []lab.Event
}

// Emit records e.
func (r *Recorder) Emit(e lab.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

// Inline makes the recorder a lab.Inline sink: it gets each event as it
// is emitted, so what it holds mid-run is every event so far.
func (r *Recorder) Inline() {}

// Events returns a copy of what was recorded so far, in order.
func (r *Recorder) Events() []lab.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]lab.Event(nil), r.events...)
}

// Of returns, in order, the events about task of any of kinds (every kind
// but summaries when kinds is empty).
func Of(events []lab.Event, task string, kinds ...lab.Kind) []lab.Event {
	var out []lab.Event
	for _, e := range events {
		if e.Task != task || (len(kinds) == 0 && e.Kind == lab.Summary) {
			continue
		}
		if len(kinds) == 0 || slices.Contains(kinds, e.Kind) {
			out = append(out, e)
		}
	}
	return out
}

// OfKind returns, in order, the events of kind k.
func OfKind(events []lab.Event, k lab.Kind) []lab.Event {
	var out []lab.Event
	for _, e := range events {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

// Kinds returns, in order, the kinds of the events about task (summaries
// left out).
func Kinds(events []lab.Event, task string) []lab.Kind {
	var out []lab.Kind
	for _, e := range Of(events, task) {
		out = append(out, e.Kind)
	}
	return out
}

// Summary returns the fate and attempts of task's summary, failing the
// test when there is none.
func Summary(t testing.TB, events []lab.Event, task string) (lab.Fate, int) {
	t.Helper()
	s := Of(events, task, lab.Summary)
	require.NotEmpty(t, s, "no summary for task %s", task)
	return s[0].Fate, s[0].Attempt
}

// FirstAt returns the lesson time of the first event of kind k about
// task, failing the test when there is none.
func FirstAt(t testing.TB, events []lab.Event, k lab.Kind, task string) int64 {
	t.Helper()
	es := Of(events, task, k)
	require.NotEmpty(t, es, "no %s event for task %s", k, task)
	return es[0].TMs
}

// Find returns the first event of kind k about task at attempt n (any
// attempt when n is 0), failing the test when there is none.
func Find(t testing.TB, events []lab.Event, k lab.Kind, task string, n int) lab.Event {
	t.Helper()
	for _, e := range Of(events, task, k) {
		if n == 0 || e.Attempt == n {
			return e
		}
	}
	require.Failf(t, "no such event", "no %s event for task %s attempt %d", k, task, n)
	return lab.Event{}
}

// Fates returns every task's summary fate and attempts, by task id.
func Fates(events []lab.Event) map[string]lab.TaskRecord {
	out := map[string]lab.TaskRecord{}
	for _, e := range OfKind(events, lab.Summary) {
		out[e.Task] = lab.TaskRecord{ID: e.Task, Fate: e.Fate, Attempts: e.Attempt}
	}
	return out
}

// AssertAccounted is the accounting oracle: it re-derives every task's fate
// and attempts from the raw events, by a reading of the rules deliberately
// separate from lab.Ledger's, and checks that each task created got
// exactly one summary that agrees, that the summaries close the stream,
// and that seq counts 1, 2, 3 … with no gap.
func AssertAccounted(t testing.TB, events []lab.Event) {
	t.Helper()
	created := map[string]bool{}
	var order []string
	attempts := map[string]int{}
	fate := map[string]lab.Fate{}
	parkedIn := map[string]string{} // the DLQ of a task's last dead_lettered
	summaries := map[string][]lab.Event{}
	firstSummary := -1
	for i, e := range events {
		require.Equal(t, i+1, e.Seq, "seq must count 1, 2, 3 … in emission order")
		if e.Kind == lab.Summary {
			if firstSummary < 0 {
				firstSummary = i
			}
			summaries[e.Task] = append(summaries[e.Task], e)
			continue
		}
		require.Less(t, firstSummary, 0, "event %+v after the summaries began", e)
		if (e.Kind == lab.Enqueued || e.Kind == lab.Refused) && !created[e.Task] {
			created[e.Task] = true
			order = append(order, e.Task)
		}
		if !created[e.Task] {
			continue
		}
		switch e.Kind {
		case lab.Started:
			attempts[e.Task]++
		case lab.Succeeded, lab.Duplicate:
			fate[e.Task] = lab.FateDone
		case lab.DeadLettered:
			fate[e.Task], parkedIn[e.Task] = lab.FateDead, e.To
		case lab.Dropped:
			fate[e.Task] = lab.FateDropped
		case lab.Lost:
			fate[e.Task] = lab.FateLost
		case lab.Stranded:
			fate[e.Task] = lab.FateStranded
		case lab.Refused:
			fate[e.Task] = lab.FateRefused
		case lab.Redelivered:
			// Handed out again by the DLQ it was parked in: still dead.
			if dlq := parkedIn[e.Task]; fate[e.Task] != lab.FateDead || dlq == "" || dlq != e.Queue {
				fate[e.Task] = lab.FatePending
			}
		case lab.Enqueued, lab.Moved, lab.Scheduled:
			fate[e.Task] = lab.FatePending
		}
	}
	require.NotEmpty(t, order, "the run created no task")
	for _, id := range order {
		got := summaries[id]
		require.Len(t, got, 1, "task %s needs exactly one summary", id)
		assert.Equal(t, fate[id], got[0].Fate, "fate of %s", id)
		assert.Equal(t, attempts[id], got[0].Attempt, "attempts of %s", id)
	}
	assert.Len(t, summaries, len(order), "a summary names a task that was never created")
}

// Golden compares got with the file at path; with -update it first
// rewrites the file. Review the diff of an update before committing it.
func Golden(t testing.TB, path, got string) {
	t.Helper()
	if Updating() {
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "no golden file %s: run the test with -update", path)
	assert.Equal(t, string(want), got, "golden %s differs (rerun with -update after an intended change)", path)
}
