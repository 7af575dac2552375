//go:build qlabex

// Wrong: type all delays a nack too, but only ever by the minimum: the count never grows, nor does the wait, and the limit is never reached.
// First failure: x-delivery-count grows by one with each failure

package delayedretry

import (
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

func QueueArgs(min, max time.Duration, limit int, dlq string) amqp.Table {
	return amqp.Table{"x-queue-type": "quorum", "x-delayed-retry-type": "all", "x-delayed-retry-min": min.Milliseconds(), "x-delayed-retry-max": max.Milliseconds(), "x-delivery-limit": int64(limit), "x-dead-letter-exchange": "", "x-dead-letter-routing-key": dlq}
}

func Fail(d amqp.Delivery) error { return d.Nack(false, true) } // multiple, requeue
