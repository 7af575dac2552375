//go:build qlabex

// Editor: this file builds with the qlabex tag; for gopls set "buildFlags": ["-tags=qlabex"].

package decision

import (
	"context"

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
	// TODO: make the call through the breaker: cb.Execute(ctx, send). As
	//       it is, every retry hits the dead service, and a mail that
	//       fails every delivery loops for ever.
	//   - err == nil: flow.Ack();
	//   - the last delivery (d.Attempt >= MaxDeliveries): flow.Park(EmailDLQ, why);
	//   - otherwise flow.Retry(EmailWait, err), for a fast fail
	//     (errors.Is(err, breaker.ErrOpen)) too: it waits out the TTL.
	_ = cb
	if err := send(ctx); err != nil {
		return flow.Retry(EmailWait, err)
	}
	return flow.Ack()
}
