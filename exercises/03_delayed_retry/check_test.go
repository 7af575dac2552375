//go:build qlabex

package delayedretry

import (
	"testing"

	"github.com/queuelab/qlab/exercises/check"
	"github.com/queuelab/qlab/lab"
)

const maxAttempts = 4

func TestDelayedRetry(t *testing.T) {
	c := check.New(t)
	for _, plan := range check.Plans() {
		r := check.RetryLoop(t, plan, maxAttempts, RetryLater)
		c.Accounted(r, lab.FateDone, lab.FateDropped)
		c.Waits(r, maxAttempts, func(int) int64 { return Delay.Milliseconds() })
	}
}
