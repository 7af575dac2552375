//go:build qlabex

package delayqueues

import (
	"fmt"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// RetryQueues returns the retry queues to declare, by name, with their
// arguments, for a schedule of delays (the wait before retry 1, 2, …).
// A message that has waited its time in one must go back to n.WorkQueue.
// Every name starts with n.Retry.
func RetryQueues(n Names, delays []time.Duration) map[string]amqp.Table {
	queues := map[string]amqp.Table{}
	for _, d := range delays { // a delay listed twice is one queue
		queues[queueFor(n, d)] = amqp.Table{
			"x-message-ttl":             d.Milliseconds(), // every message in it is due in the order it came
			"x-dead-letter-exchange":    "",
			"x-dead-letter-routing-key": n.WorkQueue,
		}
	}
	return queues
}

// RetryRoute returns where retry number retry (1-based) waits: the queue
// to publish it to, and the message's expiration ("" for none). Its wait
// is delays[retry-1], the last delay for every retry past the end.
func RetryRoute(n Names, delays []time.Duration, retry int) (queue, expiration string) {
	delay := delays[min(max(retry, 1), len(delays))-1]
	return queueFor(n, delay), "" // the queue's TTL is the wait
}

// queueFor names the wait queue of delay d: email-retry-queue.30000ms.
func queueFor(n Names, d time.Duration) string {
	return fmt.Sprintf("%s.%dms", n.Retry, d.Milliseconds())
}
