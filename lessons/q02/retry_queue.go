// Package q02 is lesson Q02 — a retry queue and a Retry-Worker.
//
// Notice: when C fails, the Sequential-Worker moves it to retryQueue and
// starts D at once; a second goroutine, the Retry-Worker, retries C in
// parallel. When that retry fails as well, C is dropped: discarded on
// purpose, and the dropped line in the log is all that is left of it.
package q02

import (
	"context"

	"github.com/queuelab/qlab/inmem"
	"github.com/queuelab/qlab/lesson"
)

var Lesson = lesson.Lesson{
	ID:    "Q02",
	Title: "Retry queue and a Retry-Worker",
	Notice: "When C fails, the Sequential-Worker moves it to retryQueue and starts D at once, while a second goroutine, the Retry-Worker, tries C again. " +
		"When that retry fails too, C is dropped: discarded on purpose, no copy kept, and the dropped line in the log is its only trace.",
	InMem:  runQ02,
	Scales: true,
}

func runQ02(ctx context.Context, env *lesson.Env) error {
	sys, queue, room := lesson.PlanQueue(ctx, env)
	StartRetryQueue(sys, queue, room)
	return sys.Wait(ctx)
}

// StartRetryQueue starts the Q02 design on queue: the Sequential-Worker
// hands a failed task to a second queue, retryQueue (room tasks deep), and
// goes on with the next task; the Retry-Worker gives each task there one
// more attempt and drops it if that fails too.
func StartRetryQueue(sys *inmem.System, queue *inmem.Queue, room int) {
	StartRetryQueueN(sys, queue, room, 2)
}

// StartRetryQueueN is the Q02 design with a budget of attempts per task
// (at least 2): the Retry-Worker puts a failed task back at the tail of
// retryQueue until the task has had them all, then drops it. The main
// queue meets every task once.
func StartRetryQueueN(sys *inmem.System, queue *inmem.Queue, room, attempts int) {
	retryQueue := sys.Queue("retryQueue", room)
	// Each worker is Q01's goroutine receiving from its own channel.
	sys.Worker("Sequential-Worker", queue, func(t *inmem.Task) {
		if sys.Attempt("Sequential-Worker", queue, t) != nil {
			queue.MoveTo("Sequential-Worker", t, retryQueue) // retryQueue <- t, and on to D at once
		}
	})
	sys.Worker("Retry-Worker", retryQueue, func(t *inmem.Task) { // a second goroutine: C's retry runs beside D
		err := sys.Attempt("Retry-Worker", retryQueue, t)
		switch {
		case err == nil:
		case t.Attempt < attempts:
			retryQueue.Requeue("Retry-Worker", t) // retryQueue <- t: the main queue never sees it again
		default:
			sys.Drop("Retry-Worker", t, retryQueue.Name(), "no retries left: "+err.Error())
		}
	})
}
