//go:build qlabex

// Editor: this file builds with the qlabex tag; for gopls set "buildFlags": ["-tags=qlabex"].

package deadletter

import "github.com/queuelab/qlab/inmem"

// Exhausted is called on actor's goroutine when task t failed its last
// retry at queue from. dlq is the dead-letter queue; nothing consumes it.
func Exhausted(sys *inmem.System, actor string, from, dlq *inmem.Queue, t *inmem.Task) {
	// TODO: park t in dlq, with the reason, instead of dropping it
	//       (see the methods of *inmem.Queue).
	sys.Drop(actor, t, from.Name(), "all retries failed")
}
