//go:build qlabex

// Wrong: the seed's design: one retry queue, the delay on each message.
// A short retry behind a long one waits for it.
// First failure: a short retry is not held up behind a long one

package delayqueues

import (
	"strconv"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

func RetryQueues(n Names, delays []time.Duration) map[string]amqp.Table {
	return map[string]amqp.Table{n.Retry: {"x-dead-letter-exchange": "", "x-dead-letter-routing-key": n.WorkQueue}}
}

func RetryRoute(n Names, delays []time.Duration, retry int) (queue, expiration string) {
	return n.Retry, strconv.FormatInt(delays[min(max(retry, 1), len(delays))-1].Milliseconds(), 10)
}
