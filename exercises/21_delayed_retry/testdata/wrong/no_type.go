//go:build qlabex

// Wrong: the delays without x-delayed-retry-type: the broker takes them without a word and delays nothing (the type defaults to disabled).
// First failure: a failure waits min × x-delivery-count, never more than max, before it comes back

package delayedretry

import (
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

func QueueArgs(min, max time.Duration, limit int, dlq string) amqp.Table {
	return amqp.Table{"x-queue-type": "quorum", "x-delayed-retry-min": min.Milliseconds(), "x-delayed-retry-max": max.Milliseconds(), "x-delivery-limit": int64(limit), "x-dead-letter-exchange": "", "x-dead-letter-routing-key": dlq}
}

func Fail(d amqp.Delivery) error { return d.Reject(true) } // requeue
