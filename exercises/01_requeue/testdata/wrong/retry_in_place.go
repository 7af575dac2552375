//go:build qlabex

// Wrong: retries in place, inside Retry, so the tasks behind the failed
// one wait for all its attempts.
// First failure: each failure puts the task back once

package requeue

import "github.com/queuelab/qlab/inmem"

const MaxAttempts = 5

func Retry(sys *inmem.System, queue *inmem.Queue, actor string, t *inmem.Task) {
	for t.Attempt < MaxAttempts {
		if sys.Attempt(actor, queue, t) == nil {
			return
		}
	}
	sys.Drop(actor, t, queue.Name(), "gave up after 5 attempts")
}
