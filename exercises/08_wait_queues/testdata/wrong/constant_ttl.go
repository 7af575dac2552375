//go:build qlabex

// Wrong: a TTL written as a constant passes one wait, not the other.
// First failure: the wait queue holds a message for the TTL, then sends it back

package waitqueues

import (
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

func WorkQueueArgs(wait string) amqp.Table {
	return amqp.Table{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": wait}
}

func WaitQueueArgs(ttl time.Duration, back string) amqp.Table {
	return amqp.Table{"x-message-ttl": int64(300), "x-dead-letter-exchange": "", "x-dead-letter-routing-key": back}
}
