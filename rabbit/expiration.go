package rabbit

import (
	"context"
	"fmt"
	"strconv"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuelab/qlab/lab"
)

// Expiration is the AMQP expiration property (a per-message TTL, in real
// milliseconds as a decimal string) for lesson duration d under clock. A
// negative d counts as 0: the message expires as soon as it reaches the
// head of its queue.
func Expiration(clock lab.Clock, d time.Duration) string {
	return strconv.FormatInt(max(0, clock.Real(d).Milliseconds()), 10)
}

// PublishMessage sends msg as it is to seed queue (through the default
// exchange) and waits for the broker's confirm, like Publish. Build msg
// with Publishing and set what Publish cannot: an Expiration, Headers.
func (p *Publisher) PublishMessage(ctx context.Context, queue string, msg amqp.Publishing) error {
	p.mu.Lock()
	dc, err := p.ch.PublishWithDeferredConfirmWithContext(ctx, "", p.names.Of(queue), false, false, msg)
	p.mu.Unlock()
	if err != nil {
		return fmt.Errorf("publishing %s to %s: %w", msg.MessageId, queue, err)
	}
	return WaitConfirm(ctx, dc)
}
