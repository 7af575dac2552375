//go:build qlabex

// Editor: this file builds with the qlabex tag; for gopls set "buildFlags": ["-tags=qlabex"].

package backoff

import (
	"time"

	"github.com/queuelab/qlab/inmem"
)

// FirstBackoff is the wait after a task's first failed attempt.
const FirstBackoff = 1 * time.Second

// Backoff is the wait after failed attempt n (1-based): 1 s, 2 s, 4 s…
func Backoff(n int) time.Duration {
	// TODO: double the wait with every failed attempt.
	return FirstBackoff
}

// RetryAfter is called on actor's goroutine right after attempt t.Attempt
// of task t failed at queue from: t waits its backoff on a timer, then
// goes on retryQueue.
func RetryAfter(sys *inmem.System, actor string, from, retryQueue *inmem.Queue, t *inmem.Task) {
	delay := FirstBackoff // TODO: the wait after this failed attempt
	sys.ScheduleOn(actor, t, from.Name(), retryQueue, delay, func(move func()) *time.Timer {
		return sys.Clock().AfterFunc(delay, move)
	})
}
