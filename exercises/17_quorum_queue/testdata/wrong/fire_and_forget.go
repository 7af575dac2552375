//go:build qlabex

// Wrong: the right queue, persistent messages, no confirms: Publish
// returns once the bytes left, and a message the broker refused is lost
// without a word.
// First failure: a refused message (basic.nack) is an error from Publish
// Or first, if slow: every message is in the queue when Publish returns

package quorumqueue

import (
	"context"

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
		amqp.Table{amqp.QueueTypeArg: amqp.QueueTypeQuorum})
	return err
}

// Publish publishes each body to queue through the default exchange on
// ch (a fresh channel, yours alone) and returns nil only once the broker
// has taken every one; a message the broker refuses is an error. ctx
// bounds every wait.
func Publish(ctx context.Context, ch *amqp.Channel, queue string, bodies [][]byte) error {
	for _, body := range bodies {
		msg := amqp.Publishing{ContentType: "application/json", DeliveryMode: amqp.Persistent, Body: body}
		if err := ch.PublishWithContext(ctx, "", queue,
			false, // mandatory
			false, // immediate
			msg); err != nil {
			return err
		}
	}
	return nil
}
