//go:build qlabex

// Editor: this file builds with the qlabex tag; for gopls set "buildFlags": ["-tags=qlabex"].

package requeue

import "github.com/queuelab/qlab/inmem"

// MaxAttempts is how many attempts a task gets before the worker gives up.
const MaxAttempts = 5

// Retry is called by the Sequential-Worker (actor) right after attempt
// number t.Attempt of task t, taken from queue, failed. It must say what
// becomes of t before it returns.
func Retry(sys *inmem.System, queue *inmem.Queue, actor string, t *inmem.Task) {
	// TODO: once t has had MaxAttempts attempts, give up on it:
	//       sys.Drop(actor, t, queue.Name(), "gave up after 5 attempts").
	// TODO: otherwise put t back at the tail of the same queue, so the
	//       tasks behind it go first (see the methods of *inmem.Queue).
}
