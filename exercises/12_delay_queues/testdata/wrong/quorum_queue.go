//go:build qlabex

// Wrong: one retry queue again, made a quorum queue. On RabbitMQ 3.10.8 it
// expires messages at the head too (measured in lesson Q14).
// First failure: a short retry is not held up behind a long one

package delayqueues

import (
	"strconv"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

func RetryQueues(n Names, delays []time.Duration) map[string]amqp.Table {
	return map[string]amqp.Table{n.Retry: {"x-queue-type": "quorum", "x-dead-letter-exchange": "", "x-dead-letter-routing-key": n.WorkQueue}}
}

func RetryRoute(n Names, delays []time.Duration, retry int) (queue, expiration string) {
	return n.Retry, strconv.FormatInt(delays[min(max(retry, 1), len(delays))-1].Milliseconds(), 10)
}
