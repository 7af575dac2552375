//go:build qlabex

// Editor: this file builds with the qlabex tag; for gopls set "buildFlags": ["-tags=qlabex"].

package retryqueue

import "github.com/queuelab/qlab/inmem"

// Start starts the two workers of the Q02 design: the Sequential-Worker
// on queue and the Retry-Worker on retryQueue.
func Start(sys *inmem.System, queue, retryQueue *inmem.Queue) {
	sys.Worker("Sequential-Worker", queue, func(t *inmem.Task) {
		if sys.Attempt("Sequential-Worker", queue, t) != nil {
			// TODO: move t to retryQueue (queue.MoveTo) and return, so the
			//       next task starts at once.
		}
	})
	// TODO: start a second worker, "Retry-Worker", on retryQueue. It gives
	//       each task one more attempt (sys.Attempt) and, if that fails too,
	//       drops it: sys.Drop(actor, t, retryQueue.Name(), "no retries left").
}
