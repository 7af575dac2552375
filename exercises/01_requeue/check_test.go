//go:build qlabex

package requeue

import (
	"fmt"
	"testing"

	"github.com/queuelab/qlab/exercises/check"
	"github.com/queuelab/qlab/inmem"
	"github.com/queuelab/qlab/lab"
)

func TestRequeue(t *testing.T) {
	c := check.New(t)
	for _, plan := range check.Plans() {
		r := check.OnQueue(t, plan, func(sys *inmem.System, queue *inmem.Queue, _ int) {
			sys.Worker("Sequential-Worker", queue, func(task *inmem.Task) {
				if sys.Attempt("Sequential-Worker", queue, task) != nil {
					Retry(sys, queue, "Sequential-Worker", task)
				}
			})
		})
		c.Accounted(r, lab.FateDone, lab.FateDropped)
		for _, id := range r.Plan.Tasks {
			fate, attempts := r.Fate(id)
			if r.Poison(id) {
				c.Expect(r, "a poison task is given up after MaxAttempts", fmt.Sprintf("%s %s after %d attempts", id, fate, attempts),
					fmt.Sprintf("%s dropped after %d attempts", id, MaxAttempts), id)
				continue
			}
			c.Expect(r, "a task that failed is retried until it succeeds", fmt.Sprintf("%s ends %s", id, fate), id+" ends done", id)
			moves := r.Of(id, lab.Moved)
			c.Expect(r, "each failure puts the task back once", fmt.Sprintf("%d failures, %d moves back to the queue", r.Failures(id), len(moves)),
				fmt.Sprintf("%d failures, %d moves back to the queue", r.Failures(id), r.Failures(id)), id)
		}
		// The tail, not the head: the task behind a failed one starts
		// before the failed one's next attempt.
		for i, id := range r.Plan.Tasks[:len(r.Plan.Tasks)-1] {
			next := r.Plan.Tasks[i+1]
			failedAt := r.At(id, lab.Failed, 1)
			if failedAt < 0 {
				continue
			}
			retry, nextStart := r.At(id, lab.Started, 2), r.At(next, lab.Started, 1)
			c.That(r, "a failed task goes to the tail: the next task is not held up",
				retry < 0 || nextStart < retry,
				fmt.Sprintf("%s's attempt 2 started at %dms, before %s's first at %dms", id, retry, next, nextStart),
				fmt.Sprintf("%s starts before %s is retried", next, id), id)
		}
	}
}
