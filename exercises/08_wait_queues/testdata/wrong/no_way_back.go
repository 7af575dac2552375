//go:build qlabex

// Wrong: the wait queue has its TTL but no dead-letter route: an expired
// message is dropped instead of going back to work.
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
	return amqp.Table{"x-message-ttl": ttl.Milliseconds()}
}
