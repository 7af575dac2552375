//go:build qlabex

// Editor: this file builds with the qlabex tag; for gopls set "buildFlags": ["-tags=qlabex"].

package delayedretry

import (
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// QueueArgs returns the arguments to declare the work queue with on
// RabbitMQ 4.3: a quorum queue that holds a failed delivery for
// min × x-delivery-count, never more than max, before it comes back;
// whose failure number limit+1 is dead-lettered through the default
// exchange ("") with routing key dlq, the dead-letter queue's name.
func QueueArgs(min, max time.Duration, limit int, dlq string) amqp.Table {
	// TODO: the queue type ("x-queue-type"), the three delayed-retry
	//       arguments ("x-delayed-retry-type", "-min", "-max": times in
	//       milliseconds, as integers), "x-delivery-limit", and the two
	//       dead-letter arguments.
	_, _, _ = min, max, limit
	return amqp.Table{"x-dead-letter-routing-key": dlq}
}

// Fail hands a delivery whose attempt failed back to its queue so that
// the broker counts a failed delivery: the wait grows with the count,
// and the delivery limit applies.
func Fail(d amqp.Delivery) error {
	// TODO: settle d so that it goes back to the queue and counts.
	return d.Ack(false)
}
