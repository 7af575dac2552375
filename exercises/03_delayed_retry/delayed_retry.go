//go:build qlabex

// Editor: this file builds with the qlabex tag; for gopls set "buildFlags": ["-tags=qlabex"].

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
	// TODO: arm a timer that moves t to retryQueue after Delay. Use
	//       sys.ScheduleOn(actor, t, from.Name(), retryQueue, Delay, start):
	//       it logs the schedule and keeps count of t while it waits; your
	//       start func gets move (the function that puts t on retryQueue)
	//       and must return the timer it armed to call move after Delay.
	//       Arm it on the lesson clock (sys.Clock()), not with time.AfterFunc:
	//       a lesson may run faster than real time.
}
