package q03

import (
	"slices"
	"testing"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lab/labtest"
	"github.com/queuelab/qlab/lessons/measure"
	"github.com/queuelab/qlab/lessons/measure/measuretest"
	"github.com/queuelab/qlab/lessons/q01"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestQ03BenefitsMeasured(t *testing.T) {
	events, tables, runs := measuretest.InMem(t, Lesson, q03Measure)
	w := measure.StreamWorkload()

	// The lesson's own stream is the short Q02 demo, fully accounted for.
	labtest.AssertAccounted(t, events)
	fate, _ := labtest.Summary(t, events, "C")
	assert.Equal(t, lab.FateDropped, fate)

	require.Len(t, runs, 2)
	fast, retry := runs[0].Events(), runs[1].Events()
	for _, r := range runs {
		t.Run(r.Design, func(t *testing.T) {
			labtest.AssertAccounted(t, r.Events())
			assert.Len(t, r.Stream.Tasks(), len(w.Plan.Tasks), "every task of the workload was created")
			// The tasks arrive as a stream, one every 125 ms.
			assert.Equal(t, int64(125), labtest.Find(t, r.Events(), lab.Enqueued, "T002", 0).TMs-labtest.Find(t, r.Events(), lab.Enqueued, "T001", 0).TMs)
			for _, id := range w.Plan.Tasks {
				if !w.IsPoison(id) {
					fate, _ := labtest.Summary(t, r.Events(), id)
					assert.Equal(t, lab.FateDone, fate, id)
				}
			}
		})
	}

	// Poison: the fast-retry worker tries each one 5 times itself; with a
	// retry queue the main worker meets it once and the Retry-Worker once.
	for _, id := range w.Plan.Poison {
		fate, attempts := labtest.Summary(t, fast, id)
		assert.Equal(t, lab.FatePending, fate, id)
		assert.Equal(t, q01.MaxAttempts, attempts, id)
		fate, attempts = labtest.Summary(t, retry, id)
		assert.Equal(t, lab.FateDropped, fate, id)
		assert.Equal(t, 2, attempts, id)
	}
	poison := len(w.Plan.Poison)
	assert.Equal(t, map[string]int{"Sequential-Worker": poison * q01.MaxAttempts}, measuretest.AttemptsBy(fast, w.IsPoison))
	assert.Equal(t, map[string]int{"Sequential-Worker": poison, "Retry-Worker": poison}, measuretest.AttemptsBy(retry, w.IsPoison))

	// Healthy tasks: with the retry queue even the slowest one finishes
	// sooner than the typical one with fast retry.
	fastTimes, retryTimes := healthyCompletion(fast, w), healthyCompletion(retry, w)
	assert.Less(t, slices.Max(retryTimes), measure.Percentile(fastTimes, 50))

	// The table shows exactly these runs' figures.
	require.Len(t, tables, 1)
	rows := tables[0].Rows
	require.Len(t, rows, 2)
	for i, times := range [][]int64{fastTimes, retryTimes} {
		assert.Equal(t, "180/180", rows[i][1])
		assert.Equal(t, measure.FmtMs(medianLow(times)), rows[i][2], "p50 of %s", rows[i][0])
		assert.Equal(t, measure.FmtMs(slices.Max(times)), rows[i][3], "max of %s", rows[i][0])
	}
	assert.Equal(t, measure.FmtMs(poisonTime(fast, w, "Sequential-Worker")), rows[0][4])
	assert.Equal(t, measure.FmtMs(poisonTime(retry, w, "Sequential-Worker")), rows[1][4])
	assert.Equal(t, measure.FmtMs(poisonTime(retry, w, "Retry-Worker")), rows[1][5])
	assert.Greater(t, poisonTime(fast, w, "Sequential-Worker"), 4*poisonTime(retry, w, "Sequential-Worker"),
		"fast retry costs the main worker five attempts per poison task, the retry queue one")
	assert.Equal(t, []string{"pending", "dropped"}, []string{rows[0][6], rows[1][6]})
	assert.Equal(t, "0 ms", rows[0][5], "fast retry has no retry worker")
}

// healthyCompletion lists succeeded − enqueued for every healthy task, read
// independently of the lesson's own arithmetic.
func healthyCompletion(events []lab.Event, w measure.Workload) []int64 {
	var out []int64
	for _, id := range w.Plan.Tasks {
		if w.IsPoison(id) {
			continue
		}
		var in, done int64 = -1, -1
		for _, e := range events {
			if e.Task != id {
				continue
			}
			if e.Kind == lab.Enqueued && in < 0 {
				in = e.TMs
			}
			if e.Kind == lab.Succeeded {
				done = e.TMs
			}
		}
		out = append(out, done-in)
	}
	return out
}

// medianLow is the lower median: the value with half the values at or
// below it.
func medianLow(values []int64) int64 {
	s := slices.Sorted(slices.Values(values))
	return s[(len(s)-1)/2]
}

// poisonTime sums how long actor's attempts on poison tasks took: from each
// failed event back to the started event of the same attempt.
func poisonTime(events []lab.Event, w measure.Workload, actor string) int64 {
	started := map[[2]any]int64{}
	var total int64
	for _, e := range events {
		if e.Actor != actor || !w.IsPoison(e.Task) {
			continue
		}
		key := [2]any{e.Task, e.Attempt}
		switch e.Kind {
		case lab.Started:
			started[key] = e.TMs
		case lab.Failed:
			total += e.TMs - started[key]
		}
	}
	return total
}
