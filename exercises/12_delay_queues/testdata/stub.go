//go:build qlabex

// Editor: this file builds with the qlabex tag; for gopls set "buildFlags": ["-tags=qlabex"].

package delayqueues

import (
	"strconv"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// RetryQueues returns the retry queues to declare, by name, with their
// arguments, for a schedule of delays (the wait before retry 1, 2, …).
// A message that has waited its time in one must go back to n.WorkQueue.
// Every name starts with n.Retry.
func RetryQueues(n Names, delays []time.Duration) map[string]amqp.Table {
	// TODO: the seed's one retry queue holds a 30 s retry behind a 5 min
	//       one. Give each distinct delay a queue of its own, whose
	//       x-message-ttl is that delay (in ms, an int64).
	return map[string]amqp.Table{
		n.Retry: {"x-dead-letter-exchange": "", "x-dead-letter-routing-key": n.WorkQueue},
	}
}

// RetryRoute returns where retry number retry (1-based) waits: the queue
// to publish it to, and the message's expiration ("" for none). Its wait
// is delays[retry-1], the last delay for every retry past the end.
func RetryRoute(n Names, delays []time.Duration, retry int) (queue, expiration string) {
	delay := delays[min(max(retry, 1), len(delays))-1]
	// TODO: the queue of this delay, and no expiration of its own.
	return n.Retry, strconv.FormatInt(delay.Milliseconds(), 10)
}
