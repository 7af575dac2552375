package q07

import (
	"context"

	"github.com/queuelab/qlab/inmem"
	"github.com/queuelab/qlab/lesson"
)

// Chain is the in-memory retry chain that lessons Q07, Q08 and Q09
// share: three queues, one worker each, and between them the backoff of
// backoff.go (retryAfter: a timer that waits 1 s, then 2 s).
//
//	queue ──fail, wait 1s──▶ retryQueue ──fail, wait 2s──▶ secondRetryQueue ──fail──▶ exhausted
//
// What happens to a task whose last retry failed is exactly what the three
// lessons differ in, so each passes it in as exhausted: Q07 drops the task,
// Q08 parks it in a dead-letter queue, Q09 adds a DLQ-Worker that mails.
type Chain struct {
	Sys                      *inmem.System
	Main, Retry, SecondRetry *inmem.Queue
	Room                     int // capacity of every queue: one per task, so a move never blocks
}

// Exhausted handles task t after its last retry failed at queue from.
// It runs on actor's goroutine (the Second-Retry-Worker) and must put t
// somewhere, or say it is gone, before it returns.
type Exhausted func(actor string, from *inmem.Queue, t *inmem.Task)

// NewChain creates the system and the chain's three queues, with
// room for every task of the plan, so a move never blocks a worker.
func NewChain(ctx context.Context, env *lesson.Env) *Chain {
	sys := inmem.New(ctx, env.Stream, env.Plan)
	room := len(env.Plan.Tasks) + 1
	return &Chain{
		Sys:         sys,
		Main:        sys.Queue("queue", room),
		Retry:       sys.Queue("retryQueue", room),
		SecondRetry: sys.Queue("secondRetryQueue", room),
		Room:        room,
	}
}

// Run enqueues the plan's tasks, starts the three workers and waits until
// every task is done, exhausted or cancelled by ctx.
func (c *Chain) Run(ctx context.Context, env *lesson.Env, exhausted Exhausted) error {
	for _, id := range env.Plan.Tasks {
		c.Main.Enqueue("Producer", id)
	}
	for i := range env.Consumers {
		c.stage(lesson.WorkerName("Sequential-Worker", i, env.Consumers), c.Main, func(actor string, t *inmem.Task) {
			retryAfter(c.Sys, actor, t, c.Main, c.Retry)
		})
	}
	c.stage("Retry-Worker", c.Retry, func(actor string, t *inmem.Task) {
		retryAfter(c.Sys, actor, t, c.Retry, c.SecondRetry)
	})
	c.stage("Second-Retry-Worker", c.SecondRetry, func(actor string, t *inmem.Task) {
		exhausted(actor, c.SecondRetry, t)
	})
	lesson.WatchInMem(env, c.Main, c.Retry, c.SecondRetry)
	defer env.InterruptAfter(func() { c.Sys.Crash("process") })()
	return c.Sys.Wait(ctx)
}

// stage starts worker actor on q: one attempt per task, and onFail for a
// task whose attempt failed.
func (c *Chain) stage(actor string, q *inmem.Queue, onFail func(actor string, t *inmem.Task)) {
	c.Sys.Worker(actor, q, func(t *inmem.Task) {
		if c.Sys.Attempt(actor, q, t) != nil {
			onFail(actor, t)
		}
	})
}
