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
	msg := amqp.Publishing{
		Headers:       headers,
		ContentType:   d.ContentType,
		DeliveryMode:  d.DeliveryMode,
		MessageId:     d.MessageId,
		CorrelationId: d.CorrelationId,
		Timestamp:     d.Timestamp,
		Type:          d.Type,
		Body:          d.Body,
	}
	// Through confirmed, like PublishMessage: after a closed channel it
	// reopens and publishes again. A republish that failed at once on a dead
	// channel put the delivery back (a nack with requeue), which came
	// straight back to fail again: 13,246 redeliveries in 90 s when the
	// fault suite closed a Q13 run's connections.
	return p.confirmed(ctx, d.Task, func() error {
		if err := p.send(ctx, queue, msg); err != nil { // stamped with this run's id, mandatory
			return fmt.Errorf("republishing %s to %s: %w", d.Task, queue, err)
		}
		return nil
	})
}
