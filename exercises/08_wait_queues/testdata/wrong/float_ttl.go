//go:build qlabex

// Wrong: the TTL as a float of seconds; the broker refuses it (406).
// First failure: the broker accepts your arguments

package waitqueues

import (
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

func WorkQueueArgs(wait string) amqp.Table {
	return amqp.Table{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": wait}
}

func WaitQueueArgs(ttl time.Duration, back string) amqp.Table {
	return amqp.Table{"x-message-ttl": ttl.Seconds(), "x-dead-letter-exchange": "", "x-dead-letter-routing-key": back}
}
