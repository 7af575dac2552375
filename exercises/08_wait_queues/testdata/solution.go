//go:build qlabex

package waitqueues

import (
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// WorkQueueArgs returns the arguments to declare a work queue with: a
// message the worker rejects (requeue false) is dead-lettered through
// the default exchange ("") with routing key wait, the wait queue's name.
func WorkQueueArgs(wait string) amqp.Table {
	return amqp.Table{
		"x-dead-letter-exchange":    "", // the default exchange routes by queue name
		"x-dead-letter-routing-key": wait,
	}
}

// WaitQueueArgs returns the arguments to declare a wait queue with: each
// message waits ttl in it, then is dead-lettered through the default
// exchange with routing key back, the work queue's name.
func WaitQueueArgs(ttl time.Duration, back string) amqp.Table {
	return amqp.Table{
		"x-message-ttl":             ttl.Milliseconds(), // an int64: the broker refuses a float
		"x-dead-letter-exchange":    "",
		"x-dead-letter-routing-key": back,
	}
}
