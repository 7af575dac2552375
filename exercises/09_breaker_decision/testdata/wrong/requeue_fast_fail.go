//go:build qlabex

// Wrong: a fast fail (breaker open) is requeued at once: a hot loop.
// First failure: the decision: ack a sent mail, retry the rest via email_queue_wait, park at the last delivery

package decision

import (
	"context"
	"errors"
	"fmt"

	"github.com/queuelab/qlab/breaker"
	"github.com/queuelab/qlab/flow"
)

func Handle(ctx context.Context, d *flow.Delivery, cb *breaker.Breaker, send func(context.Context) error) flow.Decision {
	err := cb.Execute(ctx, send)
	switch {
	case err == nil:
		return flow.Ack()
	case d.Attempt >= MaxDeliveries:
		return flow.Park(EmailDLQ, fmt.Sprintf("gave up after %d deliveries: %v", d.Attempt, err))
	case errors.Is(err, breaker.ErrOpen):
		return flow.Requeue()
	}
	return flow.Retry(EmailWait, err)
}
