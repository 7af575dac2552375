//go:build qlabex

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
	return amqp.Table{
		"x-queue-type":              "quorum",           // delayed retry is a quorum queue's
		"x-delayed-retry-type":      "failed",           // what counts a failure: reject, a lost channel
		"x-delayed-retry-min":       min.Milliseconds(), // × x-delivery-count …
		"x-delayed-retry-max":       max.Milliseconds(), // … up to this; without it the wait never grows
		"x-delivery-limit":          int64(limit),
		"x-dead-letter-exchange":    "",
		"x-dead-letter-routing-key": dlq,
	}
}

// Fail hands a delivery whose attempt failed back to its queue so that
// the broker counts a failed delivery: the wait grows with the count,
// and the delivery limit applies.
func Fail(d amqp.Delivery) error {
	return d.Reject(true) // requeue; on 4.3 a nack does not count
}
