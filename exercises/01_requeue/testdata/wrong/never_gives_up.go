//go:build qlabex

// Wrong: requeues for ever; the poison task is never given up.
// First failure: the run ends by itself

package requeue

import "github.com/queuelab/qlab/inmem"

const MaxAttempts = 5

func Retry(sys *inmem.System, queue *inmem.Queue, actor string, t *inmem.Task) {
	queue.Requeue(actor, t)
}
