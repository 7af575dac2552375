//go:build qlabex

// Wrong: the Sequential-Worker retries the task itself, holding up D.
// First failure: a failed task moves to retryQueue

package retryqueue

import "github.com/queuelab/qlab/inmem"

func Start(sys *inmem.System, queue, retryQueue *inmem.Queue) {
	sys.Worker("Sequential-Worker", queue, func(t *inmem.Task) {
		if sys.Attempt("Sequential-Worker", queue, t) != nil && sys.Attempt("Sequential-Worker", queue, t) != nil {
			sys.Drop("Sequential-Worker", t, queue.Name(), "no retries left")
		}
	})
}
