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

	"github.com/queuelab/qlab/lessons/q01"
	"github.com/queuelab/qlab/lessons/q02"

	"github.com/queuelab/qlab/inmem"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lessons/measure"
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
