//go:build qlabex

package deadletter

import "github.com/queuelab/qlab/inmem"

// Exhausted is called on actor's goroutine when task t failed its last
// retry at queue from. dlq is the dead-letter queue; nothing consumes it.
func Exhausted(sys *inmem.System, actor string, from, dlq *inmem.Queue, t *inmem.Task) {
	from.DeadLetter(actor, t, dlq, "failed all retries") // kept, with the reason
}
