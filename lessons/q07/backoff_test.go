package q07

import (
	"testing"
	"time"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lab/labtest"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lesson/lessontest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// scheduledOf returns task id's scheduled events in order.
func scheduledOf(events []lab.Event, id string) []lab.Event {
	var out []lab.Event
	for _, e := range events {
		if e.Kind == lab.Scheduled && e.Task == id {
			out = append(out, e)
		}
	}
	return out
}

// startedAt returns the lesson time attempt n of task id started.
func startedAt(t *testing.T, events []lab.Event, id string, n int) int64 {
	t.Helper()
	for _, e := range events {
		if e.Kind == lab.Started && e.Task == id && e.Attempt == n {
			return e.TMs
		}
	}
	t.Fatalf("task %s has no attempt %d", id, n)
	return 0
}

func TestQ07Backoff(t *testing.T) {
	events, _ := lessontest.RunInMem(t, Lesson, lesson.Options{})

	waits := scheduledOf(events, "C")
	require.Len(t, waits, 2)
	assert.Equal(t, "retryQueue", waits[0].To)
	assert.Equal(t, int64(1000), waits[0].DelayMs)
	assert.Equal(t, "secondRetryQueue", waits[1].To)
	assert.Equal(t, int64(2000), waits[1].DelayMs)

	// In fake time the waits are exact: each retry starts delay_ms after
	// the failure that scheduled it.
	assert.Equal(t, int64(300), waits[0].TMs, "C fails after A, B and its own 100 ms")
	assert.Equal(t, waits[0].TMs+1000, startedAt(t, events, "C", 2))
	assert.Equal(t, waits[1].TMs+2000, startedAt(t, events, "C", 3))

	// The main worker does not wait for C: D is done before C's retry.
	assert.Equal(t, int64(400), labtest.FirstAt(t, events, lab.Succeeded, "D"))

	fate, attempts := labtest.Summary(t, events, "C")
	assert.Equal(t, lab.FateDropped, fate, "Q07 still drops C after its last retry")
	assert.Equal(t, 3, attempts)
}

// A healthy task that fails once transiently gets the same 1 s wait and
// then succeeds on the retry queue.
func TestQ07TransientFailureWaitsThenSucceeds(t *testing.T) {
	plan := lab.Plan{Tasks: []string{"T"}, Work: 100 * time.Millisecond, FailRate: 0.5}
	for plan.Fails("T", 1) == nil || plan.Fails("T", 2) != nil {
		plan.Seed++ // find a seed where T fails its first attempt only
	}
	events, _ := lessontest.RunInMem(t, Lesson, lesson.Options{Plan: &plan})

	waits := scheduledOf(events, "T")
	require.Len(t, waits, 1)
	assert.Equal(t, int64(100), waits[0].TMs)
	assert.Equal(t, int64(1100), startedAt(t, events, "T", 2))
	fate, attempts := labtest.Summary(t, events, "T")
	assert.Equal(t, lab.FateDone, fate)
	assert.Equal(t, 2, attempts)
}

// The lesson shows why a struggling service cares (issue 20): against a
// service down for 2.5 s, retrying at once calls it only while it is down
// and drops every task; backing off calls it less while down and gets
// every task done.
func TestQ07BackoffSparesAStrugglingService(t *testing.T) {
	_, res := lessontest.RunInMem(t, Lesson, lesson.Options{})
	tb := lessontest.TableTitled(t, res.Tables, "A service that is down")
	assert.Equal(t, [][]string{
		{"retry at once (lesson 4's chain)", "12", "12", "0", "4"},
		{"wait 1 s, then 2 s (this lesson)", "8", "12", "4", "0"},
	}, tb.Rows)
}
