//go:build qlabex

package backoff

import (
	"time"

	"github.com/queuelab/qlab/inmem"
)

// FirstBackoff is the wait after a task's first failed attempt.
const FirstBackoff = 1 * time.Second

// Backoff is the wait after failed attempt n (1-based): 1 s, 2 s, 4 s…
func Backoff(n int) time.Duration {
	return FirstBackoff << (n - 1)
}

// RetryAfter is called on actor's goroutine right after attempt t.Attempt
// of task t failed at queue from: t waits its backoff on a timer, then
// goes on retryQueue.
func RetryAfter(sys *inmem.System, actor string, from, retryQueue *inmem.Queue, t *inmem.Task) {
	delay := Backoff(t.Attempt) // attempt 1 failed: 1 s; attempt 2: 2 s
	sys.ScheduleOn(actor, t, from.Name(), retryQueue, delay, func(move func()) *time.Timer {
		return sys.Clock().AfterFunc(delay, move)
	})
}
