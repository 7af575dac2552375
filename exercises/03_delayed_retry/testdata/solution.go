//go:build qlabex

package delayedretry

import (
	"time"

	"github.com/queuelab/qlab/inmem"
)

// Delay is how long a failed task waits before its retry.
const Delay = 1 * time.Second

// RetryLater is called on actor's goroutine right after task t failed at
// queue from. t must wait Delay, then go on retryQueue; RetryLater itself
// must return at once, so the worker can take its next task.
func RetryLater(sys *inmem.System, actor string, from, retryQueue *inmem.Queue, t *inmem.Task) {
	sys.ScheduleOn(actor, t, from.Name(), retryQueue, Delay, func(move func()) *time.Timer {
		return sys.Clock().AfterFunc(Delay, move) // the timer holds t; no goroutine waits
	})
}
