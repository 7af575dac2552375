//go:build qlabex

// Wrong: the stub's drop: the task is gone.
// First failure: nothing lost: every task ends done or dead

package deadletter

import "github.com/queuelab/qlab/inmem"

func Exhausted(sys *inmem.System, actor string, from, dlq *inmem.Queue, t *inmem.Task) {
	sys.Drop(actor, t, from.Name(), "all retries failed")
}
