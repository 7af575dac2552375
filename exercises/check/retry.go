package check

import (
	"fmt"
	"testing"
	"time"

	"github.com/queuelab/qlab/inmem"
	"github.com/queuelab/qlab/lab"
)

// RetryFunc is the student's retry step: task t failed at queue from on
// actor's goroutine and must wait, then go to retryQueue.
type RetryFunc func(sys *inmem.System, actor string, from, retryQueue *inmem.Queue, t *inmem.Task)

// RetryLoop runs the one-delayed-retry-queue design of lessons Q05/Q07
// around the student's retry step: a Sequential-Worker on "queue" and a
// Retry-Worker on "retryQueue" each hand a failed task to retry until it
// has had maxAttempts attempts; then the checker drops it.
func RetryLoop(t *testing.T, n Named, maxAttempts int, retry RetryFunc) Run {
	t.Helper()
	return OnQueue(t, n, func(sys *inmem.System, queue *inmem.Queue, room int) {
		retryQueue := sys.Queue("retryQueue", room)
		for actor, q := range map[string]*inmem.Queue{"Sequential-Worker": queue, "Retry-Worker": retryQueue} {
			sys.Worker(actor, q, func(task *inmem.Task) {
				switch {
				case sys.Attempt(actor, q, task) == nil:
				case task.Attempt >= maxAttempts:
					sys.Drop(actor, task, q.Name(), fmt.Sprintf("gave up after %d attempts", maxAttempts))
				default:
					retry(sys, actor, q, retryQueue, task)
				}
			})
		}
	})
}

// NoWaitCheck is the check a worker that waits with a failed task fails.
const NoWaitCheck = "the worker does not wait with the task (no sleep): it takes the next task at once"

// Waits records the checks of a delayed retry: the Sequential-Worker
// takes its next task the moment one fails (it does not wait with the
// failed one), after failed attempt n of each task the task is scheduled
// for retryQueue with delay want(n) at the failure, and its next attempt
// starts exactly that long after the failure (fake time is exact).
func (c *Checker) Waits(r Run, maxAttempts int, want func(n int) int64) {
	c.freeAtOnce(r)
	for _, id := range r.Plan.Tasks {
		sched := r.Of(id, lab.Scheduled)
		for _, f := range r.Of(id, lab.Failed) {
			if f.Attempt >= maxAttempts {
				break
			}
			w := want(f.Attempt)
			got := "no scheduled retry"
			var s lab.Event
			for _, e := range sched {
				if e.Attempt == f.Attempt {
					s, got = e, fmt.Sprintf("scheduled for %s after %d ms", e.To, e.DelayMs)
					if e.TMs != f.TMs {
						got += fmt.Sprintf(", %d ms after the failure", e.TMs-f.TMs)
					}
				}
			}
			c.Expect(r, "after a failure the task is scheduled for retryQueue with the right delay",
				fmt.Sprintf("%s, attempt %d failed: %s", id, f.Attempt, got),
				fmt.Sprintf("%s, attempt %d failed: scheduled for retryQueue after %d ms", id, f.Attempt, w), id)
			if s.Kind == "" {
				continue
			}
			next := r.At(id, lab.Started, f.Attempt+1)
			c.Expect(r, "the retry starts exactly when the delay is over",
				fmt.Sprintf("%s failed at %d ms, attempt %d started at %d ms", id, f.TMs, f.Attempt+1, next),
				fmt.Sprintf("%s failed at %d ms, attempt %d started at %d ms", id, f.TMs, f.Attempt+1, f.TMs+w), id)
		}
	}
}

// freeAtOnce records NoWaitCheck: every task is in "queue" from the
// start, so after a failed attempt the Sequential-Worker's next start,
// if it has one, is at the very moment of the failure.
func (c *Checker) freeAtOnce(r Run) {
	const actor = "Sequential-Worker"
	var failed *lab.Event
	for _, e := range r.Events {
		if e.Actor != actor {
			continue
		}
		switch e.Kind {
		case lab.Failed:
			failed = &e
		case lab.Started:
			if failed != nil {
				c.That(r, NoWaitCheck, e.TMs == failed.TMs,
					fmt.Sprintf("%s failed at %d ms; %s started %s at %d ms, %d ms later", failed.Task, failed.TMs, actor, e.Task, e.TMs, e.TMs-failed.TMs),
					fmt.Sprintf("%s failed at %d ms; %s starts %s at %d ms", failed.Task, failed.TMs, actor, e.Task, failed.TMs), failed.Task)
			}
			failed = nil
		}
	}
}

// Exhausted is the student's last step: task t failed its last attempt at
// queue from on actor's goroutine.
type Exhausted func(actor string, from *inmem.Queue, t *inmem.Task)

// Chain runs lesson Q08/Q09's chain — queue, then retryQueue after 1 s,
// then secondRetryQueue after 2 s — with the checker's own backoff, and
// hands a task whose third attempt failed to exhausted. setup, called
// first, returns exhausted and may create more queues and workers (a
// dead-letter queue, a DLQ-Worker).
func Chain(t *testing.T, n Named, setup func(sys *inmem.System, room int) Exhausted) Run {
	t.Helper()
	return OnQueue(t, n, func(sys *inmem.System, queue *inmem.Queue, room int) {
		exhausted := setup(sys, room)
		retry, second := sys.Queue("retryQueue", room), sys.Queue("secondRetryQueue", room)
		stages := []struct {
			actor    string
			from, to *inmem.Queue
		}{{"Sequential-Worker", queue, retry}, {"Retry-Worker", retry, second}, {"Second-Retry-Worker", second, nil}}
		for _, st := range stages {
			sys.Worker(st.actor, st.from, func(task *inmem.Task) {
				switch {
				case sys.Attempt(st.actor, st.from, task) == nil:
				case st.to == nil:
					exhausted(st.actor, st.from, task)
				default:
					sys.Schedule(st.actor, task, st.from.Name(), st.to, time.Second<<(task.Attempt-1))
				}
			})
		}
	})
}
