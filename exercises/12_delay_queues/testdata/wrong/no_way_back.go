//go:build qlabex

// Wrong: a queue per delay with its TTL, but no dead-letter route: an
// expired retry is dropped, never back at work.
// First failure: every retry comes back to the work queue

package delayqueues

import (
	"fmt"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

func RetryQueues(n Names, delays []time.Duration) map[string]amqp.Table {
	queues := map[string]amqp.Table{}
	for _, d := range delays {
		queues[fmt.Sprintf("%s.%d", n.Retry, d.Milliseconds())] = amqp.Table{"x-message-ttl": d.Milliseconds()}
	}
	return queues
}

func RetryRoute(n Names, delays []time.Duration, retry int) (queue, expiration string) {
	return fmt.Sprintf("%s.%d", n.Retry, delays[min(max(retry, 1), len(delays))-1].Milliseconds()), ""
}
