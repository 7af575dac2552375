//go:build qlabex

// Wrong: the seed's NACK: on 4.3 a basic.nack counts no failed delivery, so under type failed it comes straight back and never reaches the limit.
// First failure: x-delivery-count grows by one with each failure

package delayedretry

import (
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

func QueueArgs(min, max time.Duration, limit int, dlq string) amqp.Table {
	return amqp.Table{"x-queue-type": "quorum", "x-delayed-retry-type": "failed", "x-delayed-retry-min": min.Milliseconds(), "x-delayed-retry-max": max.Milliseconds(), "x-delivery-limit": int64(limit), "x-dead-letter-exchange": "", "x-dead-letter-routing-key": dlq}
}

func Fail(d amqp.Delivery) error { return d.Nack(false, true) } // multiple, requeue
