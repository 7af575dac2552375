//go:build qlabex

package decision

import (
	"context"
	"fmt"

	"github.com/queuelab/qlab/breaker"
	"github.com/queuelab/qlab/flow"
)

// Handle is the Mail-Worker's decision for delivery d of a mail. send
// makes the call to the mail service; cb is the circuit breaker in front
// of it (opossum's settings: timeout 3 s, opens above 20 % failed, one
// trial after 10 s). Ack a mail the service took. Otherwise retry it
// through the wait queue EmailWait — a failed call and a fast fail (the
// breaker refused without calling) alike — until the mail has had
// MaxDeliveries deliveries (d.Attempt counts them); then park it in
// EmailDLQ, saying why.
func Handle(ctx context.Context, d *flow.Delivery, cb *breaker.Breaker, send func(context.Context) error) flow.Decision {
	err := cb.Execute(ctx, send) // open: breaker.ErrOpen at once, and the service is not called
	switch {
	case err == nil:
		return flow.Ack()
	case d.Attempt >= MaxDeliveries:
		return flow.Park(EmailDLQ, fmt.Sprintf("gave up after %d deliveries: %v", d.Attempt, err))
	}
	return flow.Retry(EmailWait, err) // a fast fail waits out the TTL too, never a hot requeue
}
