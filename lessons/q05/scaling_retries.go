// Package q05 is lesson Q05 — more retries: N chained queues don't scale; one
// delayed retry queue does.
//
// Notice: in the log, C is retried five times from ONE retryQueue, waiting
// 1, 2, 4, 8 and 16 s on a timer in between, and then rests in the
// dead-letter queue instead of being lost. In the table, chained retry
// queues cost a queue and a goroutine per retry, mostly idle; the delayed
// retry queue costs the same three queues and two goroutines for any N.
// The timers live in the process's memory: a crash loses every task
// waiting on one (lesson 10's broker wait queues do not).
package q05

import (
	"context"
	"fmt"
	"time"

	"github.com/queuelab/qlab/lessons/q04"

	"github.com/queuelab/qlab/inmem"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lessons/measure"
)

var Lesson = lesson.Lesson{
	ID:         "Q05",
	WatchSpeed: 1, // a watchable pace in the TUI
	Title:      "N retry queues don't scale; one delayed retry queue does",
	Notice: "C is retried five times from one retryQueue, waiting 1, 2, 4, 8 and 16 s on a timer in " +
		"between, then parked in the dead-letter queue. The table: chaining a queue and a " +
		"goroutine per retry leaves most goroutines idle, while one delayed retry queue needs " +
		"three queues and two goroutines for any number of retries. The waits are time.AfterFunc " +
		"timers in memory: if the process dies, every task waiting on one dies with it.",
	InMem: runQ05,
}

const (
	// q05Retries is how many retries the lesson's own run allows: the delays
	// 1, 2, 4, 8 and 16 s, then the dead-letter queue.
	q05Retries = 5
	// q05MaxDelay caps the backoff once it reaches 16 s.
	q05MaxDelay = 16 * time.Second
	// q05MeasureSpeed is the clock speed of the measured runs, whatever
	// --speed says. Their figures are counts, or averages that timer noise
	// barely moves, so they can run faster than lesson 3's.
	q05MeasureSpeed = 200
)

// q05Sizes are the numbers of retries the table compares.
var q05Sizes = []int{5, 10}

func runQ05(ctx context.Context, env *lesson.Env) error {
	_, err := q05Measure(ctx, env)
	return err
}

// backoff is the wait before retry number n (1-based): 1 s, 2 s, 4 s, 8 s,
// 16 s, and 16 s for every retry after that.
func backoff(n int) time.Duration {
	if n > 5 {
		return q05MaxDelay
	}
	return min(time.Second<<(n-1), q05MaxDelay)
}

// startDelayedRetry starts the scalable design on queue: one retryQueue
// and one deadLetterQueue, each room tasks deep, and two workers, whatever
// the number of retries. The attempt count travels with the task (like a
// retry_count header); after a failure the task waits backoff(n) on a
// timer, which holds no goroutine, and then goes back on the same
// retryQueue. A task that still fails after retries retries is parked in
// the dead-letter queue for a person to look at.
func startDelayedRetry(sys *inmem.System, queue *inmem.Queue, retries, room int) {
	retryQueue := sys.Queue("retryQueue", room)
	dlq := sys.HoldingQueue("deadLetterQueue", room)
	retryLater := func(actor string, from *inmem.Queue, t *inmem.Task, err error) {
		retried := t.Attempt - 1
		if retried >= retries {
			from.DeadLetter(actor, t, dlq, fmt.Sprintf("failed after %d retries: %v", retried, err))
			return
		}
		delay := backoff(retried + 1)
		sys.ScheduleOn(actor, t, from.Name(), retryQueue, delay, func(move func()) *time.Timer {
			return sys.Clock().AfterFunc(delay, move) // no goroutine waits: the timer holds t, then moves it
		})
	}
	worker := func(actor string, q *inmem.Queue) {
		sys.Worker(actor, q, func(t *inmem.Task) {
			if err := sys.Attempt(actor, q, t); err != nil {
				retryLater(actor, q, t, err)
			}
		})
	}
	worker("Sequential-Worker", queue)
	worker("Retry-Worker", retryQueue)
}

// q05Design is one design at one number of retries, with what it cost.
type q05Design struct {
	run        *measure.MeasuredRun
	retries    int
	queues     int
	goroutines int // worker goroutines the design started (System.Workers)
}

// q05Measure starts every design to be measured and counts its queues and
// goroutines, runs the lesson's own demo, then feeds the stream workload
// through each design and reports the table. It returns the measured runs
// for the tests.
func q05Measure(ctx context.Context, env *lesson.Env) ([]*measure.MeasuredRun, error) {
	w := measure.StreamWorkload()
	designs := q05StartDesigns(ctx, env, w)
	defer func() {
		for _, d := range designs {
			d.run.Sys.Stop()
		}
	}()
	runs := make([]*measure.MeasuredRun, len(designs))
	for i, d := range designs {
		runs[i] = d.run
	}
	if err := q05Demo(ctx, env); err != nil {
		return runs, err
	}
	for _, d := range designs {
		if err := d.run.Feed(ctx, w); err != nil {
			return runs, err
		}
	}
	env.Report(q05Table(designs, w))
	return runs, nil
}

// q05StartDesigns builds each design and counts what starting it costs.
// Each design runs in its own System, which counts its worker goroutines
// exactly; runtime.NumGoroutine would count the whole process, whose other
// goroutines (a test runner's, a broker client's) come and go meanwhile.
func q05StartDesigns(ctx context.Context, env *lesson.Env, w measure.Workload) []q05Design {
	speed := float64(q05MeasureSpeed)
	room := len(w.Plan.Tasks)
	var designs []q05Design
	add := func(name string, retries int, start func(*inmem.System, *inmem.Queue)) {
		r := measure.NewRun(ctx, env, name, speed, w)
		start(r.Sys, r.Queue)
		designs = append(designs, q05Design{run: r, retries: retries, queues: len(r.Sys.QueueNames()), goroutines: r.Sys.Workers()})
	}
	for _, n := range q05Sizes {
		add("chained retry queues", n, func(sys *inmem.System, q *inmem.Queue) { q04.StartRetryChain(sys, q, n, room) })
	}
	for _, n := range q05Sizes {
		add("one delayed retry queue + DLQ", n, func(sys *inmem.System, q *inmem.Queue) { startDelayedRetry(sys, q, n, room) })
	}
	return designs
}

// q05Demo runs the delayed-retry design on the lesson's own plan.
func q05Demo(ctx context.Context, env *lesson.Env) error {
	sys, queue, room := lesson.PlanQueue(ctx, env)
	startDelayedRetry(sys, queue, q05Retries, room)
	return sys.Wait(ctx)
}
