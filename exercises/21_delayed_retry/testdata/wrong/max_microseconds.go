//go:build qlabex

// Wrong: the maximum in microseconds is a thousand times too long: the
// wait never reaches it, so it goes on growing past the 400 ms the second
// schedule allows.
// First failure: a failure waits min × x-delivery-count, never more than max, before it comes back

package delayedretry

import (
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

func QueueArgs(min, max time.Duration, limit int, dlq string) amqp.Table {
	return amqp.Table{"x-queue-type": "quorum", "x-delayed-retry-type": "failed",
		"x-delayed-retry-min": min.Milliseconds(), "x-delayed-retry-max": max.Microseconds(),
		"x-delivery-limit": int64(limit), "x-dead-letter-exchange": "", "x-dead-letter-routing-key": dlq}
}

func Fail(d amqp.Delivery) error { return d.Reject(true) } // requeue
