package dlqreplay

import (
	"context"

	amqp "github.com/rabbitmq/amqp091-go"
)

// Channel is the part of *amqp.Channel the exercise uses; the checker
// passes a real channel that records each call. A delivery from Get is
// settled with d.Ack, d.Nack or d.Reject, or with the tag on Ack, Nack,
// Reject (multiple settles every tag up to it).
type Channel interface {
	Get(queue string, autoAck bool) (msg amqp.Delivery, ok bool, err error)
	Ack(tag uint64, multiple bool) error
	Nack(tag uint64, multiple, requeue bool) error
	Reject(tag uint64, requeue bool) error
}

// Publish publishes msg to queue through the default exchange and
// returns once the broker has confirmed it (an error otherwise).
type Publish func(ctx context.Context, queue string, msg amqp.Publishing) error
