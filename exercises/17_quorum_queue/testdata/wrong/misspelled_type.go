//go:build qlabex

// Wrong: "x-queue_type" is an argument the broker does not know: it keeps
// it and declares a classic queue, without a word.
// First failure: the queue is a durable quorum queue, as the broker has it

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
		true,  // durable: a quorum queue must be
		false, // autoDelete: refused for a quorum queue
		false, // exclusive: refused for a quorum queue
		false, // noWait
		amqp.Table{"x-queue_type": "quorum"})
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
