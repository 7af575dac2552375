//go:build qlabex

// Wrong: moves the failed task to retryQueue, where no worker takes it.
// First failure: the run ends by itself

package retryqueue

import "github.com/queuelab/qlab/inmem"

func Start(sys *inmem.System, queue, retryQueue *inmem.Queue) {
	sys.Worker("Sequential-Worker", queue, func(t *inmem.Task) {
		if sys.Attempt("Sequential-Worker", queue, t) != nil {
			queue.MoveTo("Sequential-Worker", t, retryQueue)
		}
	})
}
