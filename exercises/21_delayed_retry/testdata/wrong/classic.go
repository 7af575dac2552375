//go:build qlabex

// Wrong: a classic queue: RabbitMQ 4.3 refuses x-delayed-retry-* on it (406, invalid arg for queue type rabbit_classic_queue).
// First failure: the broker accepts your arguments

package delayedretry

import (
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

func QueueArgs(min, max time.Duration, limit int, dlq string) amqp.Table {
	return amqp.Table{"x-delayed-retry-type": "failed", "x-delayed-retry-min": min.Milliseconds(), "x-delayed-retry-max": max.Milliseconds(), "x-delivery-limit": int64(limit), "x-dead-letter-exchange": "", "x-dead-letter-routing-key": dlq}
}

func Fail(d amqp.Delivery) error { return d.Reject(true) } // requeue
