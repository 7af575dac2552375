// Package q03 is lesson Q03 — the benefits of a retry queue, measured.
//
// Notice: the log is the Q02 design on A–D again; the table is the point.
// The same 200-task stream with 10 % poison runs through three designs that
// all give a task the same budget, 2 attempts: fast retry with one worker
// (lesson 1), fast retry with two workers on the one queue, and the retry
// queue (lesson 2), whose two workers are one per queue. The second worker
// is what cuts the healthy tasks' wait; rows 2 and 3 differ only in the
// quarantine, and with 2 attempts it gains the healthy tasks nothing. The
// second table gives every design 10 attempts: now the poison retries
// swamp two workers sharing one queue, and the quarantine pays.
package q03

import (
	"context"
	"fmt"
	"math"
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
	Notice: "The log is lesson 2 on A–D again; the table is the point: 200 tasks, 10 % poison, " +
		"through fast retry with 1 and with 2 workers and the retry queue, each with a budget of " +
		"2 attempts a task. The second worker is what shortens the healthy tasks' wait, and the " +
		"quarantine alone gains them nothing. With 10 attempts (the second table) the poison " +
		"retries swamp two workers sharing one queue, while the retry queue keeps the healthy " +
		"tasks' p50 and max where they were.",
	InMem: runQ03,
}

// q03Attempts is every design's attempt budget in the first table: a
// first try and one retry, what the Q02 design allows. Equal budgets keep
// "more tries" out of the comparison.
const q03Attempts = 2

// q03ManyAttempts is the second table's budget, where the quarantine pays:
// with 10 attempts the poison tasks' retries alone need more than one
// worker (20 tasks × 9 retries × 100 ms in a 25 s stream), so two workers
// sharing one queue are swamped, while the retry queue's main worker meets
// each poison task once.
const q03ManyAttempts = 10

// q03Budgets are the attempt budgets the tables compare, in order.
var q03Budgets = []int{q03Attempts, q03ManyAttempts}

// q03MeasureSpeed is the clock speed of the measured runs, whatever
// --speed says: fast enough that a live run waits about 4 s for them.
// Under testing/synctest the figures are exact at any speed; live, the
// table's last note prints how far timer noise pushed this run.
const q03MeasureSpeed = 20

// q03Design is one design the table compares.
type q03Design struct {
	name  string
	start func(sys *inmem.System, queue *inmem.Queue, room, attempts int)
}

// q03Designs are the rows of the table, in order.
var q03Designs = []q03Design{
	{"fast retry, 1 worker (Q01)", func(sys *inmem.System, queue *inmem.Queue, _, attempts int) { startFastRetry(sys, queue, 1, attempts) }},
	{"fast retry, 2 workers", func(sys *inmem.System, queue *inmem.Queue, _, attempts int) { startFastRetry(sys, queue, 2, attempts) }},
	{"retry queue (Q02)", q02.StartRetryQueueN},
}

// startFastRetry runs the Q01 design with workers goroutines on queue and
// the table's attempt budget: after attempts the task is dropped, as the
// Q02 design drops it.
func startFastRetry(sys *inmem.System, queue *inmem.Queue, workers, attempts int) {
	for i := range workers {
		q01.StartFastRetry(sys, queue, lesson.WorkerName("Sequential-Worker", i, workers), attempts, func(actor string, t *inmem.Task) {
			sys.Drop(actor, t, queue.Name(), "no retries left")
		})
	}
}

func runQ03(ctx context.Context, env *lesson.Env) error {
	_, err := q03Measure(ctx, env)
	return err
}

// q03Measure shows the Q02 design on the lesson's plan, then measures every
// design on the stream workload, once per attempt budget, and reports a
// table per budget. It returns the measured runs, budget by budget in
// q03Designs order, for the tests.
func q03Measure(ctx context.Context, env *lesson.Env) ([]*measure.MeasuredRun, error) {
	if err := q02.Lesson.InMem(ctx, env); err != nil {
		return nil, err
	}
	w := measure.StreamWorkload()
	speed := float64(q03MeasureSpeed)
	var all []*measure.MeasuredRun
	defer func() {
		for _, r := range all {
			r.Sys.Stop() // a no-op for runs fed to the end
		}
	}()
	for _, attempts := range q03Budgets {
		var runs []*measure.MeasuredRun
		var workers []int // goroutines each design started, counted by its System
		for _, d := range q03Designs {
			r := measure.NewRun(ctx, env, d.name, speed, w)
			d.start(r.Sys, r.Queue, len(w.Plan.Tasks), attempts)
			runs, workers = append(runs, r), append(workers, r.Sys.Workers())
			all = append(all, r)
		}
		for _, r := range runs {
			if err := r.Feed(ctx, w); err != nil {
				return all, err
			}
		}
		env.Report(q03Table(runs, workers, w, speed, attempts))
	}
	return all, nil
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
