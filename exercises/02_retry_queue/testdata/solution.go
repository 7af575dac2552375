//go:build qlabex

package retryqueue

import "github.com/queuelab/qlab/inmem"

// Start starts the two workers of the Q02 design: the Sequential-Worker
// on queue and the Retry-Worker on retryQueue.
func Start(sys *inmem.System, queue, retryQueue *inmem.Queue) {
	sys.Worker("Sequential-Worker", queue, func(t *inmem.Task) {
		if sys.Attempt("Sequential-Worker", queue, t) != nil {
			queue.MoveTo("Sequential-Worker", t, retryQueue)
		}
	})
	sys.Worker("Retry-Worker", retryQueue, func(t *inmem.Task) {
		if sys.Attempt("Retry-Worker", retryQueue, t) != nil {
			sys.Drop("Retry-Worker", t, retryQueue.Name(), "no retries left")
		}
	})
}
