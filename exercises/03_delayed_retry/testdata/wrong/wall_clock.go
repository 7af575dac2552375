//go:build qlabex

// Wrong: arms the timer with time.AfterFunc, the wall clock, not the
// lesson clock: at any lesson speed but 1 the retry comes late.
// First failure: the timer runs on the lesson clock (sys.Clock()), not the wall clock

package delayedretry

import (
	"time"

	"github.com/queuelab/qlab/inmem"
)

const Delay = 1 * time.Second

func RetryLater(sys *inmem.System, actor string, from, retryQueue *inmem.Queue, t *inmem.Task) {
	sys.ScheduleOn(actor, t, from.Name(), retryQueue, Delay, func(move func()) *time.Timer {
		return time.AfterFunc(Delay, move)
	})
}
