//go:build qlabex

// Wrong: says it waits Delay but arms the timer for no time at all.
// First failure: the retry starts exactly when the delay is over

package delayedretry

import (
	"time"

	"github.com/queuelab/qlab/inmem"
)

const Delay = 1 * time.Second

func RetryLater(sys *inmem.System, actor string, from, retryQueue *inmem.Queue, t *inmem.Task) {
	sys.ScheduleOn(actor, t, from.Name(), retryQueue, Delay, func(move func()) *time.Timer {
		return sys.Clock().AfterFunc(0, move)
	})
}
