package rabbit

import (
	"context"
	"fmt"

	amqp "github.com/rabbitmq/amqp091-go"
)

// Republish sends a copy of delivery d (body and properties: message id,
// content type, persistence) to seed queue with headers instead of d's
// own, mandatory, and waits for the broker's confirm (a copy no queue
// takes is ErrReturned), publishing again after a lost channel as
// PublishMessage does. It is how a worker moves a
// message itself (to a DLQ, or to a wait queue with a retry header) before
// acking the original. d itself is not settled.
func (p *Publisher) Republish(ctx context.Context, queue string, d *Delivery, headers amqp.Table) error {
	return p.RepublishExpiring(ctx, queue, d, headers, "")
}

// RepublishExpiring is Republish with the copy's expiration property set
// (a per-message TTL in real milliseconds, see Expiration; "" for none):
// seed 002's publish to its retry queue with the delay on the message.
func (p *Publisher) RepublishExpiring(ctx context.Context, queue string, d *Delivery, headers amqp.Table, expiration string) error {
	msg := Copy(d.Delivery)
	msg.Headers, msg.Expiration = headers, expiration
	msg.UserId = "" // the broker refuses (406) a user-id other than the connection's
	// Like a first publish, a republish outlives a lost channel: one
	// that failed for good would send the delivery back to its queue,
	// and every redelivery would fail the same way, a hot loop.
	if err := p.PublishMessage(ctx, queue, msg); err != nil {
		return fmt.Errorf("republishing: %w", err)
	}
	return nil
}
