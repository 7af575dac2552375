//go:build qlabex

// Wrong: a queue per delay, but retry n goes to delay n+1's queue.
// First failure: each retry waits its own delay: the TTL of the queue it waited in

package delayqueues

import (
	"fmt"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

func RetryQueues(n Names, delays []time.Duration) map[string]amqp.Table {
	queues := map[string]amqp.Table{}
	for _, d := range delays {
		queues[fmt.Sprintf("%s.%d", n.Retry, d.Milliseconds())] = amqp.Table{
			"x-message-ttl": d.Milliseconds(), "x-dead-letter-exchange": "", "x-dead-letter-routing-key": n.WorkQueue}
	}
	return queues
}

func RetryRoute(n Names, delays []time.Duration, retry int) (queue, expiration string) {
	return fmt.Sprintf("%s.%d", n.Retry, delays[min(retry, len(delays)-1)].Milliseconds()), ""
}
