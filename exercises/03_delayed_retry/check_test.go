//go:build qlabex

package delayedretry

import (
	"fmt"
	"testing"

	"github.com/queuelab/qlab/exercises/check"
	"github.com/queuelab/qlab/lab"
)

const maxAttempts = 4

// clockCheck is the check a timer armed on the wall clock fails.
const clockCheck = "the timer runs on the lesson clock (sys.Clock()), not the wall clock"

// speed is the lesson speed of the run that tells the two clocks apart:
// a 1 s wait on the wall clock is 4 s of lesson time there.
const speed = 4

func TestDelayedRetry(t *testing.T) {
	c := check.New(t)
	fast := check.Plans()[0]
	fast.Name, fast.Speed = fmt.Sprintf("the default plan at lesson speed %d", speed), speed
	for _, plan := range append([]check.Named{fast}, check.Plans()...) { // fast first: its check leads the list
		r := check.RetryLoop(t, plan, maxAttempts, RetryLater)
		c.Accounted(r, lab.FateDone, lab.FateDropped)
		if plan.Speed != 0 {
			lessonClock(c, r)
		}
		c.Waits(r, maxAttempts, func(int) int64 { return Delay.Milliseconds() })
	}
}

// lessonClock records clockCheck on a run at lesson speed: no retry
// starts Delay of real time (speed × Delay of lesson time) after its
// schedule, the mark of a wall-clock timer. Any other wrong gap is the
// next check's ("the retry starts exactly when the delay is over").
func lessonClock(c *check.Checker, r check.Run) {
	for _, id := range r.Plan.Tasks {
		for _, s := range r.Of(id, lab.Scheduled) {
			next := r.At(id, lab.Started, s.Attempt+1)
			if next < 0 {
				continue
			}
			gap, want := next-s.TMs, Delay.Milliseconds()
			wall := gap == want*speed
			got := fmt.Sprintf("%s scheduled at %d ms, retried %d ms later", id, s.TMs, gap)
			if wall {
				got += fmt.Sprintf(": %v of real time, %d× the delay at lesson speed %d (time.AfterFunc?)", Delay, speed, speed)
			}
			c.That(r, clockCheck, !wall, got, fmt.Sprintf("%s scheduled at %d ms, retried %d ms later", id, s.TMs, want), id)
		}
	}
}
