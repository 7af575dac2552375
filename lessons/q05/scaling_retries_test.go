package q05

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lab/labtest"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lesson/lessontest"
	"github.com/queuelab/qlab/lessons/measure"
	"github.com/queuelab/qlab/lessons/measure/measuretest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestQ05DelayedRetryQueue(t *testing.T) {
	events, _ := lessontest.RunInMem(t, Lesson, lesson.Options{})

	fate, attempts := labtest.Summary(t, events, "C")
	assert.Equal(t, lab.FateDead, fate, "parked in the DLQ, not lost")
	assert.Equal(t, 1+q05Retries, attempts)
	for _, id := range []string{"A", "B", "D"} {
		fate, attempts := labtest.Summary(t, events, id)
		assert.Equal(t, lab.FateDone, fate, id)
		assert.Equal(t, 1, attempts, id)
	}
	assert.Equal(t, int64(400), labtest.Find(t, events, lab.Succeeded, "D", 1).TMs, "D is not held up while C waits")

	// Every retry goes back on the same retryQueue after a doubling delay,
	// and starts exactly that long after the failure before it.
	var delays []int64
	for n := 1; n <= q05Retries; n++ {
		s := labtest.Find(t, events, lab.Scheduled, "C", n)
		assert.Equal(t, "retryQueue", s.To, "retry %d", n)
		assert.Equal(t, labtest.Find(t, events, lab.Failed, "C", n).TMs, s.TMs)
		retry := labtest.Find(t, events, lab.Started, "C", n+1)
		assert.Equal(t, "Retry-Worker", retry.Actor)
		assert.Equal(t, "retryQueue", retry.Queue)
		assert.Equal(t, s.TMs+s.DelayMs, retry.TMs, "retry %d starts when its timer fires", n)
		delays = append(delays, s.DelayMs)
	}
	assert.Equal(t, []int64{1000, 2000, 4000, 8000, 16000}, delays)

	dead := labtest.Find(t, events, lab.DeadLettered, "C", 1+q05Retries)
	assert.Equal(t, "deadLetterQueue", dead.To)
	assert.Equal(t, "Retry-Worker", dead.Actor)
	assert.Equal(t, int64(31800), dead.TMs, "0.3 s to C's first failure, 31 s of waits, five 100 ms retries")
}

func TestBackoffDoublesThenStops(t *testing.T) {
	var got []time.Duration
	for n := 1; n <= 8; n++ {
		got = append(got, backoff(n))
	}
	s := time.Second
	assert.Equal(t, []time.Duration{s, 2 * s, 4 * s, 8 * s, 16 * s, 16 * s, 16 * s, 16 * s}, got)
	assert.Equal(t, 16*s, backoff(100), "no overflow for a large retry count")
}

func TestQ05ScalingMeasured(t *testing.T) {
	_, tables, runs := measuretest.InMem(t, Lesson, q05Measure)
	w := measure.StreamWorkload()
	require.Len(t, runs, 2*len(q05Sizes))
	for _, r := range runs {
		t.Run(r.Design, func(t *testing.T) {
			labtest.AssertAccounted(t, r.Events())
			assert.Len(t, r.Stream.Tasks(), len(w.Plan.Tasks))
		})
	}

	require.Len(t, tables, 1)
	rows := tables[0].Rows
	require.Len(t, rows, len(runs))
	cell := func(row, col int) int {
		n, err := strconv.Atoi(rows[row][col])
		require.NoError(t, err)
		return n
	}
	idle := func(row int) float64 {
		f, err := strconv.ParseFloat(rows[row][4], 64)
		require.NoError(t, err)
		return f
	}
	for i, n := range q05Sizes {
		chained, delayed := i, len(q05Sizes)+i
		assert.Equal(t, fmt.Sprint(n), rows[chained][1])
		assert.Equal(t, n+1, cell(chained, 2), "chained: the main queue and one queue per retry")
		assert.Equal(t, n+1, cell(chained, 3), "chained: one worker goroutine per queue")
		assert.Equal(t, 3, cell(delayed, 2), "delayed: queue, retryQueue, deadLetterQueue for any N")
		assert.Equal(t, 2, cell(delayed, 3), "delayed: two workers for any N; waiting retries are timers")
		assert.Greater(t, idle(chained), idle(delayed), "N=%d", n)
		assert.Less(t, idle(delayed), 2.0)

		for _, id := range w.Plan.Poison {
			fate, attempts := labtest.Summary(t, runs[chained].Events(), id)
			assert.Equal(t, lab.FateDropped, fate, id)
			assert.Equal(t, n+1, attempts, id)
			fate, attempts = labtest.Summary(t, runs[delayed].Events(), id)
			assert.Equal(t, lab.FateDead, fate, id)
			assert.Equal(t, n+1, attempts, id)
		}
		assert.Equal(t, "dropped", rows[chained][5])
		assert.Equal(t, "dead", rows[delayed][5])
	}
	assert.Greater(t, idle(1), idle(0), "more chained retries, more idle goroutines")
}

// The notice says what the timers cost: they die with the process (issue 20).
func TestQ05NoticeSaysTheTimersDieWithTheProcess(t *testing.T) {
	assert.Contains(t, Lesson.Notice, "if the process dies, every task waiting on one dies with it")
}
