package flow

import (
	"context"
	"errors"
	"fmt"
)

// Retries is the handler policy lessons share for a failed attempt,
// written once and run by every backend: retry through a wait queue while
// the budget lasts, park after the last attempt, and park at once an error
// no retry can fix (Permanent). The zero value of each field is
// documented; a lesson sets only what it teaches.
type Retries struct {
	// Via is the wait (or next retry) queue a failure goes through
	// (Retry). Empty: no retry at this step, every failure parks (the end
	// of a chain of retry queues).
	Via string
	// DLQ is where a message parks.
	DLQ string
	// Max is the attempt after whose failure the message parks: attempts
	// 1 … Max-1 retry. 0: no budget, every failure retries (or parks, with
	// no Via).
	Max int
	// GaveUp is the park reason once the budget or the chain is spent,
	// given the attempt that failed last. nil: "attempt N of Max failed".
	GaveUp func(attempt int) string
}

// Decide is the policy's verdict on d after its attempt returned err: ack
// on nil; park at once when err is Permanent; park when d's attempt spent
// the budget or there is no Via; otherwise retry through Via.
func (r Retries) Decide(d *Delivery, err error) Decision {
	switch {
	case err == nil:
		return Ack()
	case IsPermanent(err):
		return Park(r.DLQ, fmt.Sprintf("permanent at attempt %d, no retry: %v", d.Attempt, err))
	case r.Via == "" || (r.Max > 0 && d.Attempt >= r.Max):
		return Park(r.DLQ, r.gaveUp(d.Attempt))
	}
	return Retry(r.Via, err)
}

// Handler is a handler that runs attempt on each delivery and decides by
// the policy: the shape of most lessons' workers.
func (r Retries) Handler(attempt func(ctx context.Context, d *Delivery) error) Handler {
	return func(ctx context.Context, d *Delivery) Decision { return r.Decide(d, attempt(ctx, d)) }
}

func (r Retries) gaveUp(attempt int) string {
	if r.GaveUp != nil {
		return r.GaveUp(attempt)
	}
	if r.Max > 0 {
		return fmt.Sprintf("attempt %d of %d failed", attempt, r.Max)
	}
	return fmt.Sprintf("attempt %d failed", attempt)
}

// ErrPermanent marks an error no retry can fix (a malformed message, an
// address that does not exist): Retries parks it at once.
var ErrPermanent = errors.New("permanent")

// Permanent marks err as permanent; errors.Is(Permanent(err), err) still
// holds.
func Permanent(err error) error { return permanentError{err} }

// IsPermanent reports whether err, or an error it wraps, is permanent.
func IsPermanent(err error) bool { return errors.Is(err, ErrPermanent) }

type permanentError struct{ err error }

func (p permanentError) Error() string   { return p.err.Error() }
func (p permanentError) Unwrap() []error { return []error{p.err, ErrPermanent} }
