//go:build qlabex

// Editor: this file builds with the qlabex tag; for gopls set "buildFlags": ["-tags=qlabex"].

package waitqueues

import (
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// WorkQueueArgs returns the arguments to declare a work queue with: a
// message the worker rejects (requeue false) is dead-lettered through
// the default exchange ("") with routing key wait, the wait queue's name.
func WorkQueueArgs(wait string) amqp.Table {
	// TODO: the two dead-letter arguments: "x-dead-letter-exchange" (the
	//       default exchange is "") and "x-dead-letter-routing-key".
	return amqp.Table{}
}

// WaitQueueArgs returns the arguments to declare a wait queue with: each
// message waits ttl in it, then is dead-lettered through the default
// exchange with routing key back, the work queue's name.
func WaitQueueArgs(ttl time.Duration, back string) amqp.Table {
	// TODO: "x-message-ttl" in milliseconds, as an integer (int64), and
	//       the same two dead-letter arguments, pointing back.
	_ = ttl
	return amqp.Table{}
}
