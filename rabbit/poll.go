package rabbit

import (
	"context"
	"time"
)

// PollUntil calls cond every `every` until it reports true (ok), returns
// an error, within has passed (not ok, no error) or ctx ends (its error).
// A within of 0 leaves the bound to cond and ctx (WaitSettled, whose
// patience ends a run that stopped moving). It is the one way the package
// and the lessons wait for what the broker sends no signal for: a message
// dead-lettered to its queue (asynchronous after the nack or the confirm),
// a queue's depth settling, every task of a run settling.
func PollUntil(ctx context.Context, every, within time.Duration, cond func() (bool, error)) (ok bool, err error) {
	var deadline time.Time
	if within > 0 {
		deadline = time.Now().Add(within)
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		if ok, err := cond(); ok || err != nil {
			return ok, err
		}
		if !deadline.IsZero() && time.Now().After(deadline) {
			return false, nil
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
}
