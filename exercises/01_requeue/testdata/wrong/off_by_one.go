//go:build qlabex

// Wrong: gives up one attempt late (six attempts of the poison task).
// First failure: a poison task is given up after MaxAttempts

package requeue

import "github.com/queuelab/qlab/inmem"

const MaxAttempts = 5

func Retry(sys *inmem.System, queue *inmem.Queue, actor string, t *inmem.Task) {
	if t.Attempt > MaxAttempts {
		sys.Drop(actor, t, queue.Name(), "gave up after 5 attempts")
		return
	}
	queue.Requeue(actor, t)
}
