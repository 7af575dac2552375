//go:build qlabex

// Wrong: drops the task and parks it too; the log says both.
// First failure: a parked task is not also dropped: it ends in one place

package deadletter

import "github.com/queuelab/qlab/inmem"

func Exhausted(sys *inmem.System, actor string, from, dlq *inmem.Queue, t *inmem.Task) {
	sys.Drop(actor, t, from.Name(), "all retries failed")
	from.DeadLetter(actor, t, dlq, "failed all retries")
}
