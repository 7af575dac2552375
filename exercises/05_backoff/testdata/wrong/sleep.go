//go:build qlabex

// Wrong: the worker sleeps out the backoff itself, holding every task
// behind the failed one.
// First failure: the worker does not wait with the task (no sleep): it takes the next task at once

package backoff

import (
	"time"

	"github.com/queuelab/qlab/inmem"
)

const FirstBackoff = 1 * time.Second

func Backoff(n int) time.Duration { return FirstBackoff << (n - 1) }

func RetryAfter(sys *inmem.System, actor string, from, retryQueue *inmem.Queue, t *inmem.Task) {
	time.Sleep(Backoff(t.Attempt))
	from.MoveTo(actor, t, retryQueue)
}
