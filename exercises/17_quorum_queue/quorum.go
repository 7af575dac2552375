//go:build qlabex

// Editor: this file builds with the qlabex tag; for gopls set "buildFlags": ["-tags=qlabex"].

package quorumqueue

import (
	"context"

	amqp "github.com/rabbitmq/amqp091-go"
)

// Declare declares queue on ch so that it survives the loss of the node
// it lives on (seed 003: three nodes, one dies, the messages are safe).
// A refusal from the broker is returned as the error.
func Declare(ch *amqp.Channel, queue string) error {
	// TODO: a classic queue lives on one node. Declare the queue type
	//       that keeps a copy on each node, with the properties that type
	//       requires (the broker refuses the others).
	_, err := ch.QueueDeclare(queue,
		true,  // durable
		false, // autoDelete
		false, // exclusive
		false, // noWait
		nil)
	return err
}

// Publish publishes each body to queue through the default exchange on
// ch (a fresh channel, yours alone) and returns nil only once the broker
// has taken every one; a message the broker refuses is an error. ctx
// bounds every wait.
func Publish(ctx context.Context, ch *amqp.Channel, queue string, bodies [][]byte) error {
	// TODO: this fires and forgets: nil says only that the bytes left.
	//       Mark each message persistent, and return only after the
	//       broker has confirmed each one (and an error if it refused one).
	for _, body := range bodies {
		msg := amqp.Publishing{ContentType: "application/json", Body: body}
		if err := ch.PublishWithContext(ctx, "", queue,
			false, // mandatory
			false, // immediate
			msg); err != nil {
			return err
		}
	}
	return nil
}
