package lessons

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/render"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// measureFunc is a measured lesson's body: it runs the lesson on env and
// returns the runs it measured on streams of their own.
type measureFunc func(ctx context.Context, env *Env) ([]*MeasuredRun, error)

// measureInMem runs a measured lesson's body inside a synctest bubble, the
// way Run runs the lesson (runQ03 and runQ05 only drop the runs), and
// returns the lesson stream's events, its tables and the measured runs.
func measureInMem(t *testing.T, lesson Lesson, f measureFunc) ([]lab.Event, []render.Table, []*MeasuredRun) {
	t.Helper()
	var rec lab.Recorder
	var env *Env
	var runs []*MeasuredRun
	synctest.Test(t, func(t *testing.T) {
		env = &Env{Stream: lab.NewStream(lesson.Slug(), lab.InMem, lab.NewClock(1), &rec), Plan: lab.DefaultPlan()}
		var err error
		runs, err = f(context.Background(), env)
		require.NoError(t, err)
		env.Stream.Finish()
	})
	return rec.Events, env.Tables(), runs
}

// find returns the first event of kind k about task id at attempt n (any
// attempt if n is 0).
func find(t *testing.T, events []lab.Event, k lab.Kind, id string, n int) lab.Event {
	t.Helper()
	for _, e := range events {
		if e.Kind == k && e.Task == id && (n == 0 || e.Attempt == n) {
			return e
		}
	}
	t.Fatalf("no %s event for task %s attempt %d", k, id, n)
	return lab.Event{}
}

// attemptsBy counts the started events per actor for the tasks keep selects.
func attemptsBy(events []lab.Event, keep func(id string) bool) map[string]int {
	n := map[string]int{}
	for _, e := range events {
		if e.Kind == lab.Started && keep(e.Task) {
			n[e.Actor]++
		}
	}
	return n
}

func TestStreamWorkloadIsReproducible(t *testing.T) {
	w := StreamWorkload()
	require.Len(t, w.Plan.Tasks, 200)
	assert.Equal(t, "T001", w.Plan.Tasks[0])
	assert.Equal(t, "T200", w.Plan.Tasks[199])
	assert.Len(t, w.Plan.Poison, 20, "10 % poison")
	assert.Equal(t, w.Plan.Poison, StreamWorkload().Plan.Poison, "the same poison tasks every time")
	for _, id := range w.Plan.Poison {
		assert.Error(t, w.Plan.Fails(id, 1))
		assert.True(t, w.IsPoison(id))
	}
	assert.False(t, w.IsPoison("T000"))
}

func TestPercentileIsNearestRank(t *testing.T) {
	values := []int64{50, 10, 40, 20, 30}
	assert.Equal(t, int64(30), Percentile(values, 50))
	assert.Equal(t, int64(50), Percentile(values, 100))
	assert.Equal(t, int64(10), Percentile(values, 1))
	assert.Equal(t, int64(20), Percentile([]int64{10, 20, 30, 40}, 50))
	assert.Equal(t, int64(-1), Percentile(nil, 50))
	assert.Equal(t, []int64{50, 10, 40, 20, 30}, values, "the input is left unsorted")
}

func TestAttemptSpansPairStartsWithEnds(t *testing.T) {
	events := []lab.Event{
		{Kind: lab.Enqueued, Task: "A", TMs: 0},
		{Kind: lab.Started, Task: "A", Actor: "W", TMs: 10},
		{Kind: lab.Started, Task: "B", Actor: "V", TMs: 15},
		{Kind: lab.Failed, Task: "A", Actor: "W", TMs: 110},
		{Kind: lab.Succeeded, Task: "B", Actor: "V", TMs: 65},
		{Kind: lab.Started, Task: "A", Actor: "W", TMs: 200}, // cut short: no end
		{Kind: lab.Summary, Task: "A", TMs: 999},
	}
	spans := AttemptSpans(events)
	assert.Equal(t, []Span{{"A", "W", 10, 110}, {"B", "V", 15, 65}}, spans)
	assert.Equal(t, int64(150), BusyMs(spans, func(Span) bool { return true }))
	assert.Equal(t, int64(100), BusyMs(spans, func(s Span) bool { return s.Actor == "W" }))
	assert.Equal(t, int64(200), RunMs(events), "first to last event, summaries excluded")
}

func TestFmtMs(t *testing.T) {
	assert.Equal(t, "85 ms", FmtMs(85))
	assert.Equal(t, "4.27 s", FmtMs(4270))
	assert.Equal(t, "-", FmtMs(-1))
}
