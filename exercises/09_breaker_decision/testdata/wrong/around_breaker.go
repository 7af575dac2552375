//go:build qlabex

// Wrong: calls send directly: the breaker never sees a failure.
// First failure: the breaker opens while the service is down: your calls go through it

package decision

import (
	"context"
	"fmt"

	"github.com/queuelab/qlab/breaker"
	"github.com/queuelab/qlab/flow"
)

func Handle(ctx context.Context, d *flow.Delivery, cb *breaker.Breaker, send func(context.Context) error) flow.Decision {
	err := send(ctx)
	switch {
	case err == nil:
		return flow.Ack()
	case d.Attempt >= MaxDeliveries:
		return flow.Park(EmailDLQ, fmt.Sprintf("gave up after %d deliveries: %v", d.Attempt, err))
	}
	return flow.Retry(EmailWait, err)
}
