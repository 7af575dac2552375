//go:build qlabex

package requeue

import "github.com/queuelab/qlab/inmem"

// MaxAttempts is how many attempts a task gets before the worker gives up.
const MaxAttempts = 5

// Retry is called by the Sequential-Worker (actor) right after attempt
// number t.Attempt of task t, taken from queue, failed. It must say what
// becomes of t before it returns.
func Retry(sys *inmem.System, queue *inmem.Queue, actor string, t *inmem.Task) {
	if t.Attempt >= MaxAttempts {
		sys.Drop(actor, t, queue.Name(), "gave up after 5 attempts")
		return
	}
	queue.Requeue(actor, t) // back at the tail: the tasks behind it go first
}
