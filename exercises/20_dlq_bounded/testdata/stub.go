//go:build qlabex

// Editor: this file builds with the qlabex tag; for gopls set "buildFlags": ["-tags=qlabex"].

package dlqbounded

import (
	"context"

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
	// TODO: this is the seed's DLQ consumer: reject with requeue on any
	//       failure, and the message is back at once, for ever. Bound it:
	//   - insert's error wraps ErrMalformed (errors.Is): park in Parked;
	//   - d.Attempt >= MaxTries: park in Parked;
	//   - otherwise flow.Retry(DLQWait, err): 10 s, then back to DLQ.
	if err := insert(ctx); err != nil {
		return flow.Requeue()
	}
	return flow.Ack()
}
