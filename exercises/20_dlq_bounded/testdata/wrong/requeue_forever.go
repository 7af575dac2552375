//go:build qlabex

// Wrong: the seed's DLQ consumer: reject with requeue on any failure, and the message is back at once, for ever.
// First failure: never requeued: a failed try waits 10 s in raffle_dlq_retry_10s

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
	if err := insert(ctx); err != nil {
		return flow.Requeue() // nack(requeue: true)
	}
	return flow.Ack()
}
