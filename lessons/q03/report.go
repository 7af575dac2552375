package q03

import (
	"fmt"
	"math"
	"strings"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lessons/measure"
	"github.com/queuelab/qlab/render"
)

// q03Row is what one design did to the workload, read from its events.
type q03Row struct {
	healthyDone             int
	p50, maxMs              int64 // healthy completion time: succeeded − enqueued
	mainPoison, retryPoison int64 // worker time on poison tasks, ms
	poisonEnds              []string
}

// q03Figures reads run r's events back into one table row.
func q03Figures(r *measure.MeasuredRun, w measure.Workload) q03Row {
	var row q03Row
	enqueued := map[string]int64{}
	var completion []int64
	for _, e := range r.Events() {
		switch {
		case e.Kind == lab.Enqueued:
			enqueued[e.Task] = e.TMs
		case e.Kind == lab.Succeeded && !w.IsPoison(e.Task):
			completion = append(completion, e.TMs-enqueued[e.Task])
		}
	}
	row.healthyDone = len(completion)
	row.p50, row.maxMs = measure.Percentile(completion, 50), measure.Percentile(completion, 100)
	spans := measure.AttemptSpans(r.Events())
	row.mainPoison = measure.BusyMs(spans, func(s measure.Span) bool {
		return w.IsPoison(s.Task) && strings.HasPrefix(s.Actor, "Sequential-Worker")
	})
	row.retryPoison = measure.BusyMs(spans, func(s measure.Span) bool { return w.IsPoison(s.Task) && s.Actor == "Retry-Worker" })
	row.poisonEnds = measure.FatesOf(r.Events(), w.IsPoison)
	return row
}

func q03Table(runs []*measure.MeasuredRun, workers []int, w measure.Workload, speed float64, attempts int) render.Table {
	t := render.Table{
		Title:  fmt.Sprintf("Healthy tasks in a steady stream, %d attempts per task (measured)", attempts),
		Header: []string{"design", "workers", "attempts", "healthy done", "healthy p50", "healthy max", "main queue on poison", "retry queue on poison", "poison ends"},
	}
	healthy := len(w.Plan.Tasks) - len(w.Plan.Poison)
	rows := make([]q03Row, len(runs))
	for i, r := range runs {
		rows[i] = q03Figures(r, w)
		t.Rows = append(t.Rows, []string{
			r.Design, fmt.Sprint(workers[i]), fmt.Sprint(attempts),
			measure.FmtCount(rows[i].healthyDone, healthy), measure.FmtMs(rows[i].p50), measure.FmtMs(rows[i].maxMs),
			measure.FmtMs(rows[i].mainPoison), measure.FmtMs(rows[i].retryPoison), strings.Join(rows[i].poisonEnds, ", "),
		})
	}
	t.Notes = []string{
		"Workload: " + w.String(),
		"healthy p50/max: completion time (succeeded − enqueued) of the healthy tasks.",
		"main/retry queue on poison: lesson time the workers of queue / retryQueue spent on attempts of poison tasks.",
		fmt.Sprintf("Every design tries a task at most %d times, then drops it (lesson 1's own run loops 5 times; its design never stops).", attempts),
		q03QuarantineNote(rows[1], rows[2], attempts),
		"Measured on separate runs of the same code, their clock at " + fmt.Sprint(speed) + "× whatever --speed says. " + q03NoiseNote(runs, w),
	}
	return t
}

// q03QuarantineNote compares fast retry with 2 workers against the retry
// queue: the same workers and attempts, so what differs is the quarantine.
func q03QuarantineNote(pooled, quarantined q03Row, attempts int) string {
	verdict := "sharing one queue does as well or better: the retries are too few to matter"
	if quarantined.p50 < pooled.p50 && quarantined.maxMs < pooled.maxMs {
		verdict = "the quarantine pays: the retries no longer take the healthy tasks' turn"
	}
	return fmt.Sprintf("Quarantine alone (2 workers and %d attempts both): healthy p50 %s → %s, max %s → %s with the retry queue: %s.",
		attempts, measure.FmtMs(pooled.p50), measure.FmtMs(quarantined.p50), measure.FmtMs(pooled.maxMs), measure.FmtMs(quarantined.maxMs), verdict)
}

// q03NoiseNote says how far this run's timers overran the plan: the mean
// of (attempt's measured length − its planned work time, rounded up to the
// ms), never below 0. Under testing/synctest it is exactly 0.
func q03NoiseNote(runs []*measure.MeasuredRun, w measure.Workload) string {
	var over, planned int64
	var n int
	for _, r := range runs {
		for _, a := range measure.AttemptLengths(r.Events()) {
			plan := int64(math.Ceil(float64(w.Plan.WorkTime(a.Task, a.Attempt).Microseconds()) / 1000))
			over += max(a.Ms-plan, 0)
			planned += plan
			n++
		}
	}
	if over == 0 {
		return "Timers ran exactly to plan (as under go test): the figures are exact."
	}
	return fmt.Sprintf("Live timer noise: attempts overran their planned work by %.1f ms on average (+%.0f %%); queueing adds each overrun to the wait of every task behind it, so live p50/max read higher than the exact figures (go test, testdata/golden/q03.inmem.log) by more than that.",
		float64(over)/float64(n), 100*float64(over)/float64(planned))
}
