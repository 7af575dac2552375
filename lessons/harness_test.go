package lessons

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/render"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden transcripts in testdata/golden")

// runInMem runs lesson l on the in-memory backend inside a synctest
// bubble (fake, instant, deterministic time) and returns its events.
func runInMem(t *testing.T, l Lesson, opts Options) ([]lab.Event, Result) {
	t.Helper()
	var rec lab.Recorder
	var res Result
	opts.Backend = lab.InMem
	synctest.Test(t, func(t *testing.T) {
		var err error
		res, err = Run(context.Background(), l, opts, &rec)
		require.NoError(t, err)
	})
	return rec.Events, res
}

// goldenPath is where lesson l's in-memory transcript lives.
func goldenPath(l Lesson) string {
	return filepath.Join("..", "testdata", "golden", l.Slug()+".inmem.log")
}

// TestGolden compares every in-memory lesson's transcript and Mermaid
// diagram with their golden files (testdata/golden/qNN.inmem.log and .mmd);
// `go test ./lessons -run Golden -update` rewrites them.
func TestGolden(t *testing.T) {
	for _, l := range All {
		if l.InMem == nil {
			continue
		}
		t.Run(l.ID, func(t *testing.T) {
			events, res := runInMem(t, l, Options{})
			var log, diagram bytes.Buffer
			render.Transcript(&log, events, res.Tables)
			render.Mermaid(&diagram, events)
			assertGolden(t, goldenPath(l), log.String())
			assertGolden(t, strings.TrimSuffix(goldenPath(l), ".log")+".mmd", diagram.String())
		})
	}
}

// assertGolden compares got with the file at path (rewriting it first
// with -update).
func assertGolden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "no golden file: run go test ./lessons -run Golden -update")
	assert.Equal(t, string(want), got, "golden %s differs", path)
}

// TestEveryTaskAccountedFor checks the invariant of every run, for every
// lesson on every backend it has (RabbitMQ on the real broker): each task
// created gets exactly one summary, the summaries close the stream, and each
// summary's fate and attempts agree with the events before it.
func TestEveryTaskAccountedFor(t *testing.T) {
	runOn := map[lab.Backend]func(*testing.T, Lesson, Options) ([]lab.Event, Result){
		lab.InMem:  runInMem,
		lab.Rabbit: runRabbit,
	}
	plans := map[string]*lab.Plan{"default": nil, "seeded": seededPlan(7)}
	for _, l := range All {
		for _, b := range l.Backends() {
			for name, plan := range plans {
				t.Run(l.ID+"/"+string(b)+"/"+name, func(t *testing.T) {
					events, _ := runOn[b](t, l, Options{Plan: plan})
					assertAccounted(t, events)
				})
			}
		}
	}
}

func seededPlan(seed int64) *lab.Plan {
	p := lab.DefaultPlan()
	p.Seed, p.FailRate = seed, 0.3
	return &p
}

// assertAccounted re-derives every task's fate from the raw events, by a
// deliberately separate reading of the rules from lab.Ledger, and compares.
func assertAccounted(t *testing.T, events []lab.Event) {
	t.Helper()
	created := map[string]bool{}
	var order []string
	attempts := map[string]int{}
	fate := map[string]lab.Fate{}
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
		if e.Kind == lab.Enqueued && !created[e.Task] {
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
			fate[e.Task] = lab.FateDead
		case lab.Dropped:
			fate[e.Task] = lab.FateDropped
		case lab.Lost:
			fate[e.Task] = lab.FateLost
		case lab.Enqueued, lab.Moved, lab.Scheduled, lab.Redelivered:
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

// summaryOf returns the fate and attempts the run's summary gives task id.
func summaryOf(t *testing.T, events []lab.Event, id string) (lab.Fate, int) {
	t.Helper()
	for _, e := range events {
		if e.Kind == lab.Summary && e.Task == id {
			return e.Fate, e.Attempt
		}
	}
	t.Fatalf("no summary for task %s", id)
	return "", 0
}

// kinds returns, in order, the kinds of the events about task id.
func kinds(events []lab.Event, id string) []lab.Kind {
	var out []lab.Kind
	for _, e := range events {
		if e.Task == id && e.Kind != lab.Summary {
			out = append(out, e.Kind)
		}
	}
	return out
}

// firstAt returns the lesson time of the first event of kind k about task id.
func firstAt(t *testing.T, events []lab.Event, k lab.Kind, id string) int64 {
	t.Helper()
	for _, e := range events {
		if e.Kind == k && e.Task == id {
			return e.TMs
		}
	}
	t.Fatalf("no %s event for task %s", k, id)
	return 0
}
