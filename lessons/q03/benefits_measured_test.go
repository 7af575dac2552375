package q03

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lab/labtest"
	"github.com/queuelab/qlab/lessons/measure"
	"github.com/queuelab/qlab/lessons/measure/measuretest"
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

	require.Len(t, runs, 3*len(q03Budgets))
	many := runs[3:]
	runs = runs[:3]
	for _, r := range runs {
		t.Run(r.Design, func(t *testing.T) {
			labtest.AssertAccounted(t, r.Events())
			assert.Len(t, r.Stream.Tasks(), len(w.Plan.Tasks), "every task of the workload was created")
			// The tasks arrive as a stream, one every 125 ms.
			assert.Equal(t, int64(125), labtest.Find(t, r.Events(), lab.Enqueued, "T002", 0).TMs-labtest.Find(t, r.Events(), lab.Enqueued, "T001", 0).TMs)
			for _, id := range w.Plan.Tasks {
				fate, attempts := labtest.Summary(t, r.Events(), id)
				if w.IsPoison(id) {
					// The same budget everywhere: two attempts, then dropped.
					assert.Equal(t, lab.FateDropped, fate, id)
					assert.Equal(t, q03Attempts, attempts, id)
				} else {
					assert.Equal(t, lab.FateDone, fate, id)
				}
			}
		})
	}
	fast1, fast2, retry := runs[0].Events(), runs[1].Events(), runs[2].Events()

	// Who made the poison attempts: one worker, two workers sharing the
	// main queue, or the main worker once and the Retry-Worker once.
	poison := len(w.Plan.Poison)
	assert.Equal(t, map[string]int{"Sequential-Worker": 2 * poison}, measuretest.AttemptsBy(fast1, w.IsPoison))
	shared := measuretest.AttemptsBy(fast2, w.IsPoison)
	assert.Len(t, shared, 2)
	assert.Equal(t, 2*poison, shared["Sequential-Worker-1"]+shared["Sequential-Worker-2"])
	assert.Equal(t, map[string]int{"Sequential-Worker": poison, "Retry-Worker": poison}, measuretest.AttemptsBy(retry, w.IsPoison))

	// The table shows exactly these runs' figures, with each design's
	// workers (the goroutines that made its attempts) and attempt budget.
	require.Len(t, tables, 2)
	rows := tables[0].Rows
	require.Len(t, rows, 3)
	times := make([][]int64, len(runs))
	for i, r := range runs {
		times[i] = healthyCompletion(r.Events(), w)
		assert.Equal(t, fmt.Sprint(len(measuretest.AttemptsBy(r.Events(), func(string) bool { return true }))), rows[i][1], "workers of %s", r.Design)
		assert.Equal(t, "2", rows[i][2], "attempts of %s", r.Design)
		assert.Equal(t, "180/180", rows[i][3])
		assert.Equal(t, measure.FmtMs(medianLow(times[i])), rows[i][4], "p50 of %s", r.Design)
		assert.Equal(t, measure.FmtMs(slices.Max(times[i])), rows[i][5], "max of %s", r.Design)
		assert.Equal(t, "dropped", rows[i][8])
	}
	assert.Equal(t, []string{"1", "2", "2"}, []string{rows[0][1], rows[1][1], rows[2][1]})
	assert.Equal(t, measure.FmtMs(poisonTime(fast1, w, "Sequential-Worker")), rows[0][6])
	assert.Equal(t, measure.FmtMs(poisonTime(fast2, w, "Sequential-Worker-1")+poisonTime(fast2, w, "Sequential-Worker-2")), rows[1][6])
	assert.Equal(t, measure.FmtMs(poisonTime(retry, w, "Sequential-Worker")), rows[2][6])
	assert.Equal(t, measure.FmtMs(poisonTime(retry, w, "Retry-Worker")), rows[2][7])
	assert.Equal(t, "0 ms", rows[0][7], "fast retry has no retry queue")

	// A second worker is what shortens the wait; with the same two workers
	// and attempts, the quarantine alone does not beat sharing one queue.
	assert.Less(t, medianLow(times[1]), medianLow(times[0]))
	assert.Less(t, medianLow(times[2]), medianLow(times[0]))
	assert.LessOrEqual(t, medianLow(times[1]), medianLow(times[2]))
	notes := strings.Join(tables[0].Notes, "\n")
	assert.Contains(t, notes, fmt.Sprintf("Quarantine alone (2 workers and 2 attempts both): healthy p50 %s → %s, max %s → %s",
		rows[1][4], rows[2][4], rows[1][5], rows[2][5]))
	// Under synctest the timers run exactly to plan, and the note says so.
	assert.Contains(t, notes, "Timers ran exactly to plan")

	// With 10 attempts the quarantine pays: the main queue meets each
	// poison task once, and the healthy tasks finish sooner than with two
	// workers sharing one queue, both at the median and at the worst.
	for _, r := range many {
		for _, id := range w.Plan.Poison {
			_, attempts := labtest.Summary(t, r.Events(), id)
			assert.Equal(t, q03ManyAttempts, attempts, "%s: %s", r.Design, id)
		}
	}
	assert.Equal(t, poison, measuretest.AttemptsBy(many[2].Events(), w.IsPoison)["Sequential-Worker"], "the main queue meets each poison task once")
	pooled, quarantined := healthyCompletion(many[1].Events(), w), healthyCompletion(many[2].Events(), w)
	assert.Less(t, medianLow(quarantined), medianLow(pooled))
	assert.Less(t, slices.Max(quarantined), slices.Max(pooled))
	assert.Contains(t, strings.Join(tables[1].Notes, "\n"), "the quarantine pays")
	assert.Contains(t, tables[1].Title, "10 attempts per task")
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
