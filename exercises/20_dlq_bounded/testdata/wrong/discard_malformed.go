//go:build qlabex

// Wrong: the seed's other reading: a malformed body is discarded, and nobody can ever see what was sent.
// First failure: nothing lost: every task ends done or dead

package dlqbounded

import (
	"context"
	"errors"
	"fmt"

	"github.com/queuelab/qlab/flow"
)

// Handle is the DLQ consumer's decision on delivery d, try number
// d.Attempt of a user taken from DLQ. insert decodes the message and
// inserts the user, and returns the error of that try (one that wraps
// ErrMalformed for a body that is not a user). Ack a stored user. Park a
// malformed body in Parked at once; any other failure waits in DLQWait
// and comes back, until the try MaxTries fails: then park it in Parked.
// Every park says why, with the error of the last try in the reason.
func Handle(ctx context.Context, d *flow.Delivery, insert func(context.Context) error) flow.Decision {
	err := insert(ctx)
	switch {
	case err == nil:
		return flow.Ack()
	case errors.Is(err, ErrMalformed): // the same bytes fail every try
		return flow.Drop(fmt.Sprintf("discarded: %v", err))
	case d.Attempt >= MaxTries:
		return flow.Park(Parked, fmt.Sprintf("gave up after %d tries: %v", d.Attempt, err))
	}
	return flow.Retry(DLQWait, err) // never a requeue: it would be back at once
}
