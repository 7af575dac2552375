//go:build qlabex

// Wrong: the worker sleeps out the delay itself, holding up the next task.
// First failure: the worker does not wait with the task (no sleep): it takes the next task at once

package delayedretry

import (
	"time"

	"github.com/queuelab/qlab/inmem"
)

const Delay = 1 * time.Second

func RetryLater(sys *inmem.System, actor string, from, retryQueue *inmem.Queue, t *inmem.Task) {
	sys.Clock().Sleep(Delay)
	from.MoveTo(actor, t, retryQueue)
}
