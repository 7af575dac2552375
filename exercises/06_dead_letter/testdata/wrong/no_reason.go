//go:build qlabex

// Wrong: parks the task without saying why.
// First failure: a task that failed every retry is parked in deadLetterQueue with a reason

package deadletter

import "github.com/queuelab/qlab/inmem"

func Exhausted(sys *inmem.System, actor string, from, dlq *inmem.Queue, t *inmem.Task) {
	from.DeadLetter(actor, t, dlq, "")
}
