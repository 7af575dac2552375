//go:build qlabex

// Wrong: a quorum queue that would not outlive a restart: the broker
// refuses a non-durable quorum queue.
// First failure: the broker accepts your declaration

package quorumqueue

import (
	"context"
	"fmt"

	amqp "github.com/rabbitmq/amqp091-go"
)

// Declare declares queue on ch so that it survives the loss of the node
// it lives on (seed 003: three nodes, one dies, the messages are safe).
// A refusal from the broker is returned as the error.
func Declare(ch *amqp.Channel, queue string) error {
	_, err := ch.QueueDeclare(queue,
		false, // durable
		false, // autoDelete: refused for a quorum queue
		false, // exclusive: refused for a quorum queue
		false, // noWait
		amqp.Table{amqp.QueueTypeArg: amqp.QueueTypeQuorum})
	return err
}

// Publish publishes each body to queue through the default exchange on
// ch (a fresh channel, yours alone) and returns nil only once the broker
// has taken every one; a message the broker refuses is an error. ctx
// bounds every wait.
func Publish(ctx context.Context, ch *amqp.Channel, queue string, bodies [][]byte) error {
	if err := ch.Confirm(false); err != nil { // noWait false
		return err
	}
	for i, body := range bodies {
		msg := amqp.Publishing{ContentType: "application/json", DeliveryMode: amqp.Persistent, Body: body}
		confirm, err := ch.PublishWithDeferredConfirmWithContext(ctx, "", queue,
			false, // mandatory
			false, // immediate
			msg)
		if err != nil {
			return err
		}
		acked, err := confirm.WaitContext(ctx)
		if err != nil {
			return err
		}
		if !acked {
			return fmt.Errorf("the broker refused message %d of %d to %s (basic.nack)", i+1, len(bodies), queue)
		}
	}
	return nil
}
