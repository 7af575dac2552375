package lessons

import (
	"context"
	"fmt"
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
	for i := range env.Consumers {
		c.stage(workerName("Sequential-Worker", i, env.Consumers), c.main, func(actor string, t *inmem.Task) {
			c.sys.Schedule(actor, t, c.main.Name(), c.retry, firstBackoff)
		})
	}
	c.stage("Retry-Worker", c.retry, func(actor string, t *inmem.Task) {
		c.sys.Schedule(actor, t, c.retry.Name(), c.secondRetry, secondBackoff)
	})
	c.stage("Second-Retry-Worker", c.secondRetry, func(actor string, t *inmem.Task) {
		exhausted(actor, c.secondRetry, t)
	})
	watchInMem(env, c.main, c.retry, c.secondRetry)
	defer env.interruptAfter(func() { c.sys.Crash("process") })()
	return c.sys.Wait(ctx)
}

// workerName names consumer i of n on one queue: the base name alone when
// it has one consumer, base-1, base-2 … when several compete (one actor
// name per goroutine keeps transcripts canonical).
func workerName(base string, i, n int) string {
	if n <= 1 {
		return base
	}
	return fmt.Sprintf("%s-%d", base, i+1)
}

// watchInMem lets the run sample the depth of in-memory queues. Tasks
// waiting on a time.AfterFunc timer are in no queue: nothing can show them.
func watchInMem(env *Env, queues ...*inmem.Queue) {
	for _, q := range queues {
		env.Watch(q.Name(), func(context.Context) (int, error) { return q.Len(), nil })
	}
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
