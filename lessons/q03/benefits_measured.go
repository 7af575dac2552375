// Package q03 is lesson Q03 — the benefits of a retry queue, measured.
//
// Notice: the log is the Q02 design on A–D again; the table is the point.
// The same 200-task stream with 10 % poison runs through the Q01 design
// (fast retry) and the Q02 design (retry queue): with fast retry the main
// worker spends its time on poison and healthy tasks wait; with a retry
// queue they flow at the arrival rate.
package q03

import (
	"context"
	"strings"

	"github.com/queuelab/qlab/lessons/q01"
	"github.com/queuelab/qlab/lessons/q02"

	"github.com/queuelab/qlab/inmem"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lessons/measure"
	"github.com/queuelab/qlab/render"
)

var Lesson = lesson.Lesson{
	ID:    "Q03",
	Title: "Benefits of the retry queue, measured",
	Notice: "The same stream of 200 tasks, 10 % poison, runs through the fast-retry design of lesson 1 and the retry-queue design of lesson 2. " +
		"With fast retry the Sequential-Worker spends its time on poison and healthy tasks queue up behind it; with a retry queue the main worker meets each poison task once and healthy tasks finish at the pace they arrive.",
	InMem: runQ03,
}

// q03MeasureSpeed is the clock speed of the measured runs, whatever
// --speed says: fast enough that a live run waits about 3 s for them, slow
// enough that timer noise adds only about 10 % to the figures. Under
// testing/synctest the figures are exact at any speed.
const q03MeasureSpeed = 20

func runQ03(ctx context.Context, env *lesson.Env) error {
	_, err := q03Measure(ctx, env)
	return err
}

// q03Measure shows the Q02 design on the lesson's plan, then measures both
// designs on the stream workload and reports the table. It returns the
// measured runs for the tests.
func q03Measure(ctx context.Context, env *lesson.Env) ([]*measure.MeasuredRun, error) {
	if err := q02.Lesson.InMem(ctx, env); err != nil {
		return nil, err
	}
	w := measure.StreamWorkload()
	speed := float64(q03MeasureSpeed)
	fast := measure.NewRun(ctx, env, "Q01 fast retry", speed, w)
	q01.StartFastRetry(fast.Sys, fast.Queue, func(*inmem.Task) {})
	retry := measure.NewRun(ctx, env, "Q02 retry queue", speed, w)
	q02.StartRetryQueue(retry.Sys, retry.Queue, len(w.Plan.Tasks))
	runs := []*measure.MeasuredRun{fast, retry}
	defer func() {
		for _, r := range runs {
			r.Sys.Stop() // a no-op for runs fed to the end
		}
	}()
	for _, r := range runs {
		if err := r.Feed(ctx, w); err != nil {
			return runs, err
		}
	}
	env.Report(q03Table(runs, w, speed))
	return runs, nil
}

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
	row.mainPoison = measure.BusyMs(spans, func(s measure.Span) bool { return w.IsPoison(s.Task) && s.Actor == "Sequential-Worker" })
	row.retryPoison = measure.BusyMs(spans, func(s measure.Span) bool { return w.IsPoison(s.Task) && s.Actor == "Retry-Worker" })
	row.poisonEnds = measure.FatesOf(r.Events(), w.IsPoison)
	return row
}

func q03Table(runs []*measure.MeasuredRun, w measure.Workload, speed float64) render.Table {
	t := render.Table{
		Title:  "Healthy tasks in a steady stream (measured)",
		Header: []string{"design", "healthy done", "healthy p50", "healthy max", "main on poison", "retry on poison", "poison ends"},
	}
	healthy := len(w.Plan.Tasks) - len(w.Plan.Poison)
	for _, r := range runs {
		row := q03Figures(r, w)
		t.Rows = append(t.Rows, []string{
			r.Design, measure.FmtCount(row.healthyDone, healthy), measure.FmtMs(row.p50), measure.FmtMs(row.maxMs),
			measure.FmtMs(row.mainPoison), measure.FmtMs(row.retryPoison), strings.Join(row.poisonEnds, ", "),
		})
	}
	t.Notes = []string{
		"Workload: " + w.String(),
		"healthy p50/max: completion time (succeeded − enqueued) of the healthy tasks.",
		"main/retry on poison: lesson time the Sequential-Worker / Retry-Worker spent on attempts of poison tasks.",
		"Q01 stops looping a poison task after 5 attempts (the design never would): it ends pending. Q02 retries once, then drops it.",
		"Measured on separate runs of the same code" + measure.SpeedNote(speed),
	}
	return t
}
