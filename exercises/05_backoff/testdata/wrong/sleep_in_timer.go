//go:build qlabex

// Wrong: the start func sleeps out the backoff and then fires at once.
// It runs under the system's lock, so nothing else can happen meanwhile.
// First failure: the worker does not wait with the task (no sleep): it takes the next task at once

package backoff

import (
	"time"

	"github.com/queuelab/qlab/inmem"
)

const FirstBackoff = 1 * time.Second

func Backoff(n int) time.Duration { return FirstBackoff << (n - 1) }

func RetryAfter(sys *inmem.System, actor string, from, retryQueue *inmem.Queue, t *inmem.Task) {
	delay := Backoff(t.Attempt)
	sys.ScheduleOn(actor, t, from.Name(), retryQueue, delay, func(move func()) *time.Timer {
		time.Sleep(delay)
		return sys.Clock().AfterFunc(0, move)
	})
}
