// Package q04 is lesson Q04 — a second retry queue and its worker.
//
// Notice: C now travels main queue → retryQueue → secondRetryQueue, one
// worker goroutine per queue, and is dropped only after the
// Second-Retry-Worker's attempt fails. Meanwhile D is done on time. Each
// extra retry costs one more queue and one more goroutine.
package q04

import (
	"context"
	"fmt"

	"github.com/queuelab/qlab/inmem"
	"github.com/queuelab/qlab/lesson"
)

var Lesson = lesson.Lesson{
	ID:    "Q04",
	Title: "A second retry queue and worker",
	Notice: "C travels queue → retryQueue → secondRetryQueue, with one worker goroutine per queue, and is dropped (discarded on purpose) only when the Second-Retry-Worker's attempt fails too. " +
		"D is not held up, but every extra retry costs one more queue and one more goroutine.",
	InMem:  runQ04,
	Scales: true,
}

func runQ04(ctx context.Context, env *lesson.Env) error {
	sys, queue, room := lesson.PlanQueue(ctx, env)
	StartRetryChain(sys, queue, 2, room)
	return sys.Wait(ctx)
}

// StartRetryChain starts the chained design with levels retry queues after
// queue, each room tasks deep and each with its own worker goroutine. A
// worker that fails a task moves it one queue down the chain; the worker
// of the last queue drops it. With levels = 1 this is the Q02 design.
func StartRetryChain(sys *inmem.System, queue *inmem.Queue, levels, room int) {
	from, actor := queue, "Sequential-Worker"
	for level := 1; level <= levels; level++ {
		name, next := retryLevel(level)
		to := sys.Queue(name, room)
		startMoveOnFailure(sys, actor, from, to)
		from, actor = to, next
	}
	startDropOnFailure(sys, actor, from)
}

// startMoveOnFailure starts worker actor on from, a goroutine of its own
// (Q01's loop); a task that fails there moves on to queue to.
func startMoveOnFailure(sys *inmem.System, actor string, from, to *inmem.Queue) {
	sys.Worker(actor, from, func(t *inmem.Task) {
		if sys.Attempt(actor, from, t) != nil {
			from.MoveTo(actor, t, to) // to <- t: one more queue, one more goroutine
		}
	})
}

// startDropOnFailure starts worker actor on the last queue of a chain; a
// task that fails there is dropped.
func startDropOnFailure(sys *inmem.System, actor string, last *inmem.Queue) {
	sys.Worker(actor, last, func(t *inmem.Task) {
		if err := sys.Attempt(actor, last, t); err != nil {
			sys.Drop(actor, t, last.Name(), "permanently failed: "+err.Error())
		}
	})
}

// retryLevel names the queue and the worker of retry level n (1-based):
// retryQueue and Retry-Worker, secondRetryQueue and Second-Retry-Worker,
// then retry3Queue and Retry-3-Worker and so on.
func retryLevel(n int) (queue, worker string) {
	switch n {
	case 1:
		return "retryQueue", "Retry-Worker"
	case 2:
		return "secondRetryQueue", "Second-Retry-Worker"
	}
	return fmt.Sprintf("retry%dQueue", n), fmt.Sprintf("Retry-%d-Worker", n)
}
