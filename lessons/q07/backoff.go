// Package q07 is lesson Q07 — exponential backoff.
//
// Notice: a failed task no longer goes straight to the next queue. It waits
// on a timer (time.AfterFunc, below in retryAfter) 1 s before the retry
// queue and 2 s before the second retry queue: the delay doubles with every
// failed attempt, and the stamps show the gaps. A struggling downstream
// service gets time to recover between tries: the closing table runs A–D
// against a service that is down for 2.5 s, with and without the waits.
//
// Why the chain again? Lesson 5 already showed one delayed retry queue
// with a dead-letter queue beating a chain of queues. The seed's own order
// (seed 001, Q7 then Q8) adds the delays to the Q4 chain first and the DLQ
// one step later; the lab follows that order, so C is still dropped here,
// as in Q04, and lesson 8 parks it in a dead-letter queue instead.
package q07

import (
	"context"
	"time"

	"github.com/queuelab/qlab/inmem"
	"github.com/queuelab/qlab/lesson"
)

var Lesson = lesson.Lesson{
	ID:    "Q07",
	Title: "Exponential backoff: wait 1 s, then 2 s",
	Notice: "A failed task waits on a timer (time.AfterFunc) before its next try, 1 s before the " +
		"retry queue and 2 s before the second: the gaps in C's stamps double. The table runs A–D " +
		"against a service down for 2.5 s: retrying at once calls it 12 times while it is down " +
		"and drops all four, backing off calls it 8 times and gets all four done. This is lesson " +
		"4's chain with delays (the dead-letter queue comes in lesson 8), so C is still dropped " +
		"after its last retry.",
	InMem: runQ07,
}

func runQ07(ctx context.Context, env *lesson.Env) error {
	chain := NewChain(ctx, env)
	if err := chain.Run(ctx, env, func(actor string, from *inmem.Queue, t *inmem.Task) {
		chain.Sys.Drop(actor, t, from.Name(), "all retries failed")
	}); err != nil {
		return err
	}
	struggling, err := q07Struggling(ctx, env)
	env.Report(struggling)
	return err
}

// FirstBackoff is the wait after a task's first failure; each further
// failure doubles it (lessons Q07–Q09).
const FirstBackoff = 1 * time.Second

// backoff is the wait after failed attempt n (1-based): 1 s, 2 s, 4 s…
func backoff(n int) time.Duration { return FirstBackoff << (n - 1) }

// retryAfter is the backoff itself: t, which failed at queue from, waits
// backoff(t.Attempt) on a timer and then goes on queue to. No goroutine
// sleeps meanwhile; the timer alone holds t, in this process's memory.
func retryAfter(sys *inmem.System, actor string, t *inmem.Task, from, to *inmem.Queue) {
	delay := backoff(t.Attempt) // attempt 1 failed: 1 s; attempt 2 failed: 2 s
	sys.ScheduleOn(actor, t, from.Name(), to, delay, func(move func()) *time.Timer {
		// time.AfterFunc on the lesson clock: after delay, move puts t on to.
		return sys.Clock().AfterFunc(delay, move)
	})
}
