package lessons

import (
	"context"
	"time"

	"github.com/queuelab/qlab/inmem"
)

// The backoff waits of lessons Q07–Q09, in lesson time.
const (
	firstBackoff  = 1 * time.Second // main queue failure → retryQueue
	secondBackoff = 2 * time.Second // retryQueue failure → secondRetryQueue
)

// backoffChain is the in-memory retry chain that lessons Q07, Q08 and Q09
// share: three queues, one worker each, and a time.AfterFunc wait between
// them that doubles (1 s, then 2 s).
//
//	queue ──fail, wait 1s──▶ retryQueue ──fail, wait 2s──▶ secondRetryQueue ──fail──▶ exhausted
//
// What happens to a task whose last retry failed is exactly what the three
// lessons differ in, so each passes it in as exhausted: Q07 drops the task,
// Q08 parks it in a dead-letter queue, Q09 adds a DLQ-Worker that mails.
type backoffChain struct {
	sys                      *inmem.System
	main, retry, secondRetry *inmem.Queue
	room                     int // capacity of every queue: one per task, so a move never blocks
}

// exhaustedFunc handles task t after its last retry failed at queue from.
// It runs on actor's goroutine (the Second-Retry-Worker) and must put t
// somewhere, or say it is gone, before it returns.
type exhaustedFunc func(actor string, from *inmem.Queue, t *inmem.Task)

// newBackoffChain creates the system and the chain's three queues, with
// room for every task of the plan, so a move never blocks a worker.
func newBackoffChain(ctx context.Context, env *Env) *backoffChain {
	sys := inmem.New(ctx, env.Stream, env.Plan)
	room := len(env.Plan.Tasks) + 1
	return &backoffChain{
		sys:         sys,
		main:        sys.Queue("queue", room),
		retry:       sys.Queue("retryQueue", room),
		secondRetry: sys.Queue("secondRetryQueue", room),
		room:        room,
	}
}

// run enqueues the plan's tasks, starts the three workers and waits until
// every task is done, exhausted or cancelled by ctx.
func (c *backoffChain) run(ctx context.Context, env *Env, exhausted exhaustedFunc) error {
	for _, id := range env.Plan.Tasks {
		c.main.Enqueue("Producer", id)
	}
	c.stage("Sequential-Worker", c.main, func(actor string, t *inmem.Task) {
		c.sys.Schedule(actor, t, c.main.Name(), c.retry, firstBackoff)
	})
	c.stage("Retry-Worker", c.retry, func(actor string, t *inmem.Task) {
		c.sys.Schedule(actor, t, c.retry.Name(), c.secondRetry, secondBackoff)
	})
	c.stage("Second-Retry-Worker", c.secondRetry, func(actor string, t *inmem.Task) {
		exhausted(actor, c.secondRetry, t)
	})
	return c.sys.Wait(ctx)
}

// stage starts worker actor on q: one attempt per task, and onFail for a
// task whose attempt failed.
func (c *backoffChain) stage(actor string, q *inmem.Queue, onFail func(actor string, t *inmem.Task)) {
	c.sys.Worker(actor, q, func(t *inmem.Task) {
		if c.sys.Attempt(actor, q, t) != nil {
			onFail(actor, t)
		}
	})
}
