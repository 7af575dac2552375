//go:build qlabex

package retryqueue

import (
	"fmt"
	"testing"

	"github.com/queuelab/qlab/exercises/check"
	"github.com/queuelab/qlab/inmem"
	"github.com/queuelab/qlab/lab"
)

func TestRetryQueue(t *testing.T) {
	c := check.New(t)
	for _, plan := range check.Plans() {
		r := check.OnQueue(t, plan, func(sys *inmem.System, queue *inmem.Queue, room int) {
			Start(sys, queue, sys.Queue("retryQueue", room))
		})
		c.Accounted(r, lab.FateDone, lab.FateDropped)
		for i, id := range r.Plan.Tasks {
			failedAt := r.At(id, lab.Failed, 1)
			if failedAt < 0 {
				continue
			}
			moves := r.Of(id, lab.Moved)
			to := "nowhere"
			if len(moves) > 0 {
				to = moves[0].To
			}
			c.Expect(r, "a failed task moves to retryQueue", fmt.Sprintf("%s moved to %s", id, to), id+" moved to retryQueue", id)
			retry := "no second attempt"
			for _, e := range r.Of(id, lab.Started) {
				if e.Attempt == 2 {
					retry = "attempt 2 by " + e.Actor
				}
			}
			c.Expect(r, "the Retry-Worker gives it a second attempt", id+": "+retry, id+": attempt 2 by Retry-Worker", id)
			fate, attempts := r.Fate(id)
			want := "done"
			if r.Failures(id) >= 2 {
				want = "dropped"
			}
			c.Expect(r, "a task ends done if its retry succeeds, dropped if not",
				fmt.Sprintf("%s %s after %d attempts", id, fate, attempts), fmt.Sprintf("%s %s after 2 attempts", id, want), id)
			if i+1 < len(r.Plan.Tasks) {
				next := r.Plan.Tasks[i+1]
				start := r.At(next, lab.Started, 1)
				c.That(r, "the next task starts as soon as one fails (it is not held up)", start == failedAt,
					fmt.Sprintf("%s failed at %dms, %s started at %dms", id, failedAt, next, start),
					fmt.Sprintf("%s starts at %dms", next, failedAt), next)
			}
		}
	}
}
